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
