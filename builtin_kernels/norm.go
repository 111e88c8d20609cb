package builtinkernels

import (
	"fmt"
	"math"
	"slices"
)

// layerNormOp is ONNX LayerNormalization: X normalized over the axes from axis on, times
// Scale plus B (each of the normalized shape, or a single value), with the optional Mean
// and InvStdDev outputs. Statistics are computed in float32 (stash_type 1).
type layerNormOp struct{}

const layerNormType = "LayerNormalization"

// geometry returns the rows and their length, and whether scale and bias are per element
// (step 1) or one value (step 0).
func (layerNormOp) geometry(p Params, in [][]int) (outer, n, sstep, bstep int, err error) {
	if err := checkCounts(layerNormType, in[:1], nil, 1, 1, 0); err != nil {
		return 0, 0, 0, 0, err
	}
	if len(in) < 2 || len(in) > 3 || in[1] == nil {
		return 0, 0, 0, 0, fmt.Errorf("%s: %d inputs, want X, Scale and an optional B", layerNormType, len(in))
	}
	x := in[0]
	axis, err := normAxis(layerNormType, "axis", paramsOr(p).Int("axis", -1), len(x))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	outer, n = numel(x[:axis]), numel(x[axis:])
	step := func(i int) (int, error) {
		switch numel(in[i]) {
		case n:
			return 1, nil
		case 1:
			return 0, nil
		}
		return 0, fmt.Errorf("%s: input %d has shape %v: want the normalized shape %v or one value", layerNormType, i, in[i], x[axis:])
	}
	if sstep, err = step(1); err != nil {
		return 0, 0, 0, 0, err
	}
	if len(in) > 2 && in[2] != nil {
		if bstep, err = step(2); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if st := paramsOr(p).Int("stash_type", 1); st != 1 {
		return 0, 0, 0, 0, fmt.Errorf("%s: stash_type %d: clhost computes the statistics in float32 (1)", layerNormType, st)
	}
	return outer, n, sstep, bstep, nil
}

// OutputShapes gives Y's shape; the optional Mean and InvStdDev outputs (see outputs)
// exist where the layer lists them.
func (o layerNormOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if _, _, _, _, err := o.geometry(p, in); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

// outputs checks the requested outputs: Y and, optionally, Mean and InvStdDev, which keep
// the axes before axis and are 1 from axis on.
func (o layerNormOp) outputs(p Params, in, out [][]int) error {
	if _, err := o.OutputShapes(p, in); err != nil {
		return err
	}
	x := in[0]
	axis, _ := normAxis(layerNormType, "axis", paramsOr(p).Int("axis", -1), len(x))
	stat := cloneShape(x)
	for i := axis; i < len(stat); i++ {
		stat[i] = 1
	}
	if len(out) != 1 && len(out) != 3 {
		return fmt.Errorf("%s: %d outputs: clhost writes Y, or Y, Mean and InvStdDev", layerNormType, len(out))
	}
	return checkOut(layerNormType, out, [][]int{cloneShape(x), stat, stat}[:len(out)])
}

func (o layerNormOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	outer, n, sstep, bstep, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	if err := o.outputs(p, in, out); err != nil {
		return nil, err
	}
	eps := paramsOr(p).Float("epsilon", 1e-5)
	hasBias, bias := 0, 1
	if len(in) > 2 && in[2] != nil {
		hasBias, bias = 1, 2
	}
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(outer, dev)
	ls := []Launch{{Kernel: "layernorm", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: bias}, {Kind: ArgOutput, Index: 0},
		{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgFloat, Float: eps},
		{Kind: ArgInt, Int: int32(hasBias)}, {Kind: ArgInt, Int: int32(sstep)}, {Kind: ArgInt, Int: int32(bstep)},
	}}}
	if g, ok := rowGroups(outer, n, dev); ok {
		ls[0] = g.launch("layernorm_wg", ls[0].Args)
	}
	if len(out) == 3 {
		ls = append(ls, Launch{Kernel: "layernorm_stats", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 1}, {Kind: ArgOutput, Index: 2},
			{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgFloat, Float: eps},
		}})
	}
	return &Plan{Source: src, Launches: ls, AliasInput: -1}, nil
}

// rowStats is the mean and 1/sqrt(variance + eps) of a row.
func rowStats(x []float32, eps float64) (float64, float64) {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	mean := s / float64(len(x))
	var q float64
	for _, v := range x {
		d := float64(v) - mean
		q += d * d
	}
	return mean, 1 / math.Sqrt(q/float64(len(x))+eps)
}

func (o layerNormOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t != nil {
			if len(t.Data) != numel(t.Shape) {
				return nil, fmt.Errorf("%s: input %d has %d values for shape %v", layerNormType, i, len(t.Data), t.Shape)
			}
			shapes[i] = t.Shape
		}
	}
	outer, n, sstep, bstep, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := o.outputs(p, shapes, out); err != nil {
		return nil, err
	}
	eps := float64(paramsOr(p).Float("epsilon", 1e-5))
	y := make([]float32, outer*n)
	mean, inv := make([]float32, outer), make([]float32, outer)
	for r := range outer {
		row := in[0].Data[r*n : (r+1)*n]
		m, s := rowStats(row, eps)
		mean[r], inv[r] = float32(m), float32(s)
		for k, v := range row {
			b := 0.0
			if len(in) > 2 && in[2] != nil {
				b = float64(in[2].Data[k*bstep])
			}
			y[r*n+k] = float32((float64(v)-m)*s*float64(in[1].Data[k*sstep]) + b)
		}
	}
	res := []*HostTensor{{Shape: cloneShape(out[0]), Data: y}}
	if len(out) == 3 {
		res = append(res, &HostTensor{Shape: cloneShape(out[1]), Data: mean}, &HostTensor{Shape: cloneShape(out[2]), Data: inv})
	}
	return res, nil
}

