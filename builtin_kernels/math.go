package builtinkernels

import (
	"fmt"
	"math"
)

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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
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

// ONNX TensorProto data types Cast converts to.
const (
	onnxFloat    = 1
	onnxUint8    = 2
	onnxInt8     = 3
	onnxUint16   = 4
	onnxInt16    = 5
	onnxInt32    = 6
	onnxInt64    = 7
	onnxBool     = 9
	onnxFloat16  = 10
	onnxDouble   = 11
	onnxUint32   = 12
	onnxUint64   = 13
	onnxBfloat16 = 16
)

// castMath is Cast as a unary op: every activation is float32, so a cast rounds the value
// to what the target type holds (truncation and wrap-around for integers, 0/1 for bool,
// the nearest float16 or bfloat16) and keeps it as float32.
func castMath(p Params) (unaryMath, error) {
	to := p.Int("to", 0)
	integer := func(bits int, signed bool) unaryMath {
		s := float32(0)
		if signed {
			s = 1
		}
		return unaryMath{34, func(Params) (float32, float32, error) { return float32(bits), s, nil }, func(x, _, _ float64) float64 {
			return wrapInt(math.Trunc(x), bits, signed)
		}}
	}
	switch to {
	case onnxFloat, onnxDouble:
		return unaryMath{40, noAttrs, func(x, _, _ float64) float64 { return x }}, nil
	case onnxUint8:
		return integer(8, false), nil
	case onnxInt8:
		return integer(8, true), nil
	case onnxUint16:
		return integer(16, false), nil
	case onnxInt16:
		return integer(16, true), nil
	case onnxInt32, onnxInt64, onnxUint32, onnxUint64:
		return integer(32, true), nil
	case onnxBool:
		return unaryMath{35, noAttrs, func(x, _, _ float64) float64 { return b2f(x != 0) }}, nil
	case onnxFloat16:
		return unaryMath{36, noAttrs, func(x, _, _ float64) float64 { return roundToBits(x, 10, -14, 65504) }}, nil
	case onnxBfloat16:
		return unaryMath{37, noAttrs, func(x, _, _ float64) float64 { return roundToBits(x, 7, -126, math.MaxFloat32) }}, nil
	}
	return unaryMath{}, fmt.Errorf("%s: to %d: clhost casts to float, double, float16, bfloat16, bool and 8- to 64-bit integers", "Cast", to)
}

// wrapInt reduces an integer value modulo 2^bits into the range of a bits-wide integer
// type, as C's conversions do; 32 bits and more are kept as they are.
func wrapInt(t float64, bits int, signed bool) float64 {
	if bits >= 32 {
		return t
	}
	m := math.Ldexp(1, bits)
	t -= math.Floor(t/m) * m
	if signed && t >= m/2 {
		t -= m
	}
	return t
}

// roundToBits is math.cl's round_to_bits: the nearest value with bits fraction bits,
// ties to even, exponents floored at minExp, beyond maxFinite infinity.
func roundToBits(v float64, bits, minExp int, maxFinite float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f32 := float64(float32(v))
	_, e := math.Frexp(f32)
	e = max(e-1, minExp)
	q := math.Ldexp(1, e-bits)
	r := math.RoundToEven(f32/q) * q
	if math.Abs(r) > maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	return r
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

// binaryMath is one op of math.cl's binary kernels: its code and CPU reference.
type binaryMath struct {
	code int
	f    func(a, b float64) float64
}

func nanOr(a, b float64, f func(a, b float64) float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return f(a, b)
}

// binaryMaths are the binary ops math.cl computes, by ONNX name.
var binaryMaths = map[string]binaryMath{
	"Pow":            {4, math.Pow},
	"Equal":          {7, func(a, b float64) float64 { return b2f(a == b) }},
	"Less":           {8, func(a, b float64) float64 { return b2f(a < b) }},
	"Greater":        {9, func(a, b float64) float64 { return b2f(a > b) }},
	"LessOrEqual":    {10, func(a, b float64) float64 { return b2f(a <= b) }},
	"GreaterOrEqual": {11, func(a, b float64) float64 { return b2f(a >= b) }},
	"And":            {12, func(a, b float64) float64 { return b2f(a != 0 && b != 0) }},
	"Or":             {13, func(a, b float64) float64 { return b2f(a != 0 || b != 0) }},
	"Xor":            {14, func(a, b float64) float64 { return b2f((a != 0) != (b != 0)) }},
	"PRelu": {15, func(x, s float64) float64 {
		if x < 0 {
			return s * x
		}
		return x
	}},
	"Mod": {16, math.Mod},
}

// Binary codes of math.cl used by more than one op.
const (
	binaryAdd      = 0
	binaryMax      = 5
	binaryMin      = 6
	binaryMeanLast = 17
)

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
	l, err := binaryLaunch(o.typ, binaryMaths[o.typ].code, 0, 1, 0, shapes[0], in[0], in[1], dev)
	if err != nil {
		return nil, err
	}
	return mathPlan(l)
}

