package onnx

import (
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestDropoutRatioZeroInTraining: PyTorch exports attention dropout of p = 0 with
// training_mode true (Swin's shifted-window attention does); a ratio of 0 drops nothing,
// so the node is the identity and the Relu after it reads x, and its mask is all true. Any other ratio in training,
// the default 0.5 included, is still refused.
func TestDropoutRatioZeroInTraining(t *testing.T) {
	on := addInit(tensorPB("on", dtBool, nil, pb{}.bytes(9, []byte{1})))
	ratio := func(v float32) func(pb) pb { return addInit(tensorPB("ratio", dtFloat, nil, f32raw(v))) }
	drop := func(ins ...string) pb {
		return graphOf(vinfo("x", dtFloat, 2), vinfo("y", dtFloat), on, ratio(0),
			addNode(node("Dropout", "drop", ins, []string{"d", "mask"})),
			addNode(node("Relu", "relu", []string{"d"}, []string{"y"})))
	}
	m := decodeOK(t, onnxModel(13, drop("x", "ratio", "on")), Options{})
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers, want the Relu alone: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "relu", "Relu", []string{"x"}, []string{"y"})

	// Its mask, read here as a graph output, is all true: it folds to ones of x's shape.
	masked := drop("x", "ratio", "on")
	masked = addOutput(vinfo("mask", dtBool, 2))(masked)
	m = decodeOK(t, onnxModel(13, masked), Options{})
	l := wantLayer(t, m, "Identity_mask", "Identity", []string{"mask/value"}, []string{"mask"})
	wantConst(t, m, l.Inputs[0], model.Float32, []int{2}, f32bytes(1, 1))

	if _, err := Decode(onnxModel(13, drop("x", "", "on")), "", "m"); err == nil || !strings.Contains(err.Error(), "training_mode") {
		t.Errorf("training Dropout of the default ratio: %v", err)
	}
	half := graphOf(vinfo("x", dtFloat, 2), vinfo("y", dtFloat), on, ratio(0.5),
		addNode(node("Dropout", "drop", []string{"x", "ratio", "on"}, []string{"y"})))
	if _, err := Decode(onnxModel(13, half), "", "m"); err == nil || !strings.Contains(err.Error(), "training_mode") {
		t.Errorf("training Dropout of ratio 0.5: %v", err)
	}
}
