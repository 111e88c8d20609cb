package builtinkernels

import (
	"fmt"
	"math"
	"strings"

	"github.com/clhost/clhost/internal/opspec"
)

// pool3Geom is a MaxPool / AveragePool over N,C,D,H,W data (3-D pooling), which runs on
// pool3d.cl; 1-D and 2-D pools keep poolGeom's kernels.
type pool3Geom struct {
	n, c     int
	in       [3]int
	win      opspec.Window
	countPad bool
}

// geometry3 reads the pool's attributes for a rank-5 input x.
func (o poolOp) geometry3(p Params, x []int) (pool3Geom, error) {
	g := pool3Geom{n: x[0], c: x[1], in: [3]int{x[2], x[3], x[4]}}
	list := func(name string, def int) ([]int, error) {
		if !p.Has(name) {
			return []int{def, def, def}, nil
		}
		v := p.Ints(name, nil)
		if len(v) != 3 {
			return nil, fmt.Errorf("%s: %s has %d values %v, want 3 (one per spatial dimension)", o.typ, name, len(v), v)
		}
		out := make([]int, 3)
		for i, e := range v {
			if e < 1 || e > 1<<20 {
				return nil, fmt.Errorf("%s: %s %v: each value must be in [1, %d]", o.typ, name, v, 1<<20)
			}
			out[i] = int(e)
		}
		return out, nil
	}
	if !p.Has("kernel_shape") {
		return g, fmt.Errorf("%s: the kernel_shape attribute is required", o.typ)
	}
	k, err := list("kernel_shape", 1)
	if err != nil {
		return g, err
	}
	s, err := list("strides", 1)
	if err != nil {
		return g, err
	}
	d, err := list("dilations", 1)
	if err != nil {
		return g, err
	}
	var pads []int
	if p.Has("pads") {
		v := p.Ints("pads", nil)
		if len(v) != 6 {
			return g, fmt.Errorf("%s: pads has %d values %v, want 6 (begin of each spatial dimension, then end of each)", o.typ, len(v), v)
		}
		for _, e := range v {
			if e < 0 || e > 1<<20 {
				return g, fmt.Errorf("%s: pads %v: each value must be in [0, %d]", o.typ, v, 1<<20)
			}
			pads = append(pads, int(e))
		}
	}
	ceilMode := p.Int("ceil_mode", 0)
	if ceilMode != 0 && ceilMode != 1 {
		return g, fmt.Errorf("%s: ceil_mode %d: want 0 or 1", o.typ, ceilMode)
	}
	if o.max && p.Has("storage_order") && p.Int("storage_order", 0) != 0 {
		return g, fmt.Errorf("%s: storage_order %d is not supported (only the Indices output uses it, and that output is not supported)", o.typ, p.Int("storage_order", 0))
	}
	cip := p.Int("count_include_pad", 0)
	if cip != 0 && cip != 1 {
		return g, fmt.Errorf("%s: count_include_pad %d: want 0 or 1", o.typ, cip)
	}
	g.countPad = cip == 1
	g.win, err = opspec.ResolveWindow(g.in[:], k, s, d, pads, strings.ToUpper(p.String("auto_pad", "NOTSET")), ceilMode == 1)
	if err != nil {
		return g, fmt.Errorf("%s: %w", o.typ, err)
	}
	return g, nil
}

func (g pool3Geom) outShape() []int {
	return []int{g.n, g.c, g.win.Out[0], g.win.Out[1], g.win.Out[2]}
}

// plan3 plans pool3d.cl: one output value per work-item.
func (o poolOp) plan3(g pool3Geom, dev DeviceInfo) (*Plan, error) {
	var d defines
	w := g.win
	defineWindow3(&d, g.in[:], w)
	d.int("NC", g.n*g.c)
	d.bool("MAXPOOL", o.max)
	d.bool("COUNT_PAD", g.countPad)
	d.bool("UNROLL", w.Kernel[0]*w.Kernel[1]*w.Kernel[2] <= maxUnrolledPoolTaps)
	src, err := d.program("pool3d.cl")
	if err != nil {
		return nil, err
	}
	gl, lo := launchSize([]int{w.Out[2], w.Out[1], w.Out[0] * g.n * g.c}, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: "pool3d", Global: gl, Local: lo,
			Args: []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}}}},
		AliasInput: -1,
	}, nil
}

// pool3Planes pools x (N, C, D, H, W) over g's windows, as poolPlanes does in 2-D.
func pool3Planes(g pool3Geom, isMax bool, x []float32) []float32 {
	w := g.win
	in, out := g.in, w.Out
	y := make([]float32, g.n*g.c*out[0]*out[1]*out[2])
	var o [3]int
	i := 0
	for nc := 0; nc < g.n*g.c; nc++ {
		for o[0] = 0; o[0] < out[0]; o[0]++ {
			for o[1] = 0; o[1] < out[1]; o[1]++ {
				for o[2] = 0; o[2] < out[2]; o[2]++ {
					maxV := math.Inf(-1)
					var sum float64
					count := 0
					var t, p [3]int
					for t[0] = 0; t[0] < w.Kernel[0]; t[0]++ {
						for t[1] = 0; t[1] < w.Kernel[1]; t[1]++ {
							for t[2] = 0; t[2] < w.Kernel[2]; t[2]++ {
								inside, padded := true, true
								for a := range 3 {
									p[a] = o[a]*w.Strides[a] - w.PadsBegin[a] + t[a]*w.Dilations[a]
									inside = inside && p[a] >= 0 && p[a] < in[a]
									padded = padded && p[a] >= -w.PadsBegin[a] && p[a] < in[a]+w.PadsEnd[a]
								}
								if inside {
									v := float64(x[((nc*in[0]+p[0])*in[1]+p[1])*in[2]+p[2]])
									sum += v
									maxV = math.Max(maxV, v)
								}
								if inside || (g.countPad && padded) {
									count++
								}
							}
						}
					}
					switch {
					case isMax:
						y[i] = float32(maxV)
					case count > 0:
						y[i] = float32(sum / float64(count))
					}
					i++
				}
			}
		}
	}
	return y
}

// defineWindow3 writes a 3-D window's defines, as conv3d.cl and pool3d.cl read them: per
// axis D, H, W the input and output sizes (I*, O*), kernel (K*), stride (S*), dilation
// (D*) and the padding before and after (P0*, P1*).
func defineWindow3(d *defines, in []int, w opspec.Window) {
	for i, axis := range []string{"D", "H", "W"} {
		d.int("I"+axis, in[i])
		d.int("O"+axis, w.Out[i])
		d.int("K"+axis, w.Kernel[i])
		d.int("S"+axis, w.Strides[i])
		d.int("D"+axis, w.Dilations[i])
		d.int("P0"+axis, w.PadsBegin[i])
		d.int("P1"+axis, w.PadsEnd[i])
	}
}
