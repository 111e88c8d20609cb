package onnx

import (
	"strings"
	"testing"
)

// TestCastLike checks that CastLike imports as a Cast to the ONNX element type of its
// second input, exactly (int16, not clhost's wider int32), whether that input is a graph
// input or a Cast's output, and that an undeclared type is refused by name.
func TestCastLike(t *testing.T) {
	g := pb{}.msg(1, node("CastLike", "cl", []string{"x", "like"}, []string{"y"})).
		msg(1, node("Cast", "c", []string{"x"}, []string{"u8"}, intAttr("to", dtUint8))).
		msg(1, node("CastLike", "cl2", []string{"x", "u8"}, []string{"z"})).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 1, 2)).
		msg(11, vinfo("like", dtInt16, 1)).
		msg(12, vinfo("y", dtInt16, 1, 2)).
		msg(12, vinfo("z", dtUint8, 1, 2))
	m := decodeOK(t, onnxModel(15, g), Options{})
	want := map[string]int64{"cl": dtInt16, "cl2": dtUint8}
	for _, l := range m.Layers {
		to, ok := want[l.Name]
		if !ok {
			continue
		}
		if l.Type != "Cast" || len(l.Inputs) != 1 || l.Inputs[0] != "x" || l.Int("to", -1) != to {
			t.Errorf("layer %s: %s %v to=%d, want Cast [x] to=%d", l.Name, l.Type, l.Inputs, l.Int("to", -1), to)
		}
		delete(want, l.Name)
	}
	if len(want) != 0 {
		t.Errorf("layers %v missing", want)
	}

	bad := pb{}.msg(1, node("Relu", "r", []string{"x"}, []string{"h"})).
		msg(1, node("CastLike", "cl", []string{"x", "h"}, []string{"y"})).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 1, 2)).
		msg(12, vinfo("y", dtFloat, 1, 2))
	_, err := Options{}.Decode(onnxModel(15, bad), "testdata", "bad.onnx")
	if err == nil || !strings.Contains(err.Error(), `"cl" (CastLike)`) || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("CastLike of an undeclared type: %v", err)
	}
}
