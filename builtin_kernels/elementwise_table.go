package builtinkernels

import (
	"fmt"
	"math"
)

// The element-wise family: every op that maps values to values one element at a time is
// one row below, carrying its OpenCL C expression and its CPU reference. The kernels are
// generated from the expressions (elementwise_source.go), fused activations take theirs
// from the same rows (fused.go), and an op's code in math.cl's switch is its row's place,
// never written by hand.

// unaryFn is an element-wise op of one operand.
type unaryFn struct {
	name string
	// kernel names the op's own kernel in elementwise.cl, for the activations networks
	// run unfused on big tensors; "" runs it through math.cl's shared unary_op, whose
	// switch has every row.
	kernel string
	// cl is OpenCL C of v (the value) and a, b (the op's two float parameters).
	cl    string
	attrs func(Params) (float32, float32, error)
	ref   func(x, a, b float64) float64
	// internal rows are building blocks of other ops (Cast's forms), not layer types.
	internal bool
	// fusable rows are activations a Conv or Gemm can apply to its result, named by
	// opspec.FusedActivationAttr (fused.go), and which the graph's Fuse folds.
	fusable bool
}

// binaryFn is an element-wise op of two operands with numpy broadcasting.
type binaryFn struct {
	name   string
	kernel string // as unaryFn's: the op's own kernels in elementwise.cl, or "" for math.cl
	// cl is OpenCL C of u and v (the operands) and s (a float the launch passes).
	cl  string
	ref func(a, b float64) float64
	// internal rows serve other ops (Max and Min for the variadic ops and Clip, the
	// mean's last sum; Sum adds with Add's row) and register no layer type of their own.
	internal bool
}

func relu(x, _, _ float64) float64 { return math.Max(x, 0) }

func leakyRelu(x, a, _ float64) float64 {
	if x >= 0 {
		return x
	}
	return a * x
}

func sigmoid(x, _, _ float64) float64 { return 1 / (1 + math.Exp(-x)) }

func hardSwish(x, a, b float64) float64 { return x * math.Min(1, math.Max(0, a*x+b)) }

