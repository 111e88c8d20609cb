package host

import (
	"fmt"
	"math"
	"strings"
)

// Element-by-element comparison under a Tolerance, and naming an element by its
// coordinates.

// compare measures got against want element by element under tol.
func compare(name string, got, want []float32, shape []int, tol Tolerance) OutputError {
	e := OutputError{Output: name, Worst: -1, Count: len(got), Shape: shape}
	if len(got) != len(want) {
		e.MaxAbs, e.MaxRel, e.Bad = math.Inf(1), math.Inf(1), max(len(got), 1)
		return e
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		var d float64
		switch gn, wn := math.IsNaN(g), math.IsNaN(w); {
		case gn && wn:
			// NaN matches NaN: skip the tolerance, which NaN would fail.
			continue
		case gn || wn:
			d = math.Inf(1)
		default:
			d = math.Abs(g - w)
			if math.IsInf(g, 0) && g == w {
				d = 0
			}
		}
		if d > e.MaxAbs || e.Worst < 0 {
			e.MaxAbs, e.Worst = d, i
		}
		if r := d / math.Max(math.Abs(w), 1e-6); r > e.MaxRel || math.IsInf(d, 1) {
			e.MaxRel = r
			if math.IsNaN(r) {
				e.MaxRel = math.Inf(1)
			}
		}
		if !(d <= tol.Abs+tol.Rel*math.Abs(w)) {
			e.Bad++
		}
	}
	return e
}

// coords names flat index i of a C-order tensor of the given shape, e.g. [0,4,0,0].
func coords(shape []int, i int) string {
	if len(shape) == 0 {
		return fmt.Sprintf("[%d]", i)
	}
	c := make([]string, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		d := max(shape[k], 1)
		c[k] = fmt.Sprint(i % d)
		i /= d
	}
	return "[" + strings.Join(c, ",") + "]"
}
