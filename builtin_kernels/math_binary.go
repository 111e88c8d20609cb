package builtinkernels

import "fmt"

// math.cl's binary kernels: two-operand ops with numpy broadcasting, the launches
// that broadcast operands to the output, and the CPU broadcasting reference.

// mathBinaryOp is a two-operand op of math.cl with numpy broadcasting.
type mathBinaryOp struct{ typ string }

func (o mathBinaryOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 2, 2, 0); err != nil {
		return nil, err
	}
	s, err := broadcastShapes(o.typ, in[0], in[1])
	if err != nil {
		return nil, err
	}
	if o.typ == "PRelu" && !sameShape(s, in[0]) {
		return nil, fmt.Errorf("%s: slope %v does not broadcast to X %v", o.typ, in[1], in[0])
	}
	if o.typ == "Mod" && paramsOr(p).Int("fmod", 0) != 1 {
		return nil, fmt.Errorf("%s: fmod 0 (integer modulo, the sign of the divisor) is not supported: clhost computes in float32, fmod=1", o.typ)
	}
	return [][]int{s}, nil
}

func (o mathBinaryOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	l, err := binaryLaunch(o.typ, binaryCode(o.typ), 0, 1, 0, shapes[0], in[0], in[1], dev)
	if err != nil {
		return nil, err
	}
	return mathPlan(l)
}

// bcastArgs merges the dimensions of output shape ys and the operands' broadcast strides
// and right-aligns them into math.cl's six: d1..d5 (d0 follows from the element count),
// then six strides per operand.
func bcastArgs(typ string, ys []int, operands ...[]int) ([]Arg, error) {
	strides := make([][]int, len(operands))
	for i, s := range operands {
		strides[i] = broadcastStrides(s, ys)
	}
	dims, st := coalesce(ys, strides...)
	if len(dims) > maxBcastRank {
		return nil, fmt.Errorf("%s: broadcasting %v to %v needs %d index dimensions after merging, the kernels handle %d", typ, operands, ys, len(dims), maxBcastRank)
	}
	var d [maxBcastRank]int
	for i := range d {
		d[i] = 1
	}
	off := maxBcastRank - len(dims)
	copy(d[off:], dims)
	var args []Arg
	args = append(args, intArgs(d[1:]...)...)
	for k := range operands {
		var s [maxBcastRank]int
		copy(s[off:], st[k])
		args = append(args, intArgs(s[:]...)...)
	}
	return args, nil
}

// binaryLaunch is y = f(input a, input b) into output 0 of shape ys.
func binaryLaunch(typ string, code int, a, b int, s float32, ys, as, bs []int, dev DeviceInfo) (Launch, error) {
	n := numel(ys)
	gl, lo := flatLaunch(n, dev)
	args := []Arg{{Kind: ArgInput, Index: a}, {Kind: ArgInput, Index: b}, {Kind: ArgOutput, Index: 0},
		{Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(code)}, {Kind: ArgFloat, Float: s}}
	if sameShape(as, ys) && sameShape(bs, ys) {
		return Launch{Kernel: "binary_same", Global: gl, Local: lo, Args: args}, nil
	}
	more, err := bcastArgs(typ, ys, as, bs)
	if err != nil {
		return Launch{}, err
	}
	return Launch{Kernel: "binary_bcast", Global: gl, Local: lo, Args: append(args, more...)}, nil
}

// accLaunch is y = f(y, input b) on output 0 of shape ys.
func accLaunch(typ string, code int, b int, s float32, ys, bs []int, dev DeviceInfo) (Launch, error) {
	n := numel(ys)
	gl, lo := flatLaunch(n, dev)
	more, err := bcastArgs(typ, ys, bs)
	if err != nil {
		return Launch{}, err
	}
	args := []Arg{{Kind: ArgOutput, Index: 0}, {Kind: ArgInput, Index: b},
		{Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(code)}, {Kind: ArgFloat, Float: s}}
	return Launch{Kernel: "binary_acc", Global: gl, Local: lo, Args: append(args, more...)}, nil
}

func (o mathBinaryOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	r, _ := binaryRow(o.typ)
	f := r.ref
	y := broadcastRef(want[0], in, func(v []float64) float64 { return f(v[0], v[1]) })
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// broadcastRef computes y[i] = f(operands at i) over output shape ys with numpy
// broadcasting: an operand's dimensions align at the right, and a size-1 dimension
// repeats its only element.
func broadcastRef(ys []int, in []*HostTensor, f func(v []float64) float64) []float32 {
	y := make([]float32, numel(ys))
	idx := make([]int, len(ys))
	v := make([]float64, len(in))
	for i := range y {
		r := i
		for j := len(ys) - 1; j >= 0; j-- {
			idx[j] = r % ys[j]
			r /= ys[j]
		}
		for k, t := range in {
			off := 0
			for j, d := range t.Shape {
				q := idx[len(ys)-len(t.Shape)+j]
				if d == 1 {
					q = 0
				}
				off = off*d + q
			}
			v[k] = float64(t.Data[off])
		}
		y[i] = float32(f(v))
	}
	return y
}