// instanceNormOp is ONNX InstanceNormalization: each channel of each image normalized
// over its spatial values, times scale[c] plus B[c].
type instanceNormOp struct{}

const instanceNormType = "InstanceNormalization"

func (instanceNormOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts(instanceNormType, in, nil, 3, 3, 0); err != nil {
		return nil, err
	}
	x := in[0]
	if len(x) < 3 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want N, C and a spatial axis", instanceNormType, x)
	}
	for i := 1; i < 3; i++ {
		if !sameShape(in[i], []int{x[1]}) {
			return nil, fmt.Errorf("%s: input %d has shape %v, want [%d]", instanceNormType, i, in[i], x[1])
		}
	}
	return [][]int{cloneShape(x)}, nil
}

func (o instanceNormOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(instanceNormType, out, shapes); err != nil {
		return nil, err
	}
	x := in[0]
	rows, n := x[0]*x[1], numel(x[2:])
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(rows, dev)
	l := Launch{Kernel: "instancenorm", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: 2}, {Kind: ArgOutput, Index: 0},
		{Kind: ArgInt, Int: int32(rows)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(x[1])},
		{Kind: ArgFloat, Float: paramsOr(p).Float("epsilon", 1e-5)},
	}}
	if g, ok := rowGroups(rows, n, dev); ok {
		l = g.launch("instancenorm_wg", l.Args)
	}
	return &Plan{Source: src, Launches: []Launch{l}, AliasInput: -1}, nil
}

func (o instanceNormOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(instanceNormType, o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	c, n := x.Shape[1], numel(x.Shape[2:])
	eps := float64(paramsOr(p).Float("epsilon", 1e-5))
	y := make([]float32, len(x.Data))
	for r := range x.Shape[0] * c {
		row := x.Data[r*n : (r+1)*n]
		m, s := rowStats(row, eps)
		for k, v := range row {
			y[r*n+k] = float32((float64(v)-m)*s*float64(in[1].Data[r%c]) + float64(in[2].Data[r%c]))
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// lrnOp is ONNX LRN: local response normalization across channels.
type lrnOp struct{}

func (lrnOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts("LRN", in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if len(in[0]) < 2 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want N and C first, rank 2 or more", "LRN", in[0])
	}
	if size := paramsOr(p).Int("size", 0); size < 1 {
		return nil, fmt.Errorf("%s: size %d: the attribute is required and at least 1", "LRN", size)
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o lrnOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("LRN", out, shapes); err != nil {
		return nil, err
	}
	p = paramsOr(p)
	x := in[0]
	total := numel(x)
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(total, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "lrn", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(total)},
		{Kind: ArgInt, Int: int32(x[1])}, {Kind: ArgInt, Int: int32(numel(x[2:]))}, {Kind: ArgInt, Int: int32(p.Int("size", 0))},
		{Kind: ArgFloat, Float: p.Float("alpha", 1e-4)}, {Kind: ArgFloat, Float: p.Float("beta", 0.75)}, {Kind: ArgFloat, Float: p.Float("bias", 1)},
	}}}, AliasInput: -1}, nil
}

func (o lrnOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("LRN", o, p, in, out)
	if err != nil {
		return nil, err
	}
	p = paramsOr(p)
	x := in[0]
	c, inner := x.Shape[1], numel(x.Shape[2:])
	size := int(p.Int("size", 0))
	alpha, beta, bias := float64(p.Float("alpha", 1e-4)), float64(p.Float("beta", 0.75)), float64(p.Float("bias", 1))
	y := make([]float32, len(x.Data))
	for i, v := range x.Data {
		ch := (i / inner) % c
		base := i - ch*inner
		var s float64
		for k := max(0, ch-(size-1)/2); k <= min(c-1, ch+size/2); k++ {
			q := float64(x.Data[base+k*inner])
			s += q * q
		}
		y[i] = float32(float64(v) / math.Pow(bias+alpha/float64(size)*s, beta))
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

func init() {
	Register(layerNormType, layerNormOp{})
	Register(instanceNormType, instanceNormOp{})
	Register("LRN", lrnOp{})
}

// rowGroup is a launch with a work-group of l work-items per row, for the *_wg kernels
// of reduce.cl.
type rowGroup struct{ rows, l int }

// rowGroups says whether rows of n values are better run a work-group per row (on GPUs,
// where a work-item per row leaves most of the device idle and reads with a stride of a
// row), and with how many work-items: a power of two near half the row, 32 to 256.
func rowGroups(rows, n int, dev DeviceInfo) (rowGroup, bool) {
	if !dev.IsGPU || n < 32 || dev.MaxWorkGroupSize < 32 {
		return rowGroup{}, false
	}
	l := min(256, max(32, nextPow2(ceilDiv(n, 2))))
	for l > dev.MaxWorkGroupSize {
		l /= 2
	}
	return rowGroup{rows, l}, true
}

// launch is kernel over the groups with args and, last, the local buffer the reductions
// share.
func (g rowGroup) launch(kernel string, args []Arg) Launch {
	return Launch{Kernel: kernel, Global: []int{g.rows * g.l}, Local: []int{g.l},
		Args: append(slices.Clone(args), Arg{Kind: ArgLocal, Bytes: 4 * g.l})}
}
