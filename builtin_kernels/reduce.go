package builtinkernels

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/clhost/clhost/internal/opspec"
)

// reduceTypes are the reductions of reduce.cl's reduce_axes; an op's code there is its
// place here, defined for the kernel as OP_<type> (reduceSource).
var reduceTypes = []string{
	"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
	"ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin",
}

// reduceSource is reduce.cl with the OP_<type> codes of reduceTypes defined ahead of it.
var reduceSource = sync.OnceValues(func() (string, error) {
	var d defines
	for i, typ := range reduceTypes {
		d.int("OP_"+typ, i)
	}
	return d.program("reduce.cl")
})

// reduceOp is an ONNX reduction over a set of axes (the axes attribute, every axis by
// default), or ArgMax/ArgMin over one (the index as a float32, clhost's one type).
type reduceOp struct{ typ string }

func (o reduceOp) isArg() bool { return o.typ == "ArgMax" || o.typ == "ArgMin" }

// axes marks the reduced axes of an input of rank r.
func (o reduceOp) axes(p Params, r int) ([]bool, error) {
	p = paramsOr(p)
	if o.isArg() {
		axis, err := normAxis(o.typ, "axis", p.Int("axis", 0), r)
		if err != nil {
			return nil, err
		}
		red := make([]bool, r)
		red[axis] = true
		return red, nil
	}
	red, err := opspec.ReduceAxes(p.Ints("axes", nil), p.Int("noop_with_empty_axes", 0) != 0, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.typ, err)
	}
	return red, nil
}

func (o reduceOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	red, err := o.axes(p, len(in[0]))
	if err != nil {
		return nil, err
	}
	return [][]int{opspec.ReducedShape(in[0], red, paramsOr(p).Int("keepdims", 1) != 0)}, nil
}

// groups splits x's axes into the kept and the reduced ones with their strides, each
// group merged where contiguous.
func reduceGroups(x []int, red []bool) (kd []int, ks []int, rd []int, rs []int) {
	st := contiguousStrides(x)
	var kdim, kst, rdim, rst []int
	for i, d := range x {
		if red[i] {
			rdim, rst = append(rdim, d), append(rst, st[i])
		} else {
			kdim, kst = append(kdim, d), append(kst, st[i])
		}
	}
	kd, kss := coalesce(kdim, kst)
	rd, rss := coalesce(rdim, rst)
	return kd, kss[0], rd, rss[0]
}

// sixDims right-aligns dims and strides into six: sizes 1 and strides 0 in front.
func sixDims(dims, strides []int) ([6]int, [6]int, bool) {
	var d, s [6]int
	for i := range d {
		d[i] = 1
	}
	if len(dims) > 6 {
		return d, s, false
	}
	off := 6 - len(dims)
	copy(d[off:], dims)
	copy(s[off:], strides)
	return d, s, true
}

func (o reduceOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	red, _ := o.axes(p, len(in[0]))
	kd, ks, rd, rs := reduceGroups(in[0], red)
	kdim, kst, ok1 := sixDims(kd, ks)
	rdim, rst, ok2 := sixDims(rd, rs)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s: %v reduced over %v needs more than 6 index dimensions after merging", o.typ, in[0], red)
	}
	n, m := numel(shapes[0]), numel(rd)
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
		{Kind: ArgInt, Int: int32(slices.Index(reduceTypes, o.typ))}, {Kind: ArgInt, Int: int32(paramsOr(p).Int("select_last_index", 0))}}
	args = append(args, intArgs(kdim[1:]...)...)
	args = append(args, intArgs(kst[:]...)...)
	args = append(args, intArgs(m)...)
	args = append(args, intArgs(rdim[1:]...)...)
	args = append(args, intArgs(rst[:]...)...)
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(n, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "reduce_axes", Global: gl, Local: lo, Args: args}}, AliasInput: -1}, nil
}

func (o reduceOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	red, _ := o.axes(p, len(x.Shape))
	last := paramsOr(p).Int("select_last_index", 0) != 0
	// Group the input's elements by their kept index, in order.
	keptIndex := func(i int) int {
		idx := unravelIndex(i, x.Shape)
		k := 0
		for a, d := range x.Shape {
			if !red[a] {
				k = k*d + idx[a]
			}
		}
		return k
	}
	groups := make([][]float64, numel(want[0]))
	for i, v := range x.Data {
		k := keptIndex(i)
		groups[k] = append(groups[k], float64(v))
	}
	y := make([]float32, len(groups))
	for k, g := range groups {
		y[k] = float32(reduceRef(o.typ, g, last))
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// reduceRef reduces the values of one group, in their index order.
func reduceRef(typ string, g []float64, last bool) float64 {
	var acc float64
	switch typ {
	case "ReduceMax":
		acc = math.Inf(-1)
	case "ReduceMin":
		acc = math.Inf(1)
	case "ReduceProd":
		acc = 1
	}
	mx := math.Inf(-1)
	for _, v := range g {
		mx = math.Max(mx, v)
	}
	arg := 0
	for j, v := range g {
		switch typ {
		case "ReduceSum", "ReduceMean", "ReduceLogSum":
			acc += v
		case "ReduceMax":
			acc = math.Max(acc, v)
		case "ReduceMin":
			acc = math.Min(acc, v)
		case "ReduceProd":
			acc *= v
		case "ReduceL1":
			acc += math.Abs(v)
		case "ReduceL2", "ReduceSumSquare":
			acc += v * v
		case "ReduceLogSumExp":
			acc += math.Exp(v - mx)
		case "ArgMax":
			if j == 0 || v > acc || (last && v == acc) {
				acc, arg = v, j
			}
		case "ArgMin":
			if j == 0 || v < acc || (last && v == acc) {
				acc, arg = v, j
			}
		}
	}
	switch typ {
	case "ReduceMean":
		return acc / float64(len(g))
	case "ReduceL2":
		return math.Sqrt(acc)
	case "ReduceLogSum":
		return math.Log(acc)
	case "ReduceLogSumExp":
		return mx + math.Log(acc)
	case "ArgMax", "ArgMin":
		return float64(arg)
	}
	return acc
}

// softmaxLikeOp is LogSoftmax or Hardmax along one axis (opset-13 semantics; the
// importer rewrites older ones as for Softmax).
type softmaxLikeOp struct{ typ string }

func (o softmaxLikeOp) split(p Params, in [][]int) (outer, n, inner int, err error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return 0, 0, 0, err
	}
	s := in[0]
	axis, err := normAxis(o.typ, "axis", paramsOr(p).Int("axis", -1), len(s))
	if err != nil {
		return 0, 0, 0, err
	}
	return numel(s[:axis]), s[axis], numel(s[axis+1:]), nil
}

func (o softmaxLikeOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if _, _, _, err := o.split(p, in); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o softmaxLikeOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	outer, n, inner, err := o.split(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, [][]int{in[0]}); err != nil {
		return nil, err
	}
	op := 0
	if o.typ == "Hardmax" {
		op = 1
	}
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(outer*inner, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "softmax_like", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(outer)},
		{Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(inner)}, {Kind: ArgInt, Int: int32(op)},
	}}}, AliasInput: -1}, nil
}

