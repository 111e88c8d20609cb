package onnx

import (
	"slices"
	"testing"
)

// TestEmptyTensorsFold: a graph input given a dimension of 0 at load time holds no values and becomes an empty constant; a layer whose outputs are all
// empty folds away, leaving those outputs empty constants (ONNX's zero-size Split test);
// a Split with an empty part beside a full one still loads (the engine refuses it by
// name).
func TestEmptyTensorsFold(t *testing.T) {
	g := pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"h"})).
		msg(1, node("Split", "split", []string{"h", "sizes"}, []string{"a", "b"}, intAttr("axis", 0))).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 0, 3)).
		msg(12, vinfo("a", dtFloat, 0, 3)).
		msg(12, vinfo("b", dtFloat, 0, 3))
	g = i64init("sizes", []int64{2}, 0, 0)(g)
	for _, opt := range []Options{{InputShapes: map[string][]int{"x": {0, 3}}}} {
		m := decodeOK(t, onnxModel(13, g), opt)
		if len(m.Layers) != 0 || len(m.Inputs) != 0 {
			t.Errorf("options %+v: layers %v, inputs %v; want none (all empty)", opt, m.Layers, m.Inputs)
		}
		for _, name := range []string{"a", "b"} {
			if c := m.Tensor(name); c == nil || !c.IsConst() || !slices.Equal(c.Shape, []int{0, 3}) {
				t.Errorf("options %+v: output %q is %+v, want an empty constant [0 3]", opt, name, c)
			}
		}
	}

	part := pb{}.msg(1, node("Split", "split", []string{"x", "sizes"}, []string{"a", "b"}, intAttr("axis", 0))).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 2, 3)).
		msg(12, vinfo("a", dtFloat, 0, 3)).
		msg(12, vinfo("b", dtFloat, 2, 3))
	part = i64init("sizes", []int64{2}, 0, 2)(part)
	m := decodeOK(t, onnxModel(13, part), Options{})
	if len(m.Layers) != 1 || m.Layers[0].Type != "Split" {
		t.Errorf("a Split with one empty part: layers %v, want the Split", m.Layers)
	}
}

// TestEmptyFoldOptionalOutput: a layer whose named outputs are empty folds though an
// optional output is left out ("").
func TestEmptyFoldOptionalOutput(t *testing.T) {
	g := pb{}.msg(1, node("MaxPool", "pool", []string{"x"}, []string{"p", ""}, intsAttr("kernel_shape", 2, 2), intsAttr("strides", 2, 2))).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 0, 1, 4, 4)).
		msg(12, vinfo("p", dtFloat, 0, 1, 2, 2))
	m := decodeOK(t, onnxModel(13, g), Options{InputShapes: map[string][]int{"x": {0, 1, 4, 4}}})
	if c := m.Tensor("p"); len(m.Layers) != 0 || c == nil || !c.IsConst() || !slices.Equal(c.Shape, []int{0, 1, 2, 2}) {
		t.Errorf("layers %v, p %+v; want none and an empty constant [0 1 2 2]", m.Layers, c)
	}
	for _, c := range m.Tensors {
		if c.Name == "" {
			t.Errorf("a tensor without a name: %+v", c)
		}
	}
}

func intsAttr(name string, vs ...int64) pb {
	a := pb{}.str(1, name).varint(20, attrInts)
	for _, v := range vs {
		a = a.varint(8, uint64(v))
	}
	return a
}
