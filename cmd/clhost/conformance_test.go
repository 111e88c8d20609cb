package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConformanceVerdicts runs three ONNX backend test folders (the passing test_relu, a
// copy whose expected output was altered, and test_det_2d, whose op clhost lacks) through
// `clhost conformance`, each in a child process, and checks every verdict; with a time
// limit too short for any test, each counts as a crash and the run still ends.
func TestConformanceVerdicts(t *testing.T) {
	t.Setenv("CLHOST_AS_MAIN", "1") // the children are this test binary acting as clhost
	dir := filepath.Join("testdata", "conformance")
	run := func(extra ...string) map[string]caseResult {
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
		var rs []caseResult
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		got := map[string]caseResult{}
		for _, r := range rs {
			got[filepath.Base(r.Test)] = r
		}
		return got
	}
	got := run()
	for test, want := range map[string]string{"test_relu": verdictPass, "test_relu_wrong": verdictWrong, "test_det_2d": verdictRefused} {
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
		if r.Verdict != verdictCrash {
			t.Errorf("-timeout 1ns: %s: verdict %q, want %q", test, r.Verdict, verdictCrash)
		}
	}
}

// TestConformanceExpectPass: with -expect-pass, a run fails when a listed test does not
// pass or any test is wrong (test_relu_wrong is), and names them; a list the run meets,
// over a folder of passing tests only, succeeds and says so.
func TestConformanceExpectPass(t *testing.T) {
	t.Setenv("CLHOST_AS_MAIN", "1")
	dir := filepath.Join("testdata", "conformance")
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

// TestConformanceTableBlocked checks that a float test refused for another of its op
// types counts as blocked, not as a failure, under the op types it does not name, and
// that the closing line names the op types under 95 % by the rest.
func TestConformanceTableBlocked(t *testing.T) {
	results := []caseResult{
		{Test: "range_expanded", Verdict: verdictRefused, Float: true, Ops: []string{"Ceil", "Loop"},
			Message: `model.onnx: node 8 (Loop): attribute "body": type GRAPH cannot be a clhost layer attribute`},
		{Test: "ceil", Verdict: verdictPass, Float: true, Ops: []string{"Ceil"}},
		{Test: "split", Verdict: verdictPass, Float: true, Ops: []string{"Split"}},
		{Test: "split_zero", Verdict: verdictRefused, Float: true, Ops: []string{"Split"},
			Message: `layer "Split_0" (Split): output 0 has shape [0]`},
		{Test: "castlike", Verdict: verdictRefused, Float: true, Ops: []string{"CastLike"},
			Message: `no implementation for layer type "CastLike" (layer "CastLike_0")`},
	}
	for _, c := range []struct{ r, want string }{{results[0].Message, "Loop"}, {results[3].Message, "Split"}, {results[4].Message, "CastLike"}} {
		if got := refusingOp(caseResult{Verdict: verdictRefused, Message: c.r}); got != c.want {
			t.Errorf("refusingOp(%q) = %q, want %q", c.r, got, c.want)
		}
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
	if got, want := strings.Join(rows["Ceil"], " "), "2 1 0 1 0 2 1 1"; got != want {
		t.Errorf("Ceil row %q, want %q\n%s", got, want, b.String())
	}
	if got, want := strings.Join(rows["Loop"], " "), "1 0 0 1 0 1 0 0"; got != want {
		t.Errorf("Loop row %q, want %q\n%s", got, want, b.String())
	}
	last := strings.TrimSpace(b.String()[strings.LastIndex(strings.TrimSpace(b.String()), "\n")+1:])
	if !strings.Contains(last, "Split 1/2") || strings.Contains(last, "Ceil") || strings.Contains(last, "CastLike") {
		t.Errorf("closing line %q: want Split 1/2 alone (Ceil's failure is Loop's, CastLike passes nothing)", last)
	}
}
