package builtinkernels

import (
	"fmt"
	"math"
)

// math.cl's unary_op: the element-wise ops of one operand, their attributes and CPU
// references.

// unaryMath is one element-wise op of math.cl's unary_op: its code there, how its two
// float parameters come from the attributes, and its CPU reference.
type unaryMath struct {
	code  int
	attrs func(Params) (float32, float32, error)
	f     func(x, a, b float64) float64
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

// unaryMaths are the unary ops math.cl computes, by ONNX name.
var unaryMaths = map[string]unaryMath{
	"Abs":        {0, noAttrs, func(x, _, _ float64) float64 { return math.Abs(x) }},
	"Neg":        {1, noAttrs, func(x, _, _ float64) float64 { return -x }},
	"Exp":        {2, noAttrs, func(x, _, _ float64) float64 { return math.Exp(x) }},
	"Log":        {3, noAttrs, func(x, _, _ float64) float64 { return math.Log(x) }},
	"Sqrt":       {4, noAttrs, func(x, _, _ float64) float64 { return math.Sqrt(x) }},
	"Reciprocal": {5, noAttrs, func(x, _, _ float64) float64 { return 1 / x }},
	"Floor":      {6, noAttrs, func(x, _, _ float64) float64 { return math.Floor(x) }},
	"Ceil":       {7, noAttrs, func(x, _, _ float64) float64 { return math.Ceil(x) }},
	"Round":      {8, noAttrs, func(x, _, _ float64) float64 { return math.RoundToEven(x) }},
	"Sign": {9, noAttrs, func(x, _, _ float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	}},
	"Sin":      {10, noAttrs, func(x, _, _ float64) float64 { return math.Sin(x) }},
	"Cos":      {11, noAttrs, func(x, _, _ float64) float64 { return math.Cos(x) }},
	"Tan":      {12, noAttrs, func(x, _, _ float64) float64 { return math.Tan(x) }},
	"Asin":     {13, noAttrs, func(x, _, _ float64) float64 { return math.Asin(x) }},
	"Acos":     {14, noAttrs, func(x, _, _ float64) float64 { return math.Acos(x) }},
	"Atan":     {15, noAttrs, func(x, _, _ float64) float64 { return math.Atan(x) }},
	"Sinh":     {16, noAttrs, func(x, _, _ float64) float64 { return math.Sinh(x) }},
	"Cosh":     {17, noAttrs, func(x, _, _ float64) float64 { return math.Cosh(x) }},
	"Asinh":    {18, noAttrs, func(x, _, _ float64) float64 { return math.Asinh(x) }},
	"Acosh":    {19, noAttrs, func(x, _, _ float64) float64 { return math.Acosh(x) }},
	"Atanh":    {20, noAttrs, func(x, _, _ float64) float64 { return math.Atanh(x) }},
	"Erf":      {21, noAttrs, func(x, _, _ float64) float64 { return math.Erf(x) }},
	"Softplus": {22, noAttrs, func(x, _, _ float64) float64 { return softplus(x) }},
	"Softsign": {23, noAttrs, func(x, _, _ float64) float64 { return x / (1 + math.Abs(x)) }},
	"Elu": {24, attr1("alpha", 1), func(x, a, _ float64) float64 {
		if x > 0 {
			return x
		}
		return a * (math.Exp(x) - 1)
	}},
	"Selu": {25, seluAttrs, func(x, a, g float64) float64 {
		if x > 0 {
			return g * x
		}
		return g * (a*math.Exp(x) - a)
	}},
	"Celu": {26, celuAttrs, func(x, a, _ float64) float64 {
		return math.Max(x, 0) + math.Min(0, a*(math.Exp(x/a)-1))
	}},
	"ThresholdedRelu": {27, attr1("alpha", 1), func(x, a, _ float64) float64 {
		if x > a {
			return x
		}
		return 0
	}},
	"Gelu": {28, geluAttrs, func(x, _, tanhForm float64) float64 {
		if tanhForm != 0 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	}},
	"Mish":  {30, noAttrs, func(x, _, _ float64) float64 { return x * math.Tanh(softplus(x)) }},
	"Not":   {31, noAttrs, func(x, _, _ float64) float64 { return b2f(x == 0) }},
	"IsNaN": {32, noAttrs, func(x, _, _ float64) float64 { return b2f(math.IsNaN(x)) }},
	"IsInf": {33, isInfAttrs, func(x, pos, neg float64) float64 {
		return b2f((math.IsInf(x, 1) && pos != 0) || (math.IsInf(x, -1) && neg != 0))
	}},
	"Shrink": {38, shrinkAttrs, func(x, l, b float64) float64 {
		switch {
		case x < -l:
			return x + b
		case x > l:
			return x - b
		}
		return 0
	}},
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
		u = unaryMaths[o.typ]
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
	src, err := kernelSource("math.cl")
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
