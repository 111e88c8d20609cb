package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/clhost/clhost/serve/loadgen"
)

// remoteFlags are bench's flags for timing a server (clhost serve, or any server of the
// Open Inference Protocol) instead of a local network.
type remoteFlags struct {
	url         *string
	concurrency *int
	shm         *bool
}

func addRemoteFlags(fs *flag.FlagSet) remoteFlags {
	return remoteFlags{
		url:         fs.String("url", "", "time a server of the Open Inference Protocol at this URL (http://HOST:PORT) instead of a local network: -m names the model, -n counts requests, -batch sets the items per request"),
		concurrency: fs.Int("concurrency", 1, "with -url: clients sending requests at once, each as soon as its previous answer arrived"),
		shm:         fs.Bool("shm", false, "with -url: each client's inputs and outputs in a POSIX shared-memory region of its own, registered with the server (the system shared-memory extension; the server runs on this host, clhost serve with -allow-shm)"),
	}
}

// runRemoteBench times the server at -url with loadgen: -n requests of random inputs
// from -concurrency clients, reported as throughput and latency percentiles.
func runRemoteBench(f *benchFlags) error {
	base := strings.TrimRight(*f.remote.url, "/")
	c := *f.remote.concurrency
	if c < 1 {
		return usagef("-concurrency %d: must be at least 1", c)
	}
	name := *f.ef.model
	if name == "" {
		return usagef("-url needs -m MODEL: the name of the served model (a model file's path names it too)")
	}
	name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	batch := max(*f.ef.batch, 1)
	g, err := loadgen.New(loadgen.Options{URL: base, Model: name, Batch: batch, Concurrency: c, Seed: *f.seed, SharedMemory: *f.remote.shm})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := g.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "clhost: removing the shared-memory regions: %v\n", cerr)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := g.Warmup(ctx, *f.warmup); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "clhost: timing %d requests from %d clients (Ctrl-C stops early and reports what ran)\n", *f.n, c)
	res, err := g.Run(ctx, *f.n)
	if err != nil {
		return err
	}
	if *f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		how := ""
		if *f.remote.shm {
			how = ", tensors in shared memory"
		}
		fmt.Printf("model %s at %s, concurrency %d, batch %d per request%s\n", name, base, c, batch, how)
		fmt.Printf("%d requests in %.2f s: %.1f requests/s (%.1f items/s), %d errors\n", res.Requests, res.WallS, res.ThroughputRPS, res.ItemsPerS, res.Errors)
		fmt.Printf("latency ms (client to client): mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  min %.3f  max %.3f\n", res.MeanMs, res.P50Ms, res.P90Ms, res.P99Ms, res.MinMs, res.MaxMs)
	}
	if res.FirstError != nil {
		return fmt.Errorf("%d of %d requests failed, the first: %w", res.Errors, res.Errors+res.Requests, res.FirstError)
	}
	return nil
}
