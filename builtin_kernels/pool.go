package builtinkernels

import (
	"fmt"
	"math"
	"strings"
)

func init() {
	Register("MaxPool", poolOp{typ: "MaxPool", max: true})
	Register("AveragePool", poolOp{typ: "AveragePool"})
	Register("GlobalMaxPool", globalPoolOp{typ: "GlobalMaxPool", max: true})
	Register("GlobalAveragePool", globalPoolOp{typ: "GlobalAveragePool"})
}

// poolOp is ONNX MaxPool / AveragePool over 1-D, 2-D and 3-D data (3-D in pool3d.go).
type poolOp struct {
	typ string
	max bool
}

type poolGeom struct {
	n, c     int
	in       [2]int
	nsp      int
	win      window
	countPad bool
}

func (o poolOp) geometry(p Params, in [][]int) (poolGeom, error) {
	var g poolGeom
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return g, err
	}
	nsp, err := spatialRank(o.typ, in[0])
	if err != nil {
		return g, err
	}
	if !p.Has("kernel_shape") {
		return g, fmt.Errorf("%s: the kernel_shape attribute is required", o.typ)
	}
	k, err := listAttr(o.typ, p, "kernel_shape", nsp, 1, 1, 1)
	if err != nil {
		return g, err
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
	g.n, g.c, g.nsp, g.in = in[0][0], in[0][1], nsp, hw2(in[0])
	if g.win, err = resolveWindow(o.typ, p, nsp, g.in, k, ceilMode == 1); err != nil {
		return g, err
	}
	return g, nil
}

func (o poolOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if len(in) == 1 && len(in[0]) == 5 {
		g, err := o.geometry3(paramsOr(p), in[0])
		if err != nil {
			return nil, err
		}
		return [][]int{g.outShape()}, nil
	}
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.win.outShape(g.n, g.c, g.nsp)}, nil
}

// checkOut refuses MaxPool's optional Indices output by name before comparing shapes.
func (o poolOp) checkOut(got, want [][]int) error {
	if o.max && len(got) == 2 {
		return fmt.Errorf("%s: the second output (Indices) is not supported", o.typ)
	}
	return checkOut(o.typ, got, want)
}

func (o poolOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := o.checkOut(out, shapes); err != nil {
		return nil, err
	}
	if len(in[0]) == 5 {
		g3, _ := o.geometry3(p, in[0])
		return o.plan3(g3, dev)
	}
	g, _ := o.geometry(p, in)
	if o.max && !dev.IsGPU && g.nsp == 2 {
		plan, ok, err := cpuMaxPoolPlan(g, windowRows(g.win.out[0]), windowVec(g.win.out[1], dev), dev)
		if ok || err != nil {
			return plan, err
		}
	}
	return o.portablePlan(g, dev)
}

// portablePlan is pool.cl's plan, one output value per work-item, for any device.
func (o poolOp) portablePlan(g poolGeom, dev DeviceInfo) (*Plan, error) {
	var d defines
	g.define(&d)
	d.bool("COUNT_PAD", g.countPad)
	d.bool("UNROLL", g.win.k[0]*g.win.k[1] <= maxUnrolledPoolTaps)
	src, err := d.program("pool.cl")
	if err != nil {
		return nil, err
	}
	kernel := "avgpool2d"
	if o.max {
		kernel = "maxpool2d"
	}
	gl, lo := launchSize([]int{g.win.out[1], g.win.out[0], g.n * g.c}, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: kernel, Global: gl, Local: lo,
			Args: []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}}}},
		AliasInput: -1,
	}, nil
}

// maxUnrolledPoolTaps bounds the windows pool.cl unrolls: fully unrolled, a 60×80 window
// (ONNX's MaxPool2d_stride_padding_dilation) took PoCL minutes to compile, and a loop
// over a window that large costs little next to its loads.
const maxUnrolledPoolTaps = 256

// define writes the pool's geometry.
func (g poolGeom) define(d *defines) {
	d.int("H", g.in[0])
	d.int("W", g.in[1])
	d.int("NC", g.n*g.c)
	g.win.define(d)
}

// defineFused writes the pool's geometry under the names conv_cpu.cl's conv2d_maxpool
// and maxpool_after.cl read, MP_ before each, so that they do not clash with the
// conv's: MP_IH and MP_IW its input (the conv's output), then the window's.
func (g poolGeom) defineFused(d *defines) {
	d.int("MP_IH", g.in[0])
	d.int("MP_IW", g.in[1])
	var w defines
	g.win.define(&w)
	for _, line := range strings.SplitAfter(w.b.String(), "\n") {
		if line != "" {
			d.b.WriteString(strings.Replace(line, "#define ", "#define MP_", 1))
		}
	}
}

