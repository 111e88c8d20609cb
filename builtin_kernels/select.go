package builtinkernels

import (
	"fmt"
	"sort"
)

// gatherElementsOp is ONNX GatherElements: y takes the indices' shape, each element read
// from data at its own index with the axis's coordinate replaced by the index there.
type gatherElementsOp struct{}

const gatherElementsType = "GatherElements"

func (gatherElementsOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(gatherElementsType, in, nil, 2, 2, 0); err != nil {
		return nil, err
	}
	x, idx := in[0], in[1]
	if len(idx) != len(x) || len(x) > 6 {
		return nil, fmt.Errorf("%s: data %v and indices %v: want the same rank, at most 6", gatherElementsType, x, idx)
	}
	axis, err := normAxis(gatherElementsType, "axis", paramsOr(p).Int("axis", 0), len(x))
	if err != nil {
		return nil, err
	}
	for i := range x {
		if i != axis && idx[i] > x[i] {
			return nil, fmt.Errorf("%s: indices %v exceed data %v on axis %d", gatherElementsType, idx, x, i)
		}
	}
	return [][]int{cloneShape(idx)}, nil
}

func (o gatherElementsOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(gatherElementsType, out, shapes); err != nil {
		return nil, err
	}
	x, idx := in[0], in[1]
	axis, _ := normAxis(gatherElementsType, "axis", paramsOr(p).Int("axis", 0), len(x))
	d, _, _ := sixDims(idx, nil)
	var st [6]int
	off := 6 - len(x)
	copy(st[off:], contiguousStrides(x))
	n := numel(idx)
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgOutput, Index: 0},
		{Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(off + axis)}, {Kind: ArgInt, Int: int32(x[axis])}}
	args = append(args, intArgs(append(d[1:], st[:]...)...)...)
	gl, lo := flatLaunch(n, dev)
	return layoutPlan(Launch{Kernel: "gather_elements", Global: gl, Local: lo, Args: args})
}

