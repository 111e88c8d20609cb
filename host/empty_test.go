package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestEmptyOutputs: a graph output with a dimension of 0 (an empty constant, as an ONNX
// model's folded empty tensors arrive) comes back from Infer with its shape and no
// values, beside the outputs the layers compute; a layer that would write an empty
// tensor next to a full one is refused, naming the layer and the tensor.
func TestEmptyOutputs(t *testing.T) {
	b := model.NewBuilder("empty")
	x := b.Input("x", model.Float32, 2, 3)
	y := b.Layer("Relu", "relu", []string{x})
	none := b.Const("none", model.Float32, []int{0, 3}, []byte{})
	b.Output(y, none)
	n, _ := ctCompile(t, Options{}, ctBuild(t, b))
	var names []string
	for _, o := range n.Outputs() {
		names = append(names, o.Name)
		if o.Name == none && !slices.Equal(o.Shape, []int{0, 3}) {
			t.Errorf("Outputs: %q has shape %v, want [0 3]", o.Name, o.Shape)
		}
	}
	if !slices.Contains(names, none) || !slices.Contains(names, y) {
		t.Errorf("Outputs: %v, want %q and %q", names, y, none)
	}
	// The shapes Outputs returns are the caller's: changing one changes nothing here.
	for _, o := range n.Outputs() {
		if len(o.Shape) > 0 {
			o.Shape[0] = 7
		}
	}
	for _, o := range n.Outputs() {
		if o.Name == none && !slices.Equal(o.Shape, []int{0, 3}) {
			t.Errorf("Outputs after the caller changed a shape: %q has %v, want [0 3]", o.Name, o.Shape)
		}
	}
	out := ctInfer(t, n, map[string]*Tensor{x: {Shape: []int{2, 3}, Data: []float32{-1, 2, -3, 4, -5, 6}}})
	if got := out[none]; got == nil || !slices.Equal(got.Shape, []int{0, 3}) || len(got.Data) != 0 {
		t.Errorf("empty output: %+v, want shape [0 3] and no values", got)
	}
	if got := out[y]; got == nil || !slices.Equal(got.Data, []float32{0, 2, 0, 4, 0, 6}) {
		t.Errorf("relu output: %+v", got)
	}

	b = model.NewBuilder("half-empty")
	x = b.Input("x", model.Float32, 2, 3)
	parts := b.LayerOutputs("Split", "split", []string{x}, []string{"a", "b"}, model.IntAttr("axis", 0), model.IntsAttr("split", 0, 2))
	b.Output(parts...)
	err := ctCompileError(t, Options{}, ctBuild(t, b))
	if !strings.Contains(err.Error(), `layer "split" (Split): tensor "a" is empty (shape [0 3])`) {
		t.Errorf("a Split with an empty part: %v", err)
	}
}
