package onnx

import (
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

func i64init(name string, dims []int64, vs ...int64) func(pb) pb {
	return addInit(tensorPB(name, dtInt64, dims, pb{}.bytes(9, i64bytes(vs...))))
}

// graphOf is a graph of the given nodes with input x and output y.
func graphOf(x, y pb, extra ...func(pb) pb) pb {
	g := pb{}.str(2, "g").msg(11, x).msg(12, y)
	for _, f := range extra {
		g = f(g)
	}
	return g
}

// TestFoldShapeArithmetic: PyTorch's Shape → Gather → Unsqueeze → Concat → Reshape is
// computed when the model loads, leaving the Reshape with a constant target shape.
func TestFoldShapeArithmetic(t *testing.T) {
	g := graphOf(vinfo("x", dtFloat, 2, 3, 4), vinfo("y", dtFloat),
		addNode(node("Shape", "shape", []string{"x"}, []string{"s"})),
		i64init("zero", nil, 0), i64init("axes", []int64{1}, 0), i64init("minus1", []int64{1}, -1),
		addNode(node("Gather", "gather", []string{"s", "zero"}, []string{"n"})),
		addNode(node("Unsqueeze", "unsq", []string{"n", "axes"}, []string{"n1"})),
		addNode(node("Concat", "cat", []string{"n1", "minus1"}, []string{"target"}, intAttr("axis", 0))),
		addNode(node("Reshape", "reshape", []string{"x", "target"}, []string{"y"})))
	m := decodeOK(t, onnxModel(13, g), Options{})
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers left, want the Reshape alone: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "reshape", "Reshape", []string{"x", "target"}, []string{"y"})
	wantConst(t, m, "target", model.Int64, []int{2}, i64bytes(2, -1))
	wantShapes(t, m, map[string][]int{"y": {2, 12}})
}

// TestFoldEyeLike: EyeLike reads only its input's shape, so it is a constant when the
// model loads; as a graph output it is written by an Identity of that constant.
func TestFoldEyeLike(t *testing.T) {
	g := graphOf(vinfo("x", dtFloat, 2, 3), vinfo("y", dtFloat),
		addNode(node("EyeLike", "eye", []string{"x"}, []string{"y"}, intAttr("k", 1))))
	m := decodeOK(t, onnxModel(13, g), Options{})
	wantLayer(t, m, "Identity_y", "Identity", []string{"y/value"}, []string{"y"})
	wantConst(t, m, "y/value", model.Float32, []int{2, 3}, f32bytes(0, 1, 0, 0, 0, 1))
}

// TestLoadTimeInputsBecomeAttributes: constant inputs that decide shapes (Slice's starts,
// ends, axes) become the attributes of older opsets; computed ones are refused.
func TestLoadTimeInputsBecomeAttributes(t *testing.T) {
	slice := func(extra ...func(pb) pb) pb {
		return graphOf(vinfo("x", dtFloat, 4, 6), vinfo("y", dtFloat), append(extra,
			i64init("e", []int64{1}, 100), i64init("a", []int64{1}, 1),
			addNode(node("Slice", "slice", []string{"x", "st", "e", "a"}, []string{"y"})))...)
	}
	m := decodeOK(t, onnxModel(13, slice(i64init("st", []int64{1}, 2))), Options{})
	l := wantLayer(t, m, "slice", "Slice", []string{"x"}, []string{"y"})
	wantAttrs(t, l, []model.Attr{ints("starts", 2), ints("ends", 100), ints("axes", 1)})
	wantShapes(t, m, map[string][]int{"y": {4, 4}})

	computed := slice(addInput(vinfo("st", dtInt64, 1)))
	if _, err := Decode(onnxModel(13, computed), "", "m"); err == nil || !strings.Contains(err.Error(), `input 1 ("st") must be known when the model loads`) {
		t.Errorf("computed starts: %v", err)
	}
}

// TestFloatActivations: integer and bool tensors the kernels read are float32 (the type
// of every activation), and integer ops whose float result would differ are refused.
func TestFloatActivations(t *testing.T) {
	g := graphOf(vinfo("x", dtFloat, 2, 3), vinfo("y", dtFloat),
		addInput(vinfo("c", dtBool, 2, 3)), i64init("k", []int64{3}, 1, 2, 3),
		addNode(node("Where", "where", []string{"c", "x", "k"}, []string{"y"})))
	m := decodeOK(t, onnxModel(13, g), Options{})
	wantLayer(t, m, "where", "Where", []string{"c", "x", "k/float"}, []string{"y"})
	wantConst(t, m, "k/float", model.Float32, []int{3}, f32bytes(1, 2, 3))
	if c := findTensor(t, m, "c"); c.Type != model.Float32 {
		t.Errorf("graph input c is %s, want float32", c.Type)
	}
	div := graphOf(vinfo("a", dtInt64, 3), vinfo("q", dtInt64), addInput(vinfo("b", dtInt64, 3)),
		addNode(node("Div", "div", []string{"a", "b"}, []string{"q"})))
	if _, err := Decode(onnxModel(13, div), "", "m"); err == nil || !strings.Contains(err.Error(), "integer Div is not supported") {
		t.Errorf("integer Div: %v", err)
	}
}

// TestLegacyOpsets: opsets before 7 load; an element-wise op's broadcast from an axis
// becomes numpy's rule (a constant B gains trailing dimensions of 1), consumed_inputs goes.
func TestLegacyOpsets(t *testing.T) {
	b := addInit(tensorPB("b", dtFloat, []int64{3}, f32raw(1, 2, 3)))
	g := graphOf(vinfo("x", dtFloat, 2, 3, 4), vinfo("y", dtFloat), b,
		addNode(node("Add", "add", []string{"x", "b"}, []string{"y"}, intAttr("broadcast", 1), intAttr("axis", 1),
			pb{}.str(1, "consumed_inputs").varint(20, attrInts).varint(8, 0))))
	m := decodeOK(t, onnxModel(5, g), Options{})
	l := wantLayer(t, m, "add", "Add", []string{"x", "b/axis"}, []string{"y"})
	wantAttrs(t, l, nil)
	wantConst(t, m, "b/axis", model.Float32, []int{3, 1}, f32bytes(1, 2, 3))
	wantShapes(t, m, map[string][]int{"y": {2, 3, 4}})

	// PRelu before opset 7: a slope per channel, as a list.
	prelu := graphOf(vinfo("x", dtFloat, 2, 3, 4), vinfo("y", dtFloat), b,
		addNode(node("PRelu", "prelu", []string{"x", "b"}, []string{"y"})))
	m = decodeOK(t, onnxModel(6, prelu), Options{})
	wantLayer(t, m, "prelu", "PRelu", []string{"x", "b/channels"}, []string{"y"})
	wantConst(t, m, "b/channels", model.Float32, []int{3, 1}, f32bytes(1, 2, 3))
}

func TestDropoutTrainingRefused(t *testing.T) {
	on := addInit(tensorPB("on", dtBool, nil, pb{}.bytes(9, []byte{1})))
	g := graphOf(vinfo("x", dtFloat, 2), vinfo("y", dtFloat), on,
		addNode(node("Dropout", "drop", []string{"x", "", "on"}, []string{"y"})))
	if _, err := Decode(onnxModel(13, g), "", "m"); err == nil || !strings.Contains(err.Error(), "training_mode") {
		t.Errorf("training Dropout: %v", err)
	}
}
