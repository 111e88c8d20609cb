package builtinkernels

import (
	"fmt"
	"math"
)

// clipOp is ONNX Clip: with its bounds as attributes (opsets before 11, and constant
// bounds the importer moved there) it is the element-wise kernel of elementwise.go; with
// bounds as inputs 1 and 2 (scalars computed at run time; an omitted one is no bound) it
// is y = min(max(x, lo), hi) in math.cl's broadcast kernels.
type clipOp struct{ attrs unaryOp }

func (o clipOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if len(in) <= 1 {
		return o.attrs.OutputShapes(p, in)
	}
	if len(in) > 3 || in[0] == nil {
		return nil, fmt.Errorf("%s: %d inputs, want 1 to 3", "Clip", len(in))
	}
	if err := checkShape("Clip", "input 0", in[0]); err != nil {
		return nil, err
	}
	for i, s := range in[1:] {
		if s != nil && numel(s) != 1 {
			return nil, fmt.Errorf("%s: input %d has shape %v: min and max must be scalars", "Clip", i+1, s)
		}
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o clipOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	if len(in) <= 1 {
		return o.attrs.Plan(p, in, out, dev)
	}
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Clip", out, shapes); err != nil {
		return nil, err
	}
	ys := shapes[0]
	hasLo, hasHi := in[1] != nil, len(in) > 2 && in[2] != nil
	var ls []Launch
	switch {
	case hasLo:
		l, err := binaryLaunch("Clip", binaryCode(maxFn), 0, 1, 0, ys, ys, in[1], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		if hasHi {
			if l, err = accLaunch("Clip", binaryCode(minFn), 2, 0, ys, in[2], dev); err != nil {
				return nil, err
			}
			ls = append(ls, l)
		}
	case hasHi:
		l, err := binaryLaunch("Clip", binaryCode(minFn), 0, 2, 0, ys, ys, in[2], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	default:
		n := numel(ys)
		gl, lo := flatLaunch(n, dev)
		ls = append(ls, Launch{Kernel: "unary_op", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgInt, Int: int32(unaryCode(copyFn))}, {Kind: ArgFloat}, {Kind: ArgFloat}}})
	}
	return mathPlan(ls...)
}

func (o clipOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	if len(in) <= 1 {
		return o.attrs.Reference(p, in, out)
	}
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t != nil {
			shapes[i] = t.Shape
			if len(t.Data) != numel(t.Shape) {
				return nil, fmt.Errorf("%s: input %d has %d values for shape %v", "Clip", i, len(t.Data), t.Shape)
			}
		}
	}
	want, err := o.OutputShapes(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Clip", out, want); err != nil {
		return nil, err
	}
	y := make([]float32, len(in[0].Data))
	for i, v := range in[0].Data {
		x := float64(v)
		if in[1] != nil {
			x = nanOr(x, float64(in[1].Data[0]), math.Max)
		}
		if len(in) > 2 && in[2] != nil {
			x = nanOr(x, float64(in[2].Data[0]), math.Min)
		}
		y[i] = float32(x)
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