func (o gatherElementsOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(gatherElementsType, o, p, in, out)
	if err != nil {
		return nil, err
	}
	x, idx := in[0], in[1]
	axis, _ := normAxis(gatherElementsType, "axis", paramsOr(p).Int("axis", 0), len(x.Shape))
	st := contiguousStrides(x.Shape)
	y := make([]float32, len(idx.Data))
	for i, f := range idx.Data {
		c := unravelIndex(i, idx.Shape)
		v := int(f)
		if v < 0 {
			v += x.Shape[axis]
		}
		if v < 0 || v >= x.Shape[axis] {
			return nil, fmt.Errorf("%s: index %v is out of range for an axis of %d", gatherElementsType, f, x.Shape[axis])
		}
		c[axis] = v
		src := 0
		for k, q := range c {
			src += q * st[k]
		}
		y[i] = x.Data[src]
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// triluOp is ONNX Trilu: the upper (or lower) triangle of the last two axes from diagonal
// k (a load-time input the importer turns into the attribute), the rest 0.
type triluOp struct{}

func (triluOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts("Trilu", in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if len(in[0]) < 2 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want rank 2 or more", "Trilu", in[0])
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o triluOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Trilu", out, shapes); err != nil {
		return nil, err
	}
	x := in[0]
	n := numel(x)
	k := paramsOr(p).Int("k", 0)
	k = max(min(k, int64(maxElements)), -int64(maxElements))
	gl, lo := flatLaunch(n, dev)
	return layoutPlan(Launch{Kernel: "trilu", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
		{Kind: ArgInt, Int: int32(x[len(x)-2])}, {Kind: ArgInt, Int: int32(x[len(x)-1])},
		{Kind: ArgInt, Int: int32(k)}, {Kind: ArgInt, Int: int32(paramsOr(p).Int("upper", 1))},
	}})
}

func (o triluOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("Trilu", o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	r := len(x.Shape)
	m, cols := x.Shape[r-2], x.Shape[r-1]
	k := paramsOr(p).Int("k", 0)
	upper := paramsOr(p).Int("upper", 1) != 0
	y := make([]float32, len(x.Data))
	for e, v := range x.Data {
		i, j := int64((e/cols)%m), int64(e%cols)
		if (upper && j-i >= k) || (!upper && j-i <= k) {
			y[e] = v
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// cumSumOp is ONNX CumSum along the axis (a load-time input the importer turns into the
// attribute).
type cumSumOp struct{}

func (cumSumOp) split(p Params, in [][]int) (outer, n, inner int, err error) {
	if err := checkCounts("CumSum", in, nil, 1, 1, 0); err != nil {
		return 0, 0, 0, err
	}
	if !paramsOr(p).Has("axis") {
		return 0, 0, 0, fmt.Errorf("%s: the axis (input 1) is required", "CumSum")
	}
	axis, err := normAxis("CumSum", "axis", paramsOr(p).Int("axis", 0), len(in[0]))
	if err != nil {
		return 0, 0, 0, err
	}
	s := in[0]
	return numel(s[:axis]), s[axis], numel(s[axis+1:]), nil
}

func (o cumSumOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if _, _, _, err := o.split(p, in); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o cumSumOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	outer, n, inner, err := o.split(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("CumSum", out, [][]int{in[0]}); err != nil {
		return nil, err
	}
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	p = paramsOr(p)
	gl, lo := flatLaunch(outer*inner, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "cumsum", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(outer)},
		{Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(inner)},
		{Kind: ArgInt, Int: int32(p.Int("exclusive", 0))}, {Kind: ArgInt, Int: int32(p.Int("reverse", 0))},
	}}}, AliasInput: -1}, nil
}

func (o cumSumOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors("CumSum", in)
	if err != nil {
		return nil, err
	}
	outer, n, inner, err := o.split(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("CumSum", out, [][]int{shapes[0]}); err != nil {
		return nil, err
	}
	p = paramsOr(p)
	excl, rev := p.Int("exclusive", 0) != 0, p.Int("reverse", 0) != 0
	x := in[0].Data
	y := make([]float32, len(x))
	for a := range outer {
		for b := range inner {
			var s float64
			for t := range n {
				k := t
				if rev {
					k = n - 1 - t
				}
				at := (a*n+k)*inner + b
				if excl {
					y[at] = float32(s)
					s += float64(x[at])
				} else {
					s += float64(x[at])
					y[at] = float32(s)
				}
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(shapes[0]), Data: y}}, nil
}

// topKOp is ONNX TopK: the k largest (or smallest) values along an axis and their
// indices (as float32), sorted, ties to the lower index; k is a load-time input the
// importer turns into the attribute.
type topKOp struct{}

func (topKOp) split(p Params, in [][]int) (outer, n, inner, k int, err error) {
	if err := checkCounts("TopK", in, nil, 1, 1, 0); err != nil {
		return 0, 0, 0, 0, err
	}
	axis, err := normAxis("TopK", "axis", paramsOr(p).Int("axis", -1), len(in[0]))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	s := in[0]
	kk := paramsOr(p).Int("k", 0)
	if kk < 1 || kk > int64(s[axis]) {
		return 0, 0, 0, 0, fmt.Errorf("%s: k %d: want 1 to the axis's %d (k is a load-time input)", "TopK", kk, s[axis])
	}
	return numel(s[:axis]), s[axis], numel(s[axis+1:]), int(kk), nil
}

func (o topKOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	_, _, _, k, err := o.split(p, in)
	if err != nil {
		return nil, err
	}
	axis, _ := normAxis("TopK", "axis", paramsOr(p).Int("axis", -1), len(in[0]))
	s := cloneShape(in[0])
	s[axis] = k
	return [][]int{s, cloneShape(s)}, nil
}

func (o topKOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("TopK", out, shapes); err != nil {
		return nil, err
	}
	outer, n, inner, k, _ := o.split(p, in)
	src, err := reduceSource()
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(outer*inner, dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "topk", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgOutput, Index: 1},
		{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(inner)},
		{Kind: ArgInt, Int: int32(k)}, {Kind: ArgInt, Int: int32(paramsOr(p).Int("largest", 1))},
	}}}, AliasInput: -1}, nil
}

// Reference sorts each row stably by value.
func (o topKOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors("TopK", in)
	if err != nil {
		return nil, err
	}
	want, err := o.OutputShapes(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("TopK", out, want); err != nil {
		return nil, err
	}
	outer, n, inner, k, _ := o.split(p, shapes)
	largest := paramsOr(p).Int("largest", 1) != 0
	x := in[0].Data
	vals, idxs := make([]float32, outer*k*inner), make([]float32, outer*k*inner)
	order := make([]int, n)
	for a := range outer {
		for b := range inner {
			at := func(j int) float32 { return x[(a*n+j)*inner+b] }
			for j := range order {
				order[j] = j
			}
			sort.SliceStable(order, func(u, v int) bool {
				if largest {
					return at(order[u]) > at(order[v])
				}
				return at(order[u]) < at(order[v])
			})
			for r := range k {
				vals[(a*k+r)*inner+b] = at(order[r])
				idxs[(a*k+r)*inner+b] = float32(order[r])
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: vals}, {Shape: cloneShape(want[1]), Data: idxs}}, nil
}

func init() {
	Register(gatherElementsType, gatherElementsOp{})
	Register("Trilu", triluOp{})
	Register("CumSum", cumSumOp{})
	Register("TopK", topKOp{})
}
