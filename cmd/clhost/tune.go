package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/host/cachedir"
)

func init() {
	register(command{name: "tune", summary: "time the kernel plans of a model once and store the fastest, and the program binaries, in the cache for later runs (-tune=false: the binaries alone)", run: runTune})
}

// runTune compiles the model with tuning on (with -tune=false, off), so the choices land
// in the cache folder where later runs (without --tune) take them, and stores the
// program binaries, also on PoCL, where a run stores none by default; one inference then
// has the driver compile every kernel for its launch size into its own cache.
func runTune(args []string) error {
	fs := newFlagSet("tune")
	var ef engineFlags
	addEngineFlags(fs, &ef)
	table := fs.String("table", "", "also merge the choices into this tuning table (keyed without the driver version), for shipping in host/tuning")
	seed := fs.Int64("seed", 1, "seed of the random inputs of the inference")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *ef.cacheDir == "" {
		return usagef("-cache-dir \"\": tune stores its choices in the cache folder")
	}
	if ef.tune.set && !ef.tune.on {
		// Binaries only: on PoCL a warm start then loads them instead of asking PoCL's
		// cache for every program.
		ef.tune = &autoBool{}
	} else {
		ef.tune = &autoBool{set: true, on: true}
	}
	before, err := cachedir.ReadStats(*ef.cacheDir)
	if err != nil {
		return err
	}
	start := time.Now()
	e, n, err := ef.openWith(host.Options{Binaries: host.On})
	if err != nil {
		return err
	}
	defer e.Close()
	stop := ef.firstInferenceNote()
	_, err = n.Infer(context.Background(), randomInputs(n, *seed))
	stop()
	if err != nil {
		return err
	}
	if *table != "" {
		if err := e.WriteTuningTable(*table); err != nil {
			return err
		}
	}
	after, err := cachedir.ReadStats(*ef.cacheDir)
	if err != nil {
		return err
	}
	fmt.Printf("tuned %s on %s in %.1f s\n", *ef.model, e.Device().Name, time.Since(start).Seconds())
	fmt.Printf("  %s: %d choices (%d new), %d program binaries (%d new)\n", filepath.Join(*ef.cacheDir, cachedir.TuningFile),
		after.TuningChoices, after.TuningChoices-before.TuningChoices, after.Programs, after.Programs-before.Programs)
	if *table != "" {
		fmt.Printf("  table %s updated\n", *table)
	}
	fmt.Fprintln(os.Stderr, "clhost: later runs of the model on this device take these choices without --tune")
	return nil
}
