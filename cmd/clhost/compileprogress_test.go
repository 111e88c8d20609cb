package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompileProgressLines: past the delay, a terminal gets one line rewritten with \r
// and a closing line; other output gets plain lines, each phase's end among them; a
// compile done within the delay prints nothing.
func TestCompileProgressLines(t *testing.T) {
	defer func(d time.Duration) { progressDelay = d }(progressDelay)
	progressDelay = 0
	var b strings.Builder
	p := newCompileProgress(&b, false)
	for i := 0; i <= 3; i++ {
		p.update(i, 3, "programs")
	}
	p.finish()
	got := b.String()
	if !strings.HasPrefix(got, "clhost: compiling 0/3 programs\n") || !strings.Contains(got, "clhost: compiling 3/3 programs\n") ||
		!strings.Contains(got, "clhost: compiled in ") || strings.Contains(got, "\r") {
		t.Errorf("plain output:\n%q", got)
	}
	b.Reset()
	p = newCompileProgress(&b, true)
	p.update(0, 2, "layers tuned")
	p.update(2, 2, "layers tuned")
	p.finish()
	if got := b.String(); !strings.Contains(got, "\r\033[Kclhost: tuning 2/2 layers") || strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, " s\n") {
		t.Errorf("terminal output:\n%q", got)
	}
	progressDelay = time.Hour
	b.Reset()
	p = newCompileProgress(&b, false)
	p.update(0, 1, "programs")
	p.update(1, 1, "programs")
	p.finish()
	if b.Len() != 0 {
		t.Errorf("a fast compile printed %q", b.String())
	}
}

// TestRunShowsProgressUnlessQuiet: `clhost run` reports its compile on stderr once it
// takes longer than the delay, and --quiet silences it.
func TestRunShowsProgressUnlessQuiet(t *testing.T) {
	defer func(d time.Duration) { progressDelay = d }(progressDelay)
	progressDelay = 0
	dir := t.TempDir()
	run := func(extra ...string) string {
		args := append([]string{"run", "-m", "../../internal/onnx/testdata/activations.onnx", "-d", "cpu", "-o", filepath.Join(dir, "out"), "--cache-dir", dir}, extra...)
		var code int
		out := captureStderr(t, func() { code = runMain(args) })
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, out)
		}
		return out
	}
	if out := run(); !strings.Contains(out, "clhost: compiling 0/") || !strings.Contains(out, "clhost: compiled in") {
		t.Errorf("no progress on stderr:\n%s", out)
	}
	if out := run("--quiet"); strings.Contains(out, "compil") {
		t.Errorf("--quiet still shows progress:\n%s", out)
	}
}

// TestFirstRunArgs: the child of --first-run gets the engine flags given, every -c, and
// none of the flags that name files or the cache.
func TestFirstRunArgs(t *testing.T) {
	fs, f := newBenchFlags()
	err := parseFlags(fs, []string{"-m", "m.onnx", "-d", "cpu", "-c", "a.xml", "-c", "b.xml", "--cache-dir", "x", "--batch", "2",
		"-n", "5", "--dump-kernels", "k", "--quiet", "--tune=false", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(firstRunArgs(fs, &f.ef), " ")
	if want := "-batch=2 -c a.xml -c b.xml -d=cpu -m=m.onnx -tune=false"; got != want {
		t.Errorf("child flags %q, want %q", got, want)
	}
}
