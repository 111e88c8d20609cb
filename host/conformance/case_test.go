package conformance

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
)

// TestRunCase judges the three test folders of testdata in this process, on PoCL: the
// passing test_relu, a copy whose expected output was altered, and test_det_2d, whose
// op clhost lacks.
func TestRunCase(t *testing.T) {
	opt := host.Options{Device: "cpu", CacheDir: t.TempDir()}
	for _, c := range []struct{ test, verdict, message string }{
		{"test_relu", Pass, ""},
		{"test_relu_wrong", Wrong, "1 of 60 values differ"},
		{"test_det_2d", Refused, `"Det"`},
	} {
		r := RunCase(filepath.Join("testdata", c.test), opt)
		if r.Verdict != c.verdict || !strings.Contains(r.Message, c.message) {
			t.Errorf("%s: verdict %q (%s), want %q with %q", c.test, r.Verdict, r.Message, c.verdict, c.message)
		}
		if !r.Float {
			t.Errorf("%s: not counted a float test", c.test)
		}
	}
}

// TestFindTests: a test folder given stands for itself, another folder for the tests
// inside it, and -run's expression filters by folder name.
func TestFindTests(t *testing.T) {
	all, err := FindTests([]string{"testdata"}, nil)
	if err != nil || len(all) != 3 {
		t.Fatalf("FindTests(testdata) = %v, %v; want the 3 tests", all, err)
	}
	one, err := FindTests([]string{filepath.Join("testdata", "test_relu")}, nil)
	if err != nil || len(one) != 1 {
		t.Errorf("FindTests(testdata/test_relu) = %v, %v", one, err)
	}
}

// TestCompareExpected: a listed test refused or missing is lost, a wrong one is bad
// listed or not, and a pass beyond the list is gained.
func TestCompareExpected(t *testing.T) {
	want, err := ReadPassList(strings.NewReader("# passing\ntest_relu\ntest_det_2d # refused\ntest_gone\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := CompareExpected(want, []Result{
		{Test: "d/test_relu", Verdict: Pass},
		{Test: "d/test_det_2d", Verdict: Refused, Message: "no Det"},
		{Test: "d/test_relu_wrong", Verdict: Wrong, Message: "1 differs"},
		{Test: "d/test_abs", Verdict: Pass},
	})
	if e.OK() ||
		strings.Join(e.Lost, "|") != "test_det_2d: refused: no Det|test_gone: not found among the test folders" ||
		strings.Join(e.Bad, "|") != "test_relu_wrong: wrong: 1 differs" ||
		strings.Join(e.Gained, "|") != "test_abs" {
		t.Errorf("CompareExpected = %+v", e)
	}
}
