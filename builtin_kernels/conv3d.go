package builtinkernels

import (
	"fmt"
	"strings"

	"github.com/clhost/clhost/internal/opspec"
)

// conv3Geom is a Conv over N,C,D,H,W data (3-D convolution), which runs on conv3d.cl;
// 1-D and 2-D convolutions keep convGeom's kernels. It takes the bias, the fused
// residual and activation and the output batch stride as 2-D convolutions do, not the
// fused pools.
type conv3Geom struct {
	n, c, m, g, cg, mg int
	in                 [3]int
	win                opspec.Window
	hasBias            bool
	hasResidual        bool
	act                fusedAct
	yn                 int
}

// geometry3 reads a 3-D Conv's inputs and attributes; in[0] has rank 5.
func (convOp) geometry3(p Params, in [][]int) (conv3Geom, error) {
	const typ = "Conv"
	var g conv3Geom
	x, w := in[0], in[1]
	if len(w) != 5 {
		return g, fmt.Errorf("%s: input 1 (W) has shape %v: want rank 5 like X %v (M, C/group, kD, kH, kW)", typ, w, x)
	}
	group := p.Int("group", 1)
	if group < 1 || group > int64(x[1]) {
		return g, fmt.Errorf("%s: group %d: want 1 to the %d input channels", typ, group, x[1])
	}
	g.n, g.c, g.m, g.g = x[0], x[1], w[0], int(group)
	g.in = [3]int{x[2], x[3], x[4]}
	if g.c%g.g != 0 || g.m%g.g != 0 {
		return g, fmt.Errorf("%s: group %d does not divide input channels %d and output channels %d", typ, g.g, g.c, g.m)
	}
	g.cg, g.mg = g.c/g.g, g.m/g.g
	if w[1] != g.cg {
		return g, fmt.Errorf("%s: W has shape %v: dimension 1 is %d, want C/group = %d/%d = %d", typ, w, w[1], g.c, g.g, g.cg)
	}
	k := w[2:5]
	list := func(name string) ([]int, error) {
		if !p.Has(name) {
			return []int{1, 1, 1}, nil
		}
		v := p.Ints(name, nil)
		if len(v) != 3 {
			return nil, fmt.Errorf("%s: %s has %d values %v, want 3 (one per spatial dimension)", typ, name, len(v), v)
		}
		out := make([]int, 3)
		for i, e := range v {
			if e < 1 || e > 1<<20 {
				return nil, fmt.Errorf("%s: %s %v: each value must be in [1, %d]", typ, name, v, 1<<20)
			}
			out[i] = int(e)
		}
		return out, nil
	}
	if p.Has("kernel_shape") {
		ks, err := list("kernel_shape")
		if err != nil {
			return g, err
		}
		if ks[0] != k[0] || ks[1] != k[1] || ks[2] != k[2] {
			return g, fmt.Errorf("%s: kernel_shape %v does not match W's spatial shape %v", typ, ks, k)
		}
	}
	s, err := list("strides")
	if err != nil {
		return g, err
	}
	d, err := list("dilations")
	if err != nil {
		return g, err
	}
	var pads []int
	if p.Has("pads") {
		v := p.Ints("pads", nil)
		if len(v) != 6 {
			return g, fmt.Errorf("%s: pads has %d values %v, want 6 (begin of each spatial dimension, then end of each)", typ, len(v), v)
		}
		for _, e := range v {
			if e < 0 || e > 1<<20 {
				return g, fmt.Errorf("%s: pads %v: each value must be in [0, %d]", typ, v, 1<<20)
			}
			pads = append(pads, int(e))
		}
	}
	if g.win, err = opspec.ResolveWindow(g.in[:], k, s, d, pads, strings.ToUpper(p.String("auto_pad", "NOTSET")), false); err != nil {
		return g, fmt.Errorf("%s: %w", typ, err)
	}
	if len(in) >= 3 && in[2] != nil {
		if len(in[2]) != 1 || in[2][0] != g.m {
			return g, fmt.Errorf("%s: input 2 (B) has shape %v, want [%d]", typ, in[2], g.m)
		}
		g.hasBias = true
	}
	if len(in) == 4 && in[3] != nil {
		if out := g.outShape(); !sameShape(in[3], out) {
			return g, fmt.Errorf("%s: input 3 (residual) has shape %v, want the output's shape %v", typ, in[3], out)
		}
		g.hasResidual = true
	}
	if g.act, err = readFusedAct(typ, p); err != nil {
		return g, err
	}
	if p.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 || p.Has(opspec.FusedMaxPoolPrefix+"kernel_shape") {
		return g, fmt.Errorf("%s: a 3-D convolution takes no fused pool (%s, %s*)", typ, opspec.FusedGlobalAveragePoolAttr, opspec.FusedMaxPoolPrefix)
	}
	if p.Has(opspec.OutputBatchStrideAttr) {
		per := numel(g.outShape()[1:])
		v := p.Int(opspec.OutputBatchStrideAttr, 0)
		if v < int64(per) || v > 1<<31-1 {
			return g, fmt.Errorf("%s: %s %d: want at least the %d elements of one output image", typ, opspec.OutputBatchStrideAttr, v, per)
		}
		g.yn = int(v)
	}
	return g, nil
}