// cpuMaxPoolPlan plans window_cpu.cl's max pooling for CPUs: planes per work-item,
// vectorised along the rows, vec outputs of nr rows at a time. ok is false where the
// rows are too long for its buffer.
func cpuMaxPoolPlan(g poolGeom, nr, vec int, dev DeviceInfo) (*Plan, bool, error) {
	var d defines
	g.define(&d)
	d.int("MAXPOOL", 1)
	comparisons := g.n * g.c * g.win.out[0] * g.win.out[1] * g.win.k[0] * g.win.k[1]
	return windowPlan(&d, "maxpool2d_vec", g.n*g.c, 1, nr, vec, g.win, g.in, comparisons,
		[]Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}}, dev)
}

func (o poolOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := checkTensors(o.typ, in)
	if err != nil {
		return nil, err
	}
	want, err := o.OutputShapes(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := o.checkOut(out, want); err != nil {
		return nil, err
	}
	if len(shapes[0]) == 5 {
		g3, _ := o.geometry3(p, shapes[0])
		return []*HostTensor{{Shape: cloneShape(want[0]), Data: pool3Planes(g3, o.max, in[0].Data)}}, nil
	}
	g, _ := o.geometry(p, shapes)
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: poolPlanes(g, o.max, in[0].Data)}}, nil
}

// maxPoolPlanes is the max pool of g over x (N, C, H, W), the reference of a Conv's
// folded MaxPool.
func maxPoolPlanes(g poolGeom, x []float32) []float32 { return poolPlanes(g, true, x) }

// poolPlanes pools x (N, C, H, W) over g's windows: the maximum, or the mean of the
// positions inside the input (with countPad, of those inside the padding too).
func poolPlanes(g poolGeom, isMax bool, x []float32) []float32 {
	H, W := g.in[0], g.in[1]
	OH, OW := g.win.out[0], g.win.out[1]
	y := make([]float32, g.n*g.c*OH*OW)
	for nc := 0; nc < g.n*g.c; nc++ {
		for oy := 0; oy < OH; oy++ {
			for ox := 0; ox < OW; ox++ {
				maxV := math.Inf(-1)
				var sum float64
				count := 0
				for ky := 0; ky < g.win.k[0]; ky++ {
					iy := oy*g.win.s[0] - g.win.pb[0] + ky*g.win.d[0]
					for kx := 0; kx < g.win.k[1]; kx++ {
						ix := ox*g.win.s[1] - g.win.pb[1] + kx*g.win.d[1]
						inside := iy >= 0 && iy < H && ix >= 0 && ix < W
						inPadded := iy >= -g.win.pb[0] && iy < H+g.win.pe[0] && ix >= -g.win.pb[1] && ix < W+g.win.pe[1]
						if inside {
							v := float64(x[(nc*H+iy)*W+ix])
							sum += v
							maxV = math.Max(maxV, v)
						}
						if inside || (g.countPad && inPadded) {
							count++
						}
					}
				}
				var r float64
				switch {
				case isMax:
					r = maxV
				case count > 0:
					r = sum / float64(count)
				}
				y[(nc*OH+oy)*OW+ox] = float32(r)
			}
		}
	}
	return y
}

// globalPoolOp is ONNX GlobalMaxPool / GlobalAveragePool over N,C,spatial... data of any
// spatial rank: the output keeps the rank with every spatial dimension 1.
type globalPoolOp struct {
	typ string
	max bool
}

func (o globalPoolOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if len(in[0]) < 3 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want rank 3 or more (N, C, spatial...)", o.typ, in[0])
	}
	s := cloneShape(in[0])
	for i := 2; i < len(s); i++ {
		s[i] = 1
	}
	return [][]int{s}, nil
}

func (o globalPoolOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	src, err := kernelSource("globalpool.cl")
	if err != nil {
		return nil, err
	}
	planes := in[0][0] * in[0][1]
	kernel := "global_avgpool"
	if o.max {
		kernel = "global_maxpool"
	}
	gl, lo := launchSize([]int{planes}, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: kernel, Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0},
			{Kind: ArgInt, Int: int32(planes)}, {Kind: ArgInt, Int: int32(numel(in[0]) / planes)},
		}}},
		AliasInput: -1,
	}, nil
}

func (o globalPoolOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	planes := shapes[0][0] * shapes[0][1]
	size := numel(shapes[0]) / planes
	y := make([]float32, planes)
	for i := range y {
		var sum float64
		maxV := math.Inf(-1)
		for _, v := range in[0].Data[i*size : (i+1)*size] {
			sum += float64(v)
			maxV = math.Max(maxV, float64(v))
		}
		if o.max {
			y[i] = float32(maxV)
		} else {
			y[i] = float32(sum / float64(size))
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
