package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTuneCacheInfoClear: `clhost tune` stores the model's program binaries (also on
// PoCL; with -tune=false those alone) and a second one finds them, `cache info` counts
// them, a damaged entry and a damaged tuning.json cost a run a
// note and a rebuild, never the run, and `cache clear` empties the folder of clhost's
// files only.
func TestTuneCacheInfoClear(t *testing.T) {
	cache := t.TempDir()
	model := "../../internal/onnx/testdata/activations.onnx"
	clhost := func(args ...string) (string, string) {
		t.Helper()
		var code int
		var stdout string
		stderr := captureStderr(t, func() {
			stdout = captureStdout(t, func() { code = runMain(args) })
		})
		if code != 0 {
			t.Fatalf("clhost %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout, stderr
	}
	out, _ := clhost("tune", "-m", model, "-d", "cpu", "--cache-dir", cache, "--quiet", "--tune=false")
	bins, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	if len(bins) == 0 || !strings.Contains(out, "program binaries ("+strconv.Itoa(len(bins))+" new)") {
		t.Fatalf("tune stored %d binaries:\n%s", len(bins), out)
	}
	if out, _ = clhost("tune", "-m", model, "-d", "cpu", "--cache-dir", cache, "--quiet"); !strings.Contains(out, "(0 new)") {
		t.Errorf("a second tune stored new entries:\n%s", out)
	}
	if out, _ = clhost("cache", "info", "--cache-dir", cache); !strings.Contains(out, "program binaries: "+strconv.Itoa(len(bins))+" (") ||
		!strings.Contains(out, "PoCL's kernel cache") {
		t.Errorf("cache info:\n%s", out)
	}
	b, err := os.ReadFile(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bins[0], b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "tuning.json"), []byte("{\"a\": "), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut := clhost("run", "-m", model, "-d", "cpu", "--cache-dir", cache, "-o", filepath.Join(cache, "out"), "--quiet")
	if !strings.Contains(errOut, bins[0]+" is damaged") || !strings.Contains(errOut, "tuning.json is damaged") {
		t.Errorf("no notes of the damaged entries:\n%s", errOut)
	}
	if err := os.WriteFile(filepath.Join(cache, "keep.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	clhost("cache", "clear", "--cache-dir", cache)
	left, _ := filepath.Glob(filepath.Join(cache, "*.*"))
	if len(left) != 1 || filepath.Base(left[0]) != "keep.txt" {
		t.Errorf("after clear: %v, want keep.txt alone", left)
	}
	if code := runMain([]string{"cache", "nope"}); code != 2 {
		t.Errorf("cache nope: exit %d, want 2", code)
	}
}

// TestBenchFirstRun: bench --json times a whole first run in a child with empty caches,
// reported beside the warm compile.
func TestBenchFirstRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "bench", "-m", dynamicONNX, "-d", "cpu", "-n", "2", "--warmup", "0", "--layers=false", "--json", "--cache-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var res benchResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.FirstRunMs <= 0 || res.CompileMs <= 0 {
		t.Errorf("first_run_ms %v, compile_ms %v: want both", res.FirstRunMs, res.CompileMs)
	}
}

// TestRunCompilesInWorkers: on PoCL with a cold cache, `clhost run` compiles its built-in
// layers in worker processes of its own binary (the hidden compile-worker command), every
// layer's in them, and the run still writes its output.
func TestRunCompilesInWorkers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	// A PoCL cache of its own, so that the programs are not there from other tests.
	cmd := exec.Command(self, "run", "-m", dynamicONNX, "-d", "cpu", "-o", outDir, "--cache-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1", "CLHOST_COMPILE_WORKERS=2", "POCL_CACHE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "Portable Computing Language") && !strings.Contains(string(out), "pthread") {
		t.Fatalf("-d cpu is not PoCL (install pocl-opencl-icd):\n%s", out)
	}
	m := regexp.MustCompile(`compiled (\d+) of (\d+) layers' kernels in 2 worker processes`).FindStringSubmatch(string(out))
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Fatalf("want every layer compiled in 2 worker processes:\n%s", out)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) == 0 {
		t.Errorf("no outputs written:\n%s", out)
	}
}