func (g conv3Geom) outShape() []int {
	return []int{g.n, g.m, g.win.Out[0], g.win.Out[1], g.win.Out[2]}
}

// plan plans conv3d.cl: one output value per work-item.
func (g conv3Geom) plan(dev DeviceInfo) (*Plan, error) {
	var d defines
	w := g.win
	defineWindow3(&d, g.in[:], w)
	d.int("C", g.c)
	d.int("M", g.m)
	d.int("CG", g.cg)
	d.int("MG", g.mg)
	d.int("NM", g.n*g.m)
	if g.yn != 0 {
		d.int("YN", g.yn)
	}
	d.bool("HAS_BIAS", g.hasBias)
	d.bool("HAS_RESIDUAL", g.hasResidual)
	d.raw("BIAS_ARG", optionalParam(g.hasBias, "bias"))
	d.raw("RES_ARG", optionalParam(g.hasResidual, "res"))
	d.raw("OPTIONAL_OFFSETS", optionalOffset(g.hasBias, "bias")+optionalOffset(g.hasResidual, "res"))
	g.act.define(&d)
	src, err := d.program("conv3d.cl")
	if err != nil {
		return nil, err
	}
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}}
	if g.hasBias {
		args = append(args, Arg{Kind: ArgInput, Index: 2})
	}
	if g.hasResidual {
		args = append(args, Arg{Kind: ArgInput, Index: 3})
	}
	args = append(args, Arg{Kind: ArgOutput, Index: 0})
	gl, lo := launchSize([]int{w.Out[2], w.Out[1], w.Out[0] * g.n * g.m}, dev)
	return &Plan{
		Source:            src,
		Launches:          []Launch{{Kernel: "conv3d", Global: gl, Local: lo, Args: args}},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}, nil
}

// reference is the 3-D convolution of x by w, with the bias, residual and activation.
func (g conv3Geom) reference(in []*HostTensor) []float32 {
	x, wt := in[0].Data, in[1].Data
	w := g.win
	id, out := g.in, w.Out
	k := w.Kernel
	y := make([]float32, g.n*g.m*out[0]*out[1]*out[2])
	var o, t, p [3]int
	i := 0
	for n := 0; n < g.n; n++ {
		for m := 0; m < g.m; m++ {
			grp := m / g.mg
			for o[0] = 0; o[0] < out[0]; o[0]++ {
				for o[1] = 0; o[1] < out[1]; o[1]++ {
					for o[2] = 0; o[2] < out[2]; o[2]++ {
						var s float64
						if g.hasBias {
							s = float64(in[2].Data[m])
						}
						for c := 0; c < g.cg; c++ {
							ic := grp*g.cg + c
							for t[0] = 0; t[0] < k[0]; t[0]++ {
								for t[1] = 0; t[1] < k[1]; t[1]++ {
									for t[2] = 0; t[2] < k[2]; t[2]++ {
										inside := true
										for a := range 3 {
											p[a] = o[a]*w.Strides[a] - w.PadsBegin[a] + t[a]*w.Dilations[a]
											inside = inside && p[a] >= 0 && p[a] < id[a]
										}
										if !inside {
											continue
										}
										xv := x[(((n*g.c+ic)*id[0]+p[0])*id[1]+p[1])*id[2]+p[2]]
										wv := wt[(((m*g.cg+c)*k[0]+t[0])*k[1]+t[1])*k[2]+t[2]]
										s += float64(xv) * float64(wv)
									}
								}
							}
						}
						if g.hasResidual {
							s += float64(in[3].Data[i])
						}
						y[i] = float32(g.act.apply(s))
						i++
					}
				}
			}
		}
	}
	return y
}