func clip(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

func unary1(f func(float64) float64) func(x, _, _ float64) float64 {
	return func(x, _, _ float64) float64 { return f(x) }
}

var unaryFns = []unaryFn{
	{name: "Relu", kernel: "relu", cl: "fmax(v, 0.0f)", attrs: noAttrs, ref: relu, fusable: true},
	{name: "LeakyRelu", kernel: "leaky_relu", cl: "v >= 0.0f ? v : a * v", attrs: leakyAttrs, ref: leakyRelu, fusable: true},
	{name: "Sigmoid", kernel: "sigmoid", cl: "1.0f / (1.0f + exp(-v))", attrs: noAttrs, ref: sigmoid, fusable: true},
	{name: "Tanh", kernel: "tanh_act", cl: "tanh(v)", attrs: noAttrs, ref: unary1(math.Tanh)},
	{name: "HardSigmoid", kernel: "hard_sigmoid", cl: "clamp(a * v + b, 0.0f, 1.0f)", attrs: hardSigmoidAttrs,
		ref: func(x, a, b float64) float64 { return math.Min(1, math.Max(0, a*x+b)) }},
	{name: "HardSwish", kernel: "hard_swish", cl: "v * clamp(a * v + b, 0.0f, 1.0f)", attrs: hardSwishAttrs, ref: hardSwish, fusable: true},
	// fmin/fmax rather than clamp: clamp is undefined when a > b, while ONNX Clip then
	// gives max everywhere, which is what min(max(v, a), b) does.
	{name: "Clip", kernel: "clip", cl: "fmin(fmax(v, a), b)", attrs: clipAttrs, ref: clip, fusable: true},

	{name: "Abs", cl: "fabs(v)", attrs: noAttrs, ref: unary1(math.Abs)},
	{name: "Neg", cl: "-v", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return -x }},
	{name: "Exp", cl: "exp(v)", attrs: noAttrs, ref: unary1(math.Exp)},
	{name: "Log", cl: "log(v)", attrs: noAttrs, ref: unary1(math.Log)},
	{name: "Sqrt", cl: "sqrt(v)", attrs: noAttrs, ref: unary1(math.Sqrt)},
	{name: "Reciprocal", cl: "1.0f / v", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return 1 / x }},
	{name: "Floor", cl: "floor(v)", attrs: noAttrs, ref: unary1(math.Floor)},
	{name: "Ceil", cl: "ceil(v)", attrs: noAttrs, ref: unary1(math.Ceil)},
	{name: "Round", cl: "rint(v)", attrs: noAttrs, ref: unary1(math.RoundToEven)},
	{name: "Sign", cl: "v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v)", attrs: noAttrs, ref: func(x, _, _ float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	}},
	{name: "Sin", cl: "sin(v)", attrs: noAttrs, ref: unary1(math.Sin)},
	{name: "Cos", cl: "cos(v)", attrs: noAttrs, ref: unary1(math.Cos)},
	{name: "Tan", cl: "tan(v)", attrs: noAttrs, ref: unary1(math.Tan)},
	{name: "Asin", cl: "asin(v)", attrs: noAttrs, ref: unary1(math.Asin)},
	{name: "Acos", cl: "acos(v)", attrs: noAttrs, ref: unary1(math.Acos)},
	{name: "Atan", cl: "atan(v)", attrs: noAttrs, ref: unary1(math.Atan)},
	{name: "Sinh", cl: "sinh(v)", attrs: noAttrs, ref: unary1(math.Sinh)},
	{name: "Cosh", cl: "cosh(v)", attrs: noAttrs, ref: unary1(math.Cosh)},
	{name: "Asinh", cl: "asinh(v)", attrs: noAttrs, ref: unary1(math.Asinh)},
	{name: "Acosh", cl: "acosh(v)", attrs: noAttrs, ref: unary1(math.Acosh)},
	{name: "Atanh", cl: "atanh(v)", attrs: noAttrs, ref: unary1(math.Atanh)},
	{name: "Erf", cl: "erf(v)", attrs: noAttrs, ref: unary1(math.Erf)},
	// Softplus is exact in float past 20.
	{name: "Softplus", cl: "v > 20.0f ? v : log1p(exp(v))", attrs: noAttrs, ref: unary1(softplus)},
	{name: "Softsign", cl: "v / (1.0f + fabs(v))", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return x / (1 + math.Abs(x)) }},
	{name: "Elu", cl: "v > 0.0f ? v : a * (exp(v) - 1.0f)", attrs: attr1("alpha", 1), ref: func(x, a, _ float64) float64 {
		if x > 0 {
			return x
		}
		return a * (math.Exp(x) - 1)
	}},
	// Selu: a is alpha, b gamma.
	{name: "Selu", cl: "v > 0.0f ? b * v : b * (a * exp(v) - a)", attrs: seluAttrs, ref: func(x, a, g float64) float64 {
		if x > 0 {
			return g * x
		}
		return g * (a*math.Exp(x) - a)
	}},
	{name: "Celu", cl: "fmax(v, 0.0f) + fmin(0.0f, a * (exp(v / a) - 1.0f))", attrs: celuAttrs, ref: func(x, a, _ float64) float64 {
		return math.Max(x, 0) + math.Min(0, a*(math.Exp(x/a)-1))
	}},
	{name: "ThresholdedRelu", cl: "v > a ? v : 0.0f", attrs: attr1("alpha", 1), ref: func(x, a, _ float64) float64 {
		if x > a {
			return x
		}
		return 0
	}},
	// Gelu: b is 1 for the tanh form.
	{name: "Gelu", cl: "b != 0.0f ? 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v))) : 0.5f * v * (1.0f + erf(v * 0.70710678118654752f))",
		attrs: geluAttrs, ref: func(x, _, tanhForm float64) float64 {
			if tanhForm != 0 {
				return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			}
			return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
		}},
	{name: "Mish", cl: "v * tanh(v > 20.0f ? v : log1p(exp(v)))", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return x * math.Tanh(softplus(x)) }},
	{name: "Not", cl: "v == 0.0f ? 1.0f : 0.0f", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return b2f(x == 0) }},
	{name: "IsNaN", cl: "isnan(v) ? 1.0f : 0.0f", attrs: noAttrs, ref: func(x, _, _ float64) float64 { return b2f(math.IsNaN(x)) }},
	// IsInf: a and b say whether to detect +inf and -inf.
	{name: "IsInf", cl: "(isinf(v) && ((v > 0.0f && a != 0.0f) || (v < 0.0f && b != 0.0f))) ? 1.0f : 0.0f", attrs: isInfAttrs,
		ref: func(x, pos, neg float64) float64 {
			return b2f((math.IsInf(x, 1) && pos != 0) || (math.IsInf(x, -1) && neg != 0))
		}},
	// Shrink: a is lambd, b bias.
	{name: "Shrink", cl: "v < -a ? v + b : (v > a ? v - b : 0.0f)", attrs: shrinkAttrs, ref: func(x, l, b float64) float64 {
		switch {
		case x < -l:
			return x + b
		case x > l:
			return x - b
		}
		return 0
	}},
	// Swish (opset 24): x · sigmoid(alpha · x).
	{name: "Swish", cl: "v / (1.0f + exp(-a * v))", attrs: attr1("alpha", 1), ref: func(x, a, _ float64) float64 {
		return x / (1 + math.Exp(-a*x))
	}},

	// Cast's forms (math_cast.go), and the copy that Cast to float and one-operand
	// variadic ops run.
	{name: castIntFn, cl: "cast_int(v, a, b)", internal: true},
	{name: castBoolFn, cl: "v != 0.0f ? 1.0f : 0.0f", internal: true},
	{name: castHalfFn, cl: "round_to_bits(v, 10, -14, 65504.0f)", internal: true},
	{name: castBfloatFn, cl: "round_to_bits(v, 7, -126, FLT_MAX)", internal: true},
	{name: copyFn, cl: "v", internal: true},
}

