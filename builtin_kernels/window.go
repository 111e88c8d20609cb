package builtinkernels

import (
	"fmt"
	"strings"

	"github.com/clhost/clhost/internal/opspec"
)

// window is the sliding-window geometry shared by Conv and the pools, for two spatial
// dimensions [H, W]. A 1-D layer (rank-3 tensors) is run as H = 1 with a 1×1 window
// along H, so one kernel serves both.
type window struct {
	k, s, d, pb, pe, out [2]int
}

// spatialRank is the number of spatial dimensions of an N,C,... tensor, 1 or 2 (rank-5
// tensors take the 3-D kernels before this is asked).
func spatialRank(typ string, x []int) (int, error) {
	if len(x) != 3 && len(x) != 4 {
		return 0, fmt.Errorf("%s: input 0 has shape %v: want rank 3 (N,C,W), 4 (N,C,H,W) or 5 (N,C,D,H,W)", typ, x)
	}
	return len(x) - 2, nil
}

// hw2 gives the [H, W] of an N,C,... tensor, with H = 1 for rank 3.
func hw2(x []int) [2]int {
	if len(x) == 3 {
		return [2]int{1, x[2]}
	}
	return [2]int{x[2], x[3]}
}

// listAttr reads a per-spatial-dimension list (strides, dilations, kernel_shape) of nsp
// entries, each at least min, and lifts it to [H, W] with fill for the missing H.
func listAttr(typ string, p Params, name string, nsp int, def, min, fill int) ([2]int, error) {
	out := [2]int{fill, def}
	if nsp == 2 {
		out[0] = def
	}
	if !p.Has(name) {
		return out, nil
	}
	v := p.Ints(name, nil)
	if len(v) != nsp {
		return out, fmt.Errorf("%s: %s has %d values %v, want %d (one per spatial dimension)", typ, name, len(v), v, nsp)
	}
	for _, x := range v {
		if x < int64(min) || x > 1<<20 {
			return out, fmt.Errorf("%s: %s %v: each value must be in [%d, %d]", typ, name, v, min, 1<<20)
		}
	}
	if nsp == 1 {
		out[1] = int(v[0])
	} else {
		out[0], out[1] = int(v[0]), int(v[1])
	}
	return out, nil
}

// resolveWindow reads strides, dilations, pads and auto_pad and resolves the window of
// kernel size k over input size in by opspec.ResolveWindow, the rule shape inference
// follows too; ceil selects ceil_mode rounding. A 1-D layer's H stays a 1×1 window over
// one row.
func resolveWindow(typ string, p Params, nsp int, in, k [2]int, ceil bool) (window, error) {
	w := window{k: k, out: [2]int{1, 1}}
	var err error
	if w.s, err = listAttr(typ, p, "strides", nsp, 1, 1, 1); err != nil {
		return w, err
	}
	if w.d, err = listAttr(typ, p, "dilations", nsp, 1, 1, 1); err != nil {
		return w, err
	}
	var pads []int
	if p.Has("pads") {
		v := p.Ints("pads", nil)
		if len(v) != 2*nsp {
			return w, fmt.Errorf("%s: pads has %d values %v, want %d (begin of each spatial dimension, then end of each)", typ, len(v), v, 2*nsp)
		}
		for _, x := range v {
			if x < 0 || x > 1<<20 {
				return w, fmt.Errorf("%s: pads %v: each value must be in [0, %d]", typ, v, 1<<20)
			}
			pads = append(pads, int(x))
		}
	}
	lo := 2 - nsp // the first spatial axis in [H, W]
	r, err := opspec.ResolveWindow(in[lo:], k[lo:], w.s[lo:], w.d[lo:], pads, strings.ToUpper(p.String("auto_pad", "NOTSET")), ceil)
	if err != nil {
		return w, fmt.Errorf("%s: %w", typ, err)
	}
	copy(w.pb[lo:], r.PadsBegin)
	copy(w.pe[lo:], r.PadsEnd)
	copy(w.out[lo:], r.Out)
	return w, nil
}

// outShape builds N,C,out... with the rank of the input.
func (w window) outShape(n, c, nsp int) []int {
	if nsp == 1 {
		return []int{n, c, w.out[1]}
	}
	return []int{n, c, w.out[0], w.out[1]}
}

// define writes the window's #defines shared by conv.cl and pool.cl.
func (w window) define(d *defines) {
	d.int("KH", w.k[0])
	d.int("KW", w.k[1])
	d.int("SH", w.s[0])
	d.int("SW", w.s[1])
	d.int("DH", w.d[0])
	d.int("DW", w.d[1])
	d.int("PT", w.pb[0])
	d.int("PL", w.pb[1])
	d.int("PB", w.pe[0])
	d.int("PR", w.pe[1])
	d.int("OH", w.out[0])
	d.int("OW", w.out[1])
}
