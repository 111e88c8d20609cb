package graph_test

import (
	"slices"
	"testing"

	"github.com/clhost/clhost/host/model"
	"github.com/clhost/clhost/internal/graph"
)

// linearModel has PyTorch's Linear layers: MatMul by a constant W and Add of a bias [N]
// (one Add naming the bias first), with a Relu between; an attention-like MatMul of two
// activations with a bias; and a MatMul whose Add is a [1, N] tensor, which stays.
func linearModel(t *testing.T) *model.Model {
	b := newModel("linear")
	x := b.Input("x", model.Float32, 2, 5, 8)
	m1 := b.Layer("MatMul", "m1", []string{x, b.weights("w1", 0.5, 8, 12)})
	a1 := b.Layer("Add", "a1", []string{m1, b.weights("b1", 0.5, 12)})
	r := b.Layer("Relu", "r", []string{a1})
	m2 := b.Layer("MatMul", "m2", []string{r, b.weights("w2", 0.5, 12, 6)})
	y1 := b.LayerOutputs("Add", "a2", []string{b.weights("b2", 0.5, 6), m2}, []string{"y1"})
	xt := b.Layer("Transpose", "xt", []string{x}, model.IntsAttr("perm", 0, 2, 1))
	m3 := b.Layer("MatMul", "m3", []string{x, xt})
	y2 := b.LayerOutputs("Add", "a3", []string{m3, b.weights("b3", 0.5, 5)}, []string{"y2"})
	m4 := b.Layer("MatMul", "m4", []string{x, b.weights("w4", 0.5, 8, 3)})
	y3 := b.LayerOutputs("Add", "a4", []string{m4, b.weights("b4", 0.5, 1, 3)}, []string{"y3"})
	b.Output(y1...)
	b.Output(y2...)
	b.Output(y3...)
	return b.build(t)
}

// TestFuseMatMulBias: each MatMul followed by the Add of a bias [N] takes the bias as
// its input 2 and the Add's output; the Add of a [1, N] tensor stays.
func TestFuseMatMulBias(t *testing.T) {
	m := linearModel(t)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if stats.MatMulBias != 3 {
		t.Fatalf("folded %d MatMul biases (%s), want 3", stats.MatMulBias, stats)
	}
	want := map[string][]string{"m1": {"x", "w1", "b1"}, "m2": {"r", "w2", "b2"}, "m3": {"x", "xt", "b3"}, "m4": {"x", "w4"}}
	for i := range m.Layers {
		l := &m.Layers[i]
		if l.Type == "Add" && l.Name != "a4" {
			t.Errorf("Add %q still there", l.Name)
		}
		if in, ok := want[l.Name]; ok && !slices.Equal(l.Inputs, in) {
			t.Errorf("%s reads %v, want %v", l.Name, l.Inputs, in)
		}
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatalf("shapes after fusion: %v", err)
	}
}
