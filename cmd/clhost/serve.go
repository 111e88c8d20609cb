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
	fs.Var(&models, "m", "model file (.clm, .json, .onnx, or an OpenVINO IR .xml with its .bin beside it) to serve, named after the file without its extension (repeatable)")
	weights := fs.String("weights", "", "the weights `file` of the one -m OpenVINO IR (default: the .bin beside the .xml; a --models folder's IRs take theirs beside them)")
	fs.Var(&configs, "c", "custom-layer configuration XML for every model (repeatable)")
	repo := fs.String("models", "", "model folder: each model file in it or in a folder directly inside it is a model, with the XML configurations of its folder")
	precision := addPrecisionFlag(fs)
	devices := fs.String("d", "", "devices: all, or a list such as gpu:0,gpu:1,cpu (cpu, gpu, cpu:N, gpu:N, an index from 'clhost devices' or part of a name); default: every GPU, else the first CPU")
	httpAddr := fs.String("http", ":8000", "HTTP/REST address (\"off\" for none)")
	grpcAddr := fs.String("grpc", ":8001", "gRPC address (\"off\" for none)")
	maxBatch := fs.Int("max-batch", serve.DefaultMaxBatch, "most items (rows of the batch dimension) one batch holds")
	maxDelay := fs.Duration("max-delay", serve.DefaultMaxDelay, "how long a batch that is not full waits for requests still arriving")
	sizes := fs.String("batch-sizes", "", "batch sizes compiled per device, comma-separated (default: 1, the powers of 4 below -max-batch, and -max-batch)")
	maxBody := fs.String("max-body", "64MiB", "largest request (bytes, or with KiB, MiB, GiB): larger bodies get 413")
	maxInflight := fs.String("max-inflight-bytes", "", "memory all requests in flight may hold together, bodies, decoded inputs and outputs (bytes, or with KiB, MiB, GiB): beyond it requests get 429 (default: a quarter of the machine's or the container's memory, at least 256MiB)")
	readTimeout := fs.Duration("read-timeout", serve.DefaultReadTimeout, "how long a client may take to send a request's body, and to take its answer")
	idleTimeout := fs.Duration("idle-timeout", serve.DefaultIdleTimeout, "close a connection idle that long")
	maxConns := fs.Int("max-connections", serve.DefaultMaxConnections, "most connections open at once on each of -http and -grpc; more wait to be accepted")
	strict := fs.Bool("strict", false, "refuse to start when any model fails to load, naming each (default: serve the models that load; each broken one answers not ready, with its error)")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long accepted requests may take to complete: the process exits by then, whatever its clients do")
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
	var inflight int64
	if *maxInflight != "" {
		if inflight, err = parseBytes(*maxInflight); err != nil {
			return usagef("-max-inflight-bytes %q: %v", *maxInflight, err)
		}
	}
	if *readTimeout <= 0 || *idleTimeout <= 0 || *drain <= 0 {
		return usagef("-read-timeout, -idle-timeout and -drain-timeout must be positive")
	}
	if *maxConns < 1 {
		return usagef("-max-connections %d: must be at least 1", *maxConns)
	}
	if *weights != "" {
		// One weights file cannot belong to several models; a format without weights
		// would only fail to load later, while the server starts without it.
		if len(models) != 1 {
			return usagef("--weights names the .bin of one OpenVINO IR: give it with exactly one -m (%d given)", len(models))
		}
		if host.ModelFormat(models[0]) != host.FormatIR {
			return usagef("--weights %s: -m %s is not an OpenVINO IR (.xml); only an IR takes a weights file", *weights, models[0])
		}
	}
	var sources []serve.Source
	for _, m := range models {
		sources = append(sources, serve.IRSource(m, *weights, configs))
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
		Engine:   host.Options{CacheDir: *cacheDir, Precision: precision.p},
		MaxBatch: *maxBatch, MaxDelay: *maxDelay, BatchSizes: batchSizes,
		MaxBodyBytes: body, Version: version, Log: os.Stderr,
		SharedMemory:     *allowShm,
		MaxInflightBytes: inflight, ReadTimeout: *readTimeout, IdleTimeout: *idleTimeout,
		MaxConnections: *maxConns, Strict: *strict,
		IsolatedCheck: isolatedCheck(*cacheDir, precision.p),
	}
	if *maxDelay == 0 {
		opts.MaxDelay = -1 // no wait: serve.Options takes 0 as the default
	}
	// The addresses are taken before any model is compiled: a port in use is
	// reported at once, not after minutes of compiling.
	hl, err := listen("http", *httpAddr)
	if err != nil {
		return err
	}
	gl, err := listen("grpc", *grpcAddr)
	if err != nil {
		closeListener(hl)
		return err
	}
	if hl == nil && gl == nil {
		return usagef("both -http and -grpc are off")
	}
	pl, err := listen("pprof", *pprofAddr)
	if err != nil {
		closeListener(hl)
		closeListener(gl)
		return err
	}
	if pl != nil {
		defer pl.Close()
	}
	// Signals are caught from here on, so that a SIGTERM during the compile stops
	// cleanly too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := serve.New(sources, opts)
	if err != nil {
		closeListener(hl)
		closeListener(gl)
		return err
	}
	devLines, modelLines := s.Describe()
	for i, d := range devLines {
		fmt.Printf("device %s: %s (%s, driver %s)\n", d, devs[i].Name, devs[i].Platform.Name, devs[i].DriverVersion)
	}
	for _, m := range modelLines {
		fmt.Printf("model %s\n", m)
	}
	if hl != nil {
		fmt.Printf("listening http %s\n", hl.Addr())
	}
	if gl != nil {
		fmt.Printf("listening grpc %s\n", gl.Addr())
	}
	if pl != nil {
		fmt.Printf("listening pprof %s\n", pl.Addr())
		go servePprof(pl)
	}
	err = s.Serve(ctx, hl, gl, *drain)
	var cut *serve.DrainError
	if errors.As(err, &cut) {
		// The requests cut may still be running on a device: the process leaves
		// rather than wait for them past the drain timeout.
		return fmt.Errorf("serving: %w", err)
	}
	// Nothing is in flight: the batchers and workers stop and the engines close at
	// once, unless a device still runs a kernel that never finished, which the
	// process does not wait for either.
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(closeTimeout):
		fmt.Fprintln(os.Stderr, "clhost serve: the engines did not close in time; exiting without them")
	}
	if err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	fmt.Fprintln(os.Stderr, "clhost serve: drained, every accepted request answered")
	return nil
}

// closeTimeout bounds closing the server after a clean drain, within the second that
// --drain-timeout allows beyond itself.
const closeTimeout = 500 * time.Millisecond

func closeListener(l net.Listener) {
	if l != nil {
		l.Close()
	}
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