func mathPlan(ls ...Launch) (*Plan, error) {
	src, err := kernelSource("math.cl")
	if err != nil {
		return nil, err
	}
	return &Plan{Source: src, Launches: ls, AliasInput: -1}, nil
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
	for _, v := range d[1:] {
		args = append(args, Arg{Kind: ArgInt, Int: int32(v)})
	}
	for k := range operands {
		var s [maxBcastRank]int
		copy(s[off:], st[k])
		for _, v := range s {
			args = append(args, Arg{Kind: ArgInt, Int: int32(v)})
		}
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
	f := binaryMaths[o.typ].f
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

// variadicOp is Sum, Max, Min or Mean of one or more operands with numpy broadcasting:
// the first two combine into the output, each further one into it in place; Mean's last
// step scales the sum by 1/count.
type variadicOp struct{ typ string }

func (o variadicOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1<<16, 0); err != nil {
		return nil, err
	}
	s := cloneShape(in[0])
	for _, t := range in[1:] {
		var err error
		if s, err = broadcastShapes(o.typ, s, t); err != nil {
			return nil, err
		}
	}
	return [][]int{s}, nil
}

func (o variadicOp) code() int {
	switch o.typ {
	case "Max":
		return binaryMax
	case "Min":
		return binaryMin
	}
	return binaryAdd
}

func (o variadicOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	ys := shapes[0]
	scale := float32(1) / float32(len(in))
	if len(in) == 1 {
		// One operand: its copy (the mean of one value is itself).
		n := numel(ys)
		gl, lo := flatLaunch(n, dev)
		return mathPlan(Launch{Kernel: "unary_op", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgInt, Int: 40}, {Kind: ArgFloat}, {Kind: ArgFloat}}})
	}
	step := func(last bool) int {
		if o.typ == "Mean" && last {
			return binaryMeanLast
		}
		return o.code()
	}
	// Every launch writes or updates the whole output: the first one broadcasts its
	// two operands to the output's shape, as numpy's broadcast is associative.
	first, err := binaryLaunch(o.typ, step(len(in) == 2), 0, 1, scale, ys, in[0], in[1], dev)
	if err != nil {
		return nil, err
	}
	ls := []Launch{first}
	for k := 2; k < len(in); k++ {
		l, err := accLaunch(o.typ, step(k == len(in)-1), k, scale, ys, in[k], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return mathPlan(ls...)
}

func (o variadicOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	y := broadcastRef(want[0], in, func(v []float64) float64 {
		acc := v[0]
		for _, x := range v[1:] {
			switch o.typ {
			case "Max":
				acc = nanOr(acc, x, math.Max)
			case "Min":
				acc = nanOr(acc, x, math.Min)
			default:
				acc += x
			}
		}
		if o.typ == "Mean" {
			acc /= float64(len(v))
		}
		return acc
	})
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// whereOp is ONNX Where: condition (non-zero is true), X, Y, all broadcast.
type whereOp struct{}

func (whereOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	const typ = "Where"
	if err := checkCounts(typ, in, nil, 3, 3, 0); err != nil {
		return nil, err
	}
	s, err := broadcastShapes(typ, in[0], in[1])
	if err != nil {
		return nil, err
	}
	if s, err = broadcastShapes(typ, s, in[2]); err != nil {
		return nil, err
	}
	return [][]int{s}, nil
}

func (o whereOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Where", out, shapes); err != nil {
		return nil, err
	}
	ys := shapes[0]
	more, err := bcastArgs("Where", ys, in[0], in[1], in[2])
	if err != nil {
		return nil, err
	}
	n := numel(ys)
	gl, lo := flatLaunch(n, dev)
	args := append([]Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: 2},
		{Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)}}, more...)
	return mathPlan(Launch{Kernel: "where_bcast", Global: gl, Local: lo, Args: args})
}

func (o whereOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("Where", o, p, in, out)
	if err != nil {
		return nil, err
	}
	y := broadcastRef(want[0], in, func(v []float64) float64 {
		if v[0] != 0 {
			return v[1]
		}
		return v[2]
	})
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

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
		l, err := binaryLaunch("Clip", binaryMax, 0, 1, 0, ys, ys, in[1], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		if hasHi {
			if l, err = accLaunch("Clip", binaryMin, 2, 0, ys, in[2], dev); err != nil {
				return nil, err
			}
			ls = append(ls, l)
		}
	case hasHi:
		l, err := binaryLaunch("Clip", binaryMin, 0, 2, 0, ys, ys, in[2], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	default:
		n := numel(ys)
		gl, lo := flatLaunch(n, dev)
		ls = append(ls, Launch{Kernel: "unary_op", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgInt, Int: 40}, {Kind: ArgFloat}, {Kind: ArgFloat}}})
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

func init() {
	for typ := range unaryMaths {
		Register(typ, mathUnaryOp{typ: typ})
	}
	Register("Cast", mathUnaryOp{typ: "Cast"})
	for typ := range binaryMaths {
		Register(typ, mathBinaryOp{typ: typ})
	}
	for _, typ := range []string{"Sum", "Mean", "Max", "Min"} {
		Register(typ, variadicOp{typ: typ})
	}
	Register("Where", whereOp{})
}

// flatLaunch is a one-dimensional launch of n work-items in work-groups of one size
// whatever n is (64, or the device's limit), the global size rounded up to a multiple:
// PoCL compiles a kernel once per work-group size it meets, so the kernels of math.cl,
// reduce.cl, layout.cl and deconv.cl, which check their ids against n, compile once per
// device rather than once for every small tensor's size.
func flatLaunch(n int, dev DeviceInfo) ([]int, []int) {
	if dev.MaxWorkGroupSize <= 0 {
		return []int{n}, nil
	}
	l := min(64, dev.MaxWorkGroupSize)
	return []int{ceilDiv(n, l) * l}, []int{l}
}
