package builtinkernels

import (
	"fmt"
	"math"
)

// math.cl's unary_op: the element-wise rows of one operand that have no kernel of their
// own (elementwise_table.go), and their attributes.

// unaryMath is a unary row as one layer runs it: its code in math.cl's unary_f, how its
// two float parameters come from the attributes, and its CPU reference.
type unaryMath struct {
	code  int
	attrs func(Params) (float32, float32, error)
	f     func(x, a, b float64) float64
}

// mathOf is the unaryMath of the row named name.
func mathOf(name string) unaryMath {
	r, _ := unaryRow(name)
	return unaryMath{code: unaryCode(name), attrs: r.attrs, f: r.ref}
}

func noAttrs(Params) (float32, float32, error) { return 0, 0, nil }

func attr1(name string, def float32) func(Params) (float32, float32, error) {
	return func(p Params) (float32, float32, error) { return p.Float(name, def), 0, nil }
}

func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func seluAttrs(p Params) (float32, float32, error) {
	return p.Float("alpha", 1.67326319217681884765625), p.Float("gamma", 1.05070102214813232421875), nil
}

func celuAttrs(p Params) (float32, float32, error) {
	a := p.Float("alpha", 1)
	if a == 0 {
		return 0, 0, fmt.Errorf("%s: alpha 0: the op divides by alpha", "Celu")
	}
	return a, 0, nil
}

func geluAttrs(p Params) (float32, float32, error) {
	switch s := p.String("approximate", "none"); s {
	case "none":
		return 0, 0, nil
	case "tanh":
		return 0, 1, nil
	default:
		return 0, 0, fmt.Errorf("%s: approximate %q: want none or tanh", "Gelu", s)
	}
}

func isInfAttrs(p Params) (float32, float32, error) {
	return float32(p.Int("detect_positive", 1)), float32(p.Int("detect_negative", 1)), nil
}

func shrinkAttrs(p Params) (float32, float32, error) {
	return p.Float("lambd", 0.5), p.Float("bias", 0), nil
}

// mathUnaryOp is a unary op of math.cl.
type mathUnaryOp struct{ typ string }

func (o mathUnaryOp) spec(p Params) (unaryMath, float32, float32, error) {
	p = paramsOr(p)
	var u unaryMath
	if o.typ == "Cast" {
		var err error
		if u, err = castMath(p); err != nil {
			return u, 0, 0, err
		}
	} else {
		u = mathOf(o.typ)
	}
	a, b, err := u.attrs(p)
	return u, a, b, err
}

func (o mathUnaryOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if _, _, _, err := o.spec(p); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o mathUnaryOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	u, a, b, _ := o.spec(p)
	src, err := mathSource()
	if err != nil {
		return nil, err
	}
	n := numel(in[0])
	if o.typ == "Gelu" || o.typ == "Erf" {
		// erf_vec's forms: Gelu with erf, Gelu with tanh, Erf.
		form := int32(0)
		switch {
		case o.typ == "Erf":
			form = 2
		case b != 0:
			form = 1
		}
		gl, lo := flatLaunch(ceilDiv(n, 8), dev)
		return &Plan{
			Source: src,
			Launches: []Launch{{Kernel: "erf_vec", Global: gl, Local: lo, Args: []Arg{
				{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: form},
			}}},
			AliasInput: -1,
		}, nil
	}
	gl, lo := flatLaunch(n, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: "unary_op", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgInt, Int: int32(u.code)}, {Kind: ArgFloat, Float: a}, {Kind: ArgFloat, Float: b},
		}}},
		AliasInput: -1,
	}, nil
}

func (o mathUnaryOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	u, a, b, _ := o.spec(p)
	y := make([]float32, len(in[0].Data))
	for i, v := range in[0].Data {
		y[i] = float32(u.f(float64(v), float64(a), float64(b)))
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
