package builtinkernels

// The cases of math.go's ops in the one harness (TestOpsMatchReference). Every shape holds
// at least 64 elements, so every launch takes the same 64-item work-groups and PoCL
// compiles each kernel of math.cl once.
func init() {
	x := sh(2, 3, 4, 5)
	unary := []struct {
		typ, gen string
		attrs    Attrs
	}{
		{"Abs", "w", nil}, {"Neg", "w", nil}, {"Exp", "w", nil}, {"Log", "p", nil}, {"Sqrt", "p", nil},
		{"Reciprocal", "n", nil}, {"Floor", "w", nil}, {"Ceil", "w", nil}, {"Sign", "i", nil},
		{"Sin", "w", nil}, {"Cos", "w", nil}, {"Tan", "r", nil}, {"Asin", "r", nil}, {"Acos", "r", nil},
		{"Atan", "w", nil}, {"Sinh", "w", nil}, {"Cosh", "w", nil}, {"Asinh", "w", nil},
		{"Acosh", "g", nil}, {"Atanh", "r", nil}, {"Erf", "w", nil}, {"Softplus", "w", nil},
		{"Softsign", "w", nil}, {"Elu", "w", Attrs{"alpha": 0.7}}, {"Selu", "w", nil},
		{"Celu", "w", Attrs{"alpha": 2.0}}, {"ThresholdedRelu", "w", Attrs{"alpha": 0.5}},
		{"Gelu", "w", nil}, {"Gelu", "w", Attrs{"approximate": "tanh"}}, {"Mish", "w", nil},
		{"Not", "b", nil}, {"IsNaN", "w", nil}, {"IsInf", "w", nil},
		{"Shrink", "w", Attrs{"lambd": 1.5, "bias": 0.5}},
		{"Swish", "w", Attrs{"alpha": 0.5}},
	}
	for _, u := range unary {
		name := "wide"
		if u.attrs != nil {
			name = "attrs"
		}
		opCases = append(opCases, opCase{name: name, typ: u.typ, attrs: u.attrs, in: shapes(x), out: shapes(x), gen: u.gen})
	}
	opCases = append(opCases, opCase{name: "wide", typ: "Round", in: shapes(x), out: shapes(x), gen: "w"})
	// Gelu and Erf run 8 values a work-item: 67 leaves a partial last vector of 3.
	opCases = append(opCases, opCase{name: "partial_vector", typ: "Gelu", in: shapes(sh(67)), out: shapes(sh(67)), gen: "w"},
		opCase{name: "tanh_partial_vector", typ: "Gelu", attrs: Attrs{"approximate": "tanh"}, in: shapes(sh(67)), out: shapes(sh(67)), gen: "w"},
		opCase{name: "partial_vector", typ: "Erf", in: shapes(sh(67)), out: shapes(sh(67)), gen: "w"})
	for _, c := range []struct {
		name string
		to   int
		gen  string
	}{
		{"to_int8_wraps", onnxInt8, "i"}, {"to_uint8_wraps", onnxUint8, "i"}, {"to_int16", onnxInt16, "i"},
		{"to_int64_truncates", onnxInt64, "w"}, {"to_bool", onnxBool, "b"}, {"to_float16", onnxFloat16, "w"},
		{"to_bfloat16", onnxBfloat16, "w"}, {"to_float", onnxFloat, "w"},
	} {
		opCases = append(opCases, opCase{name: c.name, typ: "Cast", attrs: Attrs{"to": c.to}, in: shapes(x), out: shapes(x), gen: c.gen})
	}
	bin := []struct {
		typ, name, gen string
		a, b           []int
		attrs          Attrs
	}{
		{"Pow", "same", "pw", x, x, nil},
		{"Pow", "scalar_exponent", "pw", x, []int{}, nil},
		{"Equal", "bcast", "ii", x, sh(4, 1), nil},
		{"Less", "same", "ii", x, x, nil},
		{"Greater", "bcast_first", "ii", sh(3, 1, 5), x, nil},
		{"LessOrEqual", "bcast", "ii", x, sh(5), nil},
		{"GreaterOrEqual", "same", "ii", x, x, nil},
		{"And", "bcast", "bb", x, sh(1, 3, 4, 1), nil},
		{"Or", "same", "bb", x, x, nil},
		{"Xor", "same", "bb", x, x, nil},
		{"PRelu", "per_channel", "wr", x, sh(3, 1, 1), nil},
		{"PRelu", "same", "wr", x, x, nil},
		{"Mod", "fmod", "wn", x, sh(5), Attrs{"fmod": 1}},
	}
	for _, c := range bin {
		s, _ := broadcastShapes(c.typ, c.a, c.b)
		opCases = append(opCases, opCase{name: c.name, typ: c.typ, attrs: c.attrs, in: shapes(c.a, c.b), out: shapes(s), gen: c.gen})
	}
	opCases = append(opCases,
		opCase{name: "one", typ: "Sum", in: shapes(x), out: shapes(x)},
		opCase{name: "three_bcast", typ: "Sum", in: shapes(x, sh(4, 5), sh(3, 1, 1)), out: shapes(x)},
		// The third operand widens the output the first two do not cover.
		opCase{name: "widened_by_last", typ: "Mean", in: shapes(sh(1, 4, 5), sh(4, 1), x), out: shapes(x)},
		opCase{name: "two", typ: "Mean", in: shapes(x, x), out: shapes(x)},
		opCase{name: "three", typ: "Max", in: shapes(x, sh(5), x), out: shapes(x), gen: "wwr"},
		opCase{name: "two_bcast", typ: "Min", in: shapes(x, sh(2, 1, 4, 1)), out: shapes(x), gen: "ww"},
		opCase{name: "bcast", typ: "Where", in: shapes(sh(4, 1), x, sh(5)), out: shapes(x), gen: "brr"},
		opCase{name: "same", typ: "Where", in: shapes(x, x, x), out: shapes(x), gen: "brr"},
		// Scalars are []int{}: a nil shape stands for an omitted input.
		opCase{name: "inputs_min_max", typ: "Clip", in: shapes(x, []int{}, sh(1)), out: shapes(x), gen: "wrp"},
		opCase{name: "input_max_only", typ: "Clip", in: shapes(x, nil, []int{}), out: shapes(x), gen: "wrr", omit: []int{1}},
		opCase{name: "input_min_only", typ: "Clip", in: shapes(x, []int{}), out: shapes(x), gen: "wr"},
	)
}
