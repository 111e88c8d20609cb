package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/host/conformance"
)

// TestConformanceVerdicts runs three ONNX backend test folders (the passing test_relu, a
// copy whose expected output was altered, and test_det_2d, whose op clhost lacks) through
// `clhost conformance`, each in a child process, and checks every verdict; with a time
// limit too short for any test, each counts as a crash and the run still ends.
func TestConformanceVerdicts(t *testing.T) {
	t.Setenv("CLHOST_AS_MAIN", "1") // the children are this test binary acting as clhost
	dir := filepath.Join("..", "..", "host", "conformance", "testdata")
	run := func(extra ...string) map[string]conformance.Result {
		t.Helper()
		out := filepath.Join(t.TempDir(), "verdicts.json")
		args := append([]string{"conformance", "-json", out}, extra...)
		if code := runMain(append(args, dir)); code != 0 {
			t.Fatalf("clhost %s: exit status %d", strings.Join(args, " "), code)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rs []conformance.Result
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		got := map[string]conformance.Result{}
		for _, r := range rs {
			got[filepath.Base(r.Test)] = r
		}
		return got
	}
	got := run()
	for test, want := range map[string]string{"test_relu": conformance.Pass, "test_relu_wrong": conformance.Wrong, "test_det_2d": conformance.Refused} {
		r := got[test]
		if r.Verdict != want {
			t.Errorf("%s: verdict %q (%s), want %q", test, r.Verdict, r.Message, want)
		}
	}
	if r := got["test_relu_wrong"]; !strings.Contains(r.Message, "1 of 60 values differ") {
		t.Errorf("test_relu_wrong: message %q, want it to count the one altered value", r.Message)
	}
	if r := got["test_det_2d"]; !strings.Contains(r.Message, `"Det"`) || len(r.Ops) != 1 || r.Ops[0] != "Det" {
		t.Errorf("test_det_2d: message %q, ops %v: want the op named", r.Message, r.Ops)
	}
	for test, r := range run("-timeout", "1ns") {
		if r.Verdict != conformance.Crash {
			t.Errorf("-timeout 1ns: %s: verdict %q, want %q", test, r.Verdict, conformance.Crash)
		}
	}
}

// TestConformanceExpectPass: with -expect-pass, a run fails when a listed test does not
// pass or any test is wrong (test_relu_wrong is), and names them; a list the run meets,
// over a folder of passing tests only, succeeds and says so.
func TestConformanceExpectPass(t *testing.T) {
	t.Setenv("CLHOST_AS_MAIN", "1")
	dir := filepath.Join("..", "..", "host", "conformance", "testdata")
	list := filepath.Join(t.TempDir(), "pass.txt")
	if err := os.WriteFile(list, []byte("# passing tests\ntest_relu\ntest_det_2d # refused: must fail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var code int
	errOut := captureStderr(t, func() {
		code = runMain([]string{"conformance", "-expect-pass", list, dir})
	})
	if code == 0 || !strings.Contains(errOut, "test_det_2d: refused") || !strings.Contains(errOut, "test_relu_wrong: wrong") {
		t.Errorf("listed test refused and a wrong one: exit %d, stderr %q; want a failure naming both", code, errOut)
	}
	if err := os.WriteFile(list, []byte("test_relu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var outText string
	errOut = captureStderr(t, func() {
		outText = capture(t, &os.Stdout, func() {
			code = runMain([]string{"conformance", "-expect-pass", list, filepath.Join(dir, "test_relu")})
		})
	})
	if code != 0 || !strings.Contains(outText, "every test") {
		t.Errorf("a list the run meets: exit %d, stdout %q, stderr %q", code, outText, errOut)
	}
}

// TestConformanceTablePrint checks the table's rows and its closing line for a run in
// which a float test is blocked by another op type (conformance.Count's tests say how).
func TestConformanceTablePrint(t *testing.T) {
	results := []conformance.Result{
		{Test: "range_expanded", Verdict: conformance.Refused, Float: true, Ops: []string{"Ceil", "Loop"},
			Message: `model.onnx: node 8 (Loop): attribute "body": type GRAPH cannot be a clhost layer attribute`},
		{Test: "ceil", Verdict: conformance.Pass, Float: true, Ops: []string{"Ceil"}},
		{Test: "split", Verdict: conformance.Pass, Float: true, Ops: []string{"Split"}},
		{Test: "split_zero", Verdict: conformance.Refused, Float: true, Ops: []string{"Split"},
			Message: `layer "Split_0" (Split): output 0 has shape [0]`},
	}
	var b strings.Builder
	printConformanceTable(&b, results)
	rows := map[string][]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) == 9 {
			rows[f[0]] = f[1:]
		}
	}
	// tests pass wrong refused crash float-tests float-pass float-blocked
	for op, want := range map[string]string{"Ceil": "2 1 0 1 0 2 1 1", "Loop": "1 0 0 1 0 1 0 0", "total": "4 2 0 2 0 4 2 0"} {
		if got := strings.Join(rows[op], " "); got != want {
			t.Errorf("%s row %q, want %q\n%s", op, got, want, b.String())
		}
	}
	last := strings.TrimSpace(b.String()[strings.LastIndex(strings.TrimSpace(b.String()), "\n")+1:])
	if want := "pass under 95 %: Split 1/2"; !strings.HasSuffix(last, want) {
		t.Errorf("closing line %q, want it to end %q", last, want)
	}
}
