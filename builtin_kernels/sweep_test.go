package builtinkernels

import (
	"os"
	"testing"
)

// fullSweeps is set by `make test-full` (CLHOST_TEST_FULL=1): the plan tests then run every
// variant (tile, device, layout) on every case. Every distinct program costs PoCL seconds
// of compiling on a new machine, so `make test` runs each variant on some cases only.
var fullSweeps = os.Getenv("CLHOST_TEST_FULL") != ""

// quickBuilds compiles the programs of this package's tests on PoCL with
// -cl-opt-disable, unless CLHOST_TEST_OPTIMIZE=1 or fullSweeps. These tests check each
// kernel's source against its CPU reference over many tiles and shapes, and PoCL compiles
// a program five times faster without its optimizer, which is most of what makes the
// suite fit a new machine's few minutes. What users run, the optimized builds, is tested
// by the network, sample and command tests of the other packages (which build programs
// as clhost does), by make test-full, and oclgrind's run of this package is unaffected.
var quickBuilds = !fullSweeps && os.Getenv("CLHOST_TEST_OPTIMIZE") != "1"

// sweep picks which of n variants each case of a plan test runs. Under fullSweeps every
// case runs all of them; otherwise case ci runs per of them in turn, so that across the
// cases every variant still runs (each tile parameter, each edge case the tiles make)
// without the product of cases and variants. done fails the test where a variant never
// ran, so a shorter case list cannot silently drop one.
type sweep struct {
	n, per int
	ran    []bool
}

func newSweep(t *testing.T, n, per int) *sweep {
	t.Helper()
	s := &sweep{n: n, per: per, ran: make([]bool, n)}
	t.Cleanup(func() {
		for i, ok := range s.ran {
			if !ok && !t.Failed() {
				t.Errorf("sweep: variant %d of %d never ran; add a case or raise per", i, n)
			}
		}
	})
	return s
}

// pick is the variants case ci runs, marked as run.
func (s *sweep) pick(ci int) []int {
	var idx []int
	if fullSweeps || s.per >= s.n {
		for i := 0; i < s.n; i++ {
			idx = append(idx, i)
		}
	} else {
		for k := 0; k < s.per; k++ {
			idx = append(idx, (ci*s.per+k)%s.n)
		}
	}
	for _, i := range idx {
		s.ran[i] = true
	}
	return idx
}
