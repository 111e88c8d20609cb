package onnx

import (
	"math"
	"slices"
	"testing"

	"github.com/clhost/clhost/model"
)

func intVal(shape []int, vs ...int64) *cval {
	return &cval{typ: model.Int64, shape: shape, ints: vs}
}

func floatVal(shape []int, vs ...float64) *cval {
	return &cval{typ: model.Float32, shape: shape, fls: vs}
}

// TestFoldIntegerArithmetic: the integer and logical ops of exported shape arithmetic fold
// with ONNX's integer semantics (Mod takes the divisor's sign unless fmod is 1, Div
// truncates), the expected values written from the ONNX operator definitions.
func TestFoldIntegerArithmetic(t *testing.T) {
	a := intVal([]int{4}, 7, -7, 7, -7)
	b := intVal([]int{4}, 3, 3, -3, -3)
	fa := floatVal([]int{2}, 5.5, -5.5)
	fb := floatVal([]int{1}, 2)
	bits := intVal([]int{4}, 0, 1, 0, 1)
	bits2 := intVal([]int{4}, 0, 0, 1, 1)
	cases := []struct {
		op    string
		attrs []model.Attr
		x, y  *cval
		typ   model.DataType
		ints  []int64
		fls   []float64
	}{
		{op: "Mod", x: a, y: b, typ: model.Int64, ints: []int64{1, 2, -2, -1}},
		{op: "Mod", attrs: []model.Attr{int1("fmod", 1)}, x: a, y: b, typ: model.Int64, ints: []int64{1, -1, 1, -1}},
		{op: "Mod", attrs: []model.Attr{int1("fmod", 1)}, x: fa, y: fb, typ: model.Float32, fls: []float64{1.5, -1.5}},
		{op: "Div", x: a, y: b, typ: model.Int64, ints: []int64{2, -2, -2, 2}},
		{op: "Pow", x: intVal(nil, 3), y: intVal([]int{3}, 0, 1, 5), typ: model.Int64, ints: []int64{1, 3, 243}},
		{op: "Pow", x: fa, y: fb, typ: model.Float32, fls: []float64{30.25, 30.25}},
		{op: "LessOrEqual", x: a, y: b, typ: model.Uint8, ints: []int64{0, 1, 0, 1}},
		{op: "GreaterOrEqual", x: a, y: b, typ: model.Uint8, ints: []int64{1, 0, 1, 0}},
		{op: "And", x: bits, y: bits2, typ: model.Uint8, ints: []int64{0, 0, 0, 1}},
		{op: "Or", x: bits, y: bits2, typ: model.Uint8, ints: []int64{0, 1, 1, 1}},
		{op: "Xor", x: bits, y: bits2, typ: model.Uint8, ints: []int64{0, 1, 1, 0}},
		{op: "Sign", x: intVal([]int{3}, -4, 0, 9), typ: model.Int64, ints: []int64{-1, 0, 1}},
		{op: "Reciprocal", x: fa, typ: model.Float32, fls: []float64{1 / 5.5, -1 / 5.5}},
	}
	for _, c := range cases {
		l := &model.Layer{Name: c.op, Type: c.op, Inputs: []string{"x"}, Outputs: []string{"z"}, Attrs: c.attrs}
		in := []*cval{c.x}
		if c.y != nil {
			l.Inputs = append(l.Inputs, "y")
			in = append(in, c.y)
		}
		if !foldable[c.op] {
			t.Errorf("%s is not foldable", c.op)
		}
		got, err := evalData(l, in, 17)
		if err != nil {
			t.Errorf("%s %v: %v", c.op, c.attrs, err)
			continue
		}
		if got.typ != c.typ || !slices.Equal(got.ints, c.ints) || !slices.EqualFunc(got.fls, c.fls, func(p, q float64) bool { return math.Abs(p-q) <= 1e-12 }) {
			t.Errorf("%s %v: %s ints %v floats %v, want %s %v %v", c.op, c.attrs, got.typ, got.ints, got.fls, c.typ, c.ints, c.fls)
		}
	}
	l := &model.Layer{Name: "mod", Type: "Mod", Inputs: []string{"x", "y"}, Outputs: []string{"z"}}
	if _, err := evalData(l, []*cval{a, intVal(nil, 0)}, 17); err == nil {
		t.Errorf("integer Mod by zero folded without an error")
	}
}

// TestFoldAttentionShapeArithmetic: torch.nn.MultiheadAttention's exported split of the
// packed projection (Mod of two constants, then Slices of Shape(x) ending at it, Concat,
// Reshape) folds to a constant target shape, leaving the Reshape alone.
func TestFoldAttentionShapeArithmetic(t *testing.T) {
	g := graphOf(vinfo("x", dtFloat, 4, 1, 12), vinfo("y", dtFloat),
		i64init("two", []int64{1}, 2), i64init("three", []int64{1}, 3), i64init("zero", []int64{1}, 0),
		i64init("one", []int64{1}, 1), i64init("split", []int64{2}, 3, 4), i64init("end", []int64{1}, math.MaxInt64),
		addNode(node("Mod", "mod", []string{"two", "three"}, []string{"m"})),
		addNode(node("Shape", "shape", []string{"x"}, []string{"s"})),
		addNode(node("Slice", "head", []string{"s", "zero", "m"}, []string{"lead"})),
		addNode(node("Add", "next", []string{"m", "one"}, []string{"m1"})),
		addNode(node("Slice", "tail", []string{"s", "m1", "end"}, []string{"rest"})),
		addNode(node("Concat", "cat", []string{"lead", "split", "rest"}, []string{"target"}, intAttr("axis", 0))),
		addNode(node("Reshape", "reshape", []string{"x", "target"}, []string{"y"})))
	m := decodeOK(t, onnxModel(17, g), Options{})
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers left, want the Reshape alone: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "reshape", "Reshape", []string{"x", "target"}, []string{"y"})
	wantConst(t, m, "target", model.Int64, []int{4}, i64bytes(4, 1, 3, 4))
	wantShapes(t, m, map[string][]int{"y": {4, 1, 3, 4}})
}
