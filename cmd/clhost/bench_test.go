package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clhost/clhost/host"
)

// TestMain lets a test run this test binary as the clhost command itself
// (CLHOST_AS_MAIN=1), to send it signals as a user's terminal would. The engine's compile
// workers start this binary too (os.Executable, as the command does): with the hidden
// compile-worker command it is one.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CLHOST_TEST_STDERR"); mode != "" {
		os.Exit(stderrChild(mode))
	}
	if os.Getenv("CLHOST_AS_MAIN") == "1" || len(os.Args) == 3 && os.Args[1] == compileWorkerCommand {
		os.Exit(runCommand(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestBenchStopsCleanlyOnInterrupt: Ctrl-C during `clhost bench` ends the run with the
// results measured so far and exit status 0, not a stack trace.
func TestBenchStopsCleanlyOnInterrupt(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "bench", "-m", dynamicONNX, "-d", "cpu", "-n", "100000000", "--warmup", "1", "--layers=false", "--tune=false", "--cache-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it is timing inferences (a cold program build may take a while), then
	// interrupt it.
	timing := make(chan struct{})
	var stderr strings.Builder
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(errPipe)
		said := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "timing ") {
				said = true
				close(timing)
			}
		}
	}()
	select {
	case <-timing:
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("bench never started timing")
	}
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		<-readerDone // all of stderr is read before Wait closes the pipe
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench exited with %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("bench did not stop within 30 s of the interrupt")
	}
	if !strings.Contains(stdout.String(), "interrupted:") || !strings.Contains(stdout.String(), "latency ms") {
		t.Errorf("no partial results after the interrupt:\n%s", stdout.String())
	}
	if strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("stack trace on stderr:\n%s", stderr.String())
	}
}

// TestMedianProfile: each layer reports its median device time over the profiled runs,
// with the last run's timeline, and a layer missing from a run is skipped there.
func TestMedianProfile(t *testing.T) {
	run := func(a, b uint64, start uint64) []host.LayerTime {
		return []host.LayerTime{{Layer: "a", DeviceNs: a, StartNs: start}, {Layer: "b", DeviceNs: b, StartNs: start + 1}}
	}
	got := medianProfile([][]host.LayerTime{run(5, 90, 0), run(1, 10, 0), run(3, 30, 7), {{Layer: "x", DeviceNs: 1}}, run(100, 20, 9)})
	if len(got) != 2 || got[0].DeviceNs != 5 || got[1].DeviceNs != 30 || got[0].StartNs != 9 || got[1].StartNs != 10 {
		t.Fatalf("medianProfile = %+v, want a 5 ns and b 30 ns at the last run's start 9", got)
	}
	if medianProfile(nil) != nil {
		t.Fatal("no runs: want nil")
	}
}

// TestBenchAgainst: --against times a second engine in alternation and reports its
// latencies and the pairs won; timing flags or malformed flags there are usage errors.
func TestBenchAgainst(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	bench := func(against ...string) (int, string, string) {
		args := []string{"bench", "-m", dynamicONNX, "-d", "cpu", "-n", "5", "--warmup", "1", "--layers=false", "--json", "--first-run=false", "--cache-dir", cache}
		args = append(args, against...)
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := bench("--against", "--queue=in-order --tune=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a := res.Against
	if a == nil || a.Flags != "--queue=in-order --tune=false" || a.Pairs != 5 || a.FasterPairs < 0 || a.FasterPairs > 5 || a.P50Ms <= 0 || a.MinMs > a.P50Ms {
		t.Fatalf("against = %+v, want 5 pairs of the second engine's flags", a)
	}
	for _, c := range []struct{ against, want string }{
		{"--nope", "flag provided but not defined: -nope"},
		{"-n 3", "engine flags only"},
		{"extra", "engine flags only"},
	} {
		code, _, errOut := bench("--against", c.against)
		if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "-against") {
			t.Errorf("--against %q: exit %d, stderr %q; want exit 2 naming -against and %q", c.against, code, errOut, c.want)
		}
	}
}
