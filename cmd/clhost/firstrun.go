package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// measureFirstRun times what a user's first `clhost run` of the model costs: this
// executable runs the model once with the engine flags fs was given, in a child process
// whose caches are empty temporary folders (clhost's programs and tuning choices, PoCL's
// kernels, NVIDIA's compiled kernels), so that nothing compiled before helps it.
func measureFirstRun(fs *flag.FlagSet, ef *engineFlags) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("first run: %w", err)
	}
	tmp, err := os.MkdirTemp("", "clhost-first-run-")
	if err != nil {
		return 0, fmt.Errorf("first run: %w", err)
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"run"}, firstRunArgs(fs, ef)...)
	args = append(args, "-cache-dir", filepath.Join(tmp, "clhost"), "-o", filepath.Join(tmp, "out"), "-quiet")
	cmd := exec.Command(self, args...)
	// CLHOST_AS_MAIN makes a test binary act as the command (bench_test.go's TestMain).
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1",
		"POCL_CACHE_DIR="+filepath.Join(tmp, "pocl"), "XDG_CACHE_HOME="+filepath.Join(tmp, "xdg"),
		"CUDA_CACHE_PATH="+filepath.Join(tmp, "nv"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("first run (clhost %s): %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return time.Since(start), nil
}

// firstRunArgs are the engine flags given on the command line, less those that write
// files or name the cache (the child has its own).
func firstRunArgs(fs *flag.FlagSet, ef *engineFlags) []string {
	engine := flag.NewFlagSet("", flag.ContinueOnError)
	addEngineFlags(engine, &engineFlags{})
	var args []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case engine.Lookup(f.Name) == nil:
		case f.Name == "cache-dir", f.Name == "dump-kernels", f.Name == "dump-tensors", f.Name == "quiet":
		case f.Name == "c":
			for _, c := range ef.configs {
				args = append(args, "-c", c)
			}
		default:
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	return args
}