func (o softmaxLikeOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors(o.typ, in)
	if err != nil {
		return nil, err
	}
	outer, n, inner, err := o.split(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, [][]int{shapes[0]}); err != nil {
		return nil, err
	}
	x := in[0].Data
	y := make([]float32, len(x))
	for a := range outer {
		for b := range inner {
			at := func(k int) int { return (a*n+k)*inner + b }
			mx, arg := float64(x[at(0)]), 0
			for k := 1; k < n; k++ {
				if v := float64(x[at(k)]); v > mx {
					mx, arg = v, k
				}
			}
			var sum float64
			for k := range n {
				sum += math.Exp(float64(x[at(k)]) - mx)
			}
			for k := range n {
				if o.typ == "Hardmax" {
					y[at(k)] = float32(b2f(k == arg))
				} else {
					y[at(k)] = float32(float64(x[at(k)]) - mx - math.Log(sum))
				}
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(shapes[0]), Data: y}}, nil
}

// mvnOp is ONNX MeanVarianceNormalization: (x - mean) / sqrt(variance + 1e-9) over the
// axes attribute (N, H and W by default).
type mvnOp struct{}

const mvnType = "MeanVarianceNormalization"

func (mvnOp) reduced(p Params, r int) ([]bool, error) {
	red, err := opspec.ReduceAxes(paramsOr(p).Ints("axes", []int64{0, 2, 3}), false, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mvnType, err)
	}
	return red, nil
}

func (o mvnOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(mvnType, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if _, err := o.reduced(p, len(in[0])); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o mvnOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(mvnType, out, shapes); err != nil {
		return nil, err
	}
	red, _ := o.reduced(p, len(in[0]))
	kd, ks, rd, rs := reduceGroups(in[0], red)
	kdim, kst, ok1 := sixDims(kd, ks)
	rdim, rst, ok2 := sixDims(rd, rs)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s: %v over %v needs more than 6 index dimensions after merging", mvnType, in[0], red)
	}
	n := numel(kd)
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)}}
	args = append(args, intArgs(append(append(append(append(kdim[1:], kst[:]...), numel(rd)), rdim[1:]...), rst[:]...)...)...)
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(n, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "mvn_axes", Global: gl, Local: lo, Args: args}}, AliasInput: -1}, nil
}

func (o mvnOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(mvnType, o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	red, _ := o.reduced(p, len(x.Shape))
	var members [][]int
	index := map[int]int{}
	for i := range x.Data {
		idx := unravelIndex(i, x.Shape)
		k := 0
		for a, d := range x.Shape {
			if !red[a] {
				k = k*d + idx[a]
			}
		}
		g, ok := index[k]
		if !ok {
			g = len(members)
			index[k] = g
			members = append(members, nil)
		}
		members[g] = append(members[g], i)
	}
	y := make([]float32, len(x.Data))
	for _, mem := range members {
		var s, q float64
		for _, i := range mem {
			s += float64(x.Data[i])
		}
		mean := s / float64(len(mem))
		for _, i := range mem {
			d := float64(x.Data[i]) - mean
			q += d * d
		}
		inv := 1 / math.Sqrt(q/float64(len(mem))+1e-9)
		for _, i := range mem {
			y[i] = float32((float64(x.Data[i]) - mean) * inv)
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

func init() {
	Register(mvnType, mvnOp{})
	for _, typ := range reduceTypes {
		Register(typ, reduceOp{typ: typ})
	}
	Register("LogSoftmax", softmaxLikeOp{typ: "LogSoftmax"})
	Register("Hardmax", softmaxLikeOp{typ: "Hardmax"})
}

// unravelIndex is the multi-index of element i of a C-order tensor of shape s.
func unravelIndex(i int, s []int) []int {
	idx := make([]int, len(s))
	for j := len(s) - 1; j >= 0; j-- {
		idx[j] = i % s[j]
		i /= s[j]
	}
	return idx
}
