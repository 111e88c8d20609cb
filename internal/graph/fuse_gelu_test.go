package graph_test

import (
	"math"
	"testing"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// geluChain appends GELU as PyTorch exports it before opset 20 to b, reading x, with
// the divisor given, and returns its output.
func geluChain(b *modelBuilder, p string, x string, divisor float32) string {
	k := func(n string, v float32) string { return b.ConstFloat32(p+"c."+n, []int{}, []float32{v}) }
	d := b.Layer("Div", p+"div", []string{x, k("sqrt2", divisor)})
	e := b.Layer("Erf", p+"erf", []string{d})
	a := b.Layer("Add", p+"add", []string{e, k("one", 1)})
	m := b.Layer("Mul", p+"mul", []string{x, a})
	return b.Layer("Mul", p+"half", []string{m, k("half", 0.5)})
}

// TestFuseGelu: the five-layer GELU becomes one Gelu layer of x in the last Mul's place,
// its constants and intermediates gone; a chain with another divisor, and one whose Erf
// output something else reads too, stay as they are.
func TestFuseGelu(t *testing.T) {
	b := newModel("gelu")
	x := b.Input("x", model.Float32, 2, 3, 8)
	r := b.Layer("Relu", "r", []string{x})
	g := geluChain(b, "g.", r, float32(math.Sqrt2))
	y := b.Layer("Relu", "after", []string{g})
	other := geluChain(b, "o.", x, 2)
	shared := geluChain(b, "s.", x, float32(math.Sqrt2))
	side := b.Layer("Neg", "side", []string{"s.erf"})
	b.Output(y, other, shared, side)
	m := b.build(t)
	before := len(m.Layers)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Gelu != 1 || len(m.Layers) != before-4 {
		t.Fatalf("folded %d GELUs, %d → %d layers (%s); want 1 and 4 fewer", stats.Gelu, before, len(m.Layers), stats)
	}
	var names []string
	for _, l := range m.Layers {
		names = append(names, l.Name+":"+l.Type)
		if l.Type == "Gelu" && (l.Name != "g.div" || len(l.Inputs) != 1 || l.Inputs[0] != r || l.Outputs[0] != g) {
			t.Errorf("Gelu layer %q reads %v and writes %v, want %q → %q", l.Name, l.Inputs, l.Outputs, r, g)
		}
	}
	if names[1] != "g.div:Gelu" || names[2] != "after:Relu" {
		t.Errorf("layers in order %v: want the Gelu between r and after", names)
	}
	for _, tn := range []string{"g.c.sqrt2", "g.c.one", "g.c.half", "g.div", "g.erf", "g.add", "g.mul"} {
		for _, tt := range m.Tensors {
			if tt.Name == tn {
				t.Errorf("tensor %q left after fusion", tn)
			}
		}
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatalf("shapes after fusion: %v", err)
	}
}

// geluModel is a transformer's MLP: a Linear layer, GELU written out, another Linear.
func geluModel(t *testing.T) *model.Model {
	b := newModel("gelu mlp")
	x := b.Input("x", model.Float32, 2, 5, 8)
	h := b.Layer("MatMul", "fc1", []string{x, b.weights("w1", 0.5, 8, 16)})
	g := geluChain(b, "gelu.", h, float32(math.Sqrt2))
	y := b.Layer("MatMul", "fc2", []string{g, b.weights("w2", 0.5, 16, 4)})
	b.Output(y)
	return b.build(t)
}