// Names of the internal unary rows.
const (
	castIntFn    = "cast_int"
	castBoolFn   = "cast_bool"
	castHalfFn   = "cast_half"
	castBfloatFn = "cast_bfloat"
	copyFn       = "copy"
)

func nanMax(a, b float64) float64 { return nanOr(a, b, math.Max) }
func nanMin(a, b float64) float64 { return nanOr(a, b, math.Min) }

var binaryFns = []binaryFn{
	{name: "Add", kernel: "add", cl: "u + v", ref: func(a, b float64) float64 { return a + b }},
	{name: "Sub", kernel: "sub", cl: "u - v", ref: func(a, b float64) float64 { return a - b }},
	{name: "Mul", kernel: "mul", cl: "u * v", ref: func(a, b float64) float64 { return a * b }},
	{name: "Div", kernel: "div", cl: "u / v", ref: func(a, b float64) float64 { return a / b }},
	{name: "Pow", cl: "pow(u, v)", ref: math.Pow},
	{name: "Equal", cl: "u == v ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a == b) }},
	{name: "Less", cl: "u < v ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a < b) }},
	{name: "Greater", cl: "u > v ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a > b) }},
	{name: "LessOrEqual", cl: "u <= v ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a <= b) }},
	{name: "GreaterOrEqual", cl: "u >= v ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a >= b) }},
	{name: "And", cl: "(u != 0.0f && v != 0.0f) ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a != 0 && b != 0) }},
	{name: "Or", cl: "(u != 0.0f || v != 0.0f) ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f(a != 0 || b != 0) }},
	{name: "Xor", cl: "((u != 0.0f) != (v != 0.0f)) ? 1.0f : 0.0f", ref: func(a, b float64) float64 { return b2f((a != 0) != (b != 0)) }},
	// PRelu: v is the slope.
	{name: "PRelu", cl: "u < 0.0f ? v * u : u", ref: func(x, s float64) float64 {
		if x < 0 {
			return s * x
		}
		return x
	}},
	{name: "Mod", cl: "fmod(u, v)", ref: math.Mod},
	// NaN wins, as in numpy.
	{name: maxFn, cl: "(isnan(u) || isnan(v)) ? NAN : fmax(u, v)", ref: nanMax, internal: true},
	{name: minFn, cl: "(isnan(u) || isnan(v)) ? NAN : fmin(u, v)", ref: nanMin, internal: true},
	{name: meanLastFn, cl: "(u + v) * s", internal: true}, // the mean's last sum
}

// Names of the internal binary rows.
const (
	maxFn      = "max"
	minFn      = "min"
	meanLastFn = "mean_last"
)

// FusedActivations lists the activation types a layer can apply fused to its result, the
// values opspec.FusedActivationAttr takes: the fusable rows of the element-wise table.
func FusedActivations() []string {
	var out []string
	for _, f := range unaryFns {
		if f.fusable {
			out = append(out, f.name)
		}
	}
	return out
}

// unaryCode is a unary op's code in math.cl's unary_f: its row's place. Every row has
// a case there, so any of them can run through unary_op.
func unaryCode(name string) int {
	for i, f := range unaryFns {
		if f.name == name {
			return i
		}
	}
	panic(fmt.Sprintf("builtinkernels: no unary element-wise op %q", name))
}

// binaryCode is a binary op's code in math.cl's binary_f: its row's place.
func binaryCode(name string) int {
	for i, f := range binaryFns {
		if f.name == name {
			return i
		}
	}
	panic(fmt.Sprintf("builtinkernels: no binary element-wise op %q", name))
}

// unaryRow is the row of a unary op by name.
func unaryRow(name string) (*unaryFn, bool) {
	for i := range unaryFns {
		if unaryFns[i].name == name {
			return &unaryFns[i], true
		}
	}
	return nil, false
}

// binaryRow is the row of a binary op by name.
func binaryRow(name string) (*binaryFn, bool) {
	for i := range binaryFns {
		if binaryFns[i].name == name {
			return &binaryFns[i], true
		}
	}
	return nil, false
}
