package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/serve"
)

func init() {
	register(command{name: "serve", summary: "serve models over the Open Inference Protocol (KServe V2): HTTP and gRPC, every device, dynamic batching", run: runServe})
}

func runServe(args []string) error {
	fs := newFlagSet("serve")
	var models, configs stringList
	fs.Var(&models, "m", "model file (.clm, .json or .onnx) to serve, named after the file without its extension (repeatable)")
	fs.Var(&configs, "c", "custom-layer configuration XML for every model (repeatable)")
	repo := fs.String("models", "", "model folder: each model file in it or in a folder directly inside it is a model, with the XML configurations of its folder")
	devices := fs.String("d", "", "devices: all, or a list such as gpu:0,gpu:1,cpu (cpu, gpu, cpu:N, gpu:N, an index from 'clhost devices' or part of a name); default: every GPU, else the first CPU")
	httpAddr := fs.String("http", ":8000", "HTTP/REST address (\"off\" for none)")
	grpcAddr := fs.String("grpc", ":8001", "gRPC address (\"off\" for none)")
	maxBatch := fs.Int("max-batch", serve.DefaultMaxBatch, "most items (rows of the batch dimension) one batch holds")
	maxDelay := fs.Duration("max-delay", serve.DefaultMaxDelay, "how long a batch that is not full waits for requests still arriving")
	sizes := fs.String("batch-sizes", "", "batch sizes compiled per device, comma-separated (default: 1, the powers of 4 below -max-batch, and -max-batch)")
	maxBody := fs.String("max-body", "64MiB", "largest request (bytes, or with KiB, MiB, GiB): larger bodies get 413")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long accepted requests may take to complete")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "program binary cache folder (\"\" to disable)")
	allowShm := fs.Bool("allow-shm", false, "let clients on this host register POSIX shared-memory regions (/dev/shm) and pass tensors through them (the system shared-memory extension); only where every client that reaches the server may read and write this host's shared memory")
	pprofAddr := fs.String("pprof", "off", "address of Go's profiler (/debug/pprof/), to see where the server spends its time (\"off\" for none; keep it off public interfaces)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if len(models) == 0 && *repo == "" {
		return usagef("give models with -m MODEL or --models DIR")
	}
	body, err := parseBytes(*maxBody)
	if err != nil {
		return usagef("-max-body %q: %v", *maxBody, err)
	}
	batchSizes, err := parseSizes(*sizes)
	if err != nil {
		return usagef("-batch-sizes %q: %v", *sizes, err)
	}
	if *maxBatch < 1 {
		return usagef("-max-batch %d: must be at least 1", *maxBatch)
	}
	var sources []serve.Source
	for _, m := range models {
		sources = append(sources, serve.FileSource(m, configs))
	}
	if *repo != "" {
		more, err := serve.DirSources(*repo, configs)
		if err != nil {
			return err
		}
		sources = append(sources, more...)
	}
	all, err := serve.AllDevices()
	if err != nil {
		return err
	}
	spec := *devices
	if spec == "" {
		spec = serve.DefaultDevices(all)
	}
	devs, labels, err := serve.SelectDevices(all, spec)
	if err != nil {
		return usagef("-d %q: %v", spec, err)
	}
	opts := serve.Options{
		Devices: devs, DeviceNames: labels,
		Engine:   host.Options{CacheDir: *cacheDir},
		MaxBatch: *maxBatch, MaxDelay: *maxDelay, BatchSizes: batchSizes,
		MaxBodyBytes: body, Version: version, Log: os.Stderr,
		SharedMemory: *allowShm,
	}
	if *maxDelay == 0 {
		opts.MaxDelay = -1 // no wait: serve.Options takes 0 as the default
	}
	// Signals are caught from here on, so that a SIGTERM during the compile stops
	// cleanly too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := serve.New(sources, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	devLines, modelLines := s.Describe()
	for i, d := range devLines {
		fmt.Printf("device %s: %s (%s, driver %s)\n", d, devs[i].Name, devs[i].Platform.Name, devs[i].DriverVersion)
	}
	for _, m := range modelLines {
		fmt.Printf("model %s\n", m)
	}
	hl, err := listen("http", *httpAddr)
	if err != nil {
		return err
	}
	gl, err := listen("grpc", *grpcAddr)
	if err != nil {
		if hl != nil {
			hl.Close()
		}
		return err
	}
	if hl != nil {
		fmt.Printf("listening http %s\n", hl.Addr())
	}
	if gl != nil {
		fmt.Printf("listening grpc %s\n", gl.Addr())
	}
	if hl == nil && gl == nil {
		return usagef("both -http and -grpc are off")
	}
	pl, err := listen("pprof", *pprofAddr)
	if err != nil {
		return err
	}
	if pl != nil {
		fmt.Printf("listening pprof %s\n", pl.Addr())
		go servePprof(pl)
		defer pl.Close()
	}
	if err := s.Serve(ctx, hl, gl, *drain); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	fmt.Fprintln(os.Stderr, "clhost serve: drained, every accepted request answered")
	return nil
}

// servePprof serves Go's profiler endpoints on a listener of their own, apart from the
// inference API's mux, so that they are reachable only where the user asked.
func servePprof(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(l) // ends when the listener is closed
}

func listen(what, addr string) (net.Listener, error) {
	if addr == "" || addr == "off" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-%s %s: %w", what, addr, err)
	}
	return l, nil
}

// parseBytes reads a size: bytes, or a number with KiB, MiB or GiB.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive number of bytes, KiB, MiB or GiB")
	}
	return n * mult, nil
}

// parseSizes reads a comma-separated list of batch sizes; "" is none.
func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a batch size of 1 or more", f)
		}
		out = append(out, n)
	}
	return out, nil
}
