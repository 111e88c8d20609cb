package graph_test

import (
	"math"
	"slices"
	"testing"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
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

// attentionModel scales queries and keys before their product as PyTorch's export does
// (the constant in either slot, [] and [1]), scales a Linear layer's input, and has two
// Muls that must stay: one whose output a Relu reads too, one by a [8] vector.
func attentionModel(t *testing.T) *model.Model {
	b := newModel("attention")
	k := func(n string, shape []int, v ...float32) string { return b.ConstFloat32(n, shape, v) }
	x := b.Input("x", model.Float32, 2, 5, 8)
	q := b.Layer("MatMul", "q", []string{x, b.weights("wq", 0.5, 8, 8)})
	kk := b.Layer("MatMul", "k", []string{x, b.weights("wk", 0.5, 8, 8)})
	kt := b.Layer("Transpose", "kt", []string{kk}, model.IntsAttr("perm", 0, 2, 1))
	qs := b.Layer("Mul", "qs", []string{q, k("sq", []int{}, 0.5)})
	ks := b.Layer("Mul", "ks", []string{k("sk", []int{1}, 0.7), kt})
	scores := b.Layer("MatMul", "scores", []string{qs, ks})
	p := b.Layer("Softmax", "p", []string{scores}, model.IntAttr("axis", -1))
	shared := b.Layer("Mul", "shared", []string{x, k("s2", []int{}, 2)})
	r := b.Layer("Relu", "r", []string{shared})
	v := b.Layer("MatMul", "v", []string{shared, b.weights("wv", 0.5, 8, 8)})
	att := b.Layer("MatMul", "att", []string{p, v})
	vec := b.Layer("Mul", "vec", []string{att, b.weights("s8", 0.5, 8)})
	xs := b.Layer("Mul", "xs", []string{k("s3", []int{}, -1.5), r})
	lin := b.Layer("MatMul", "lin", []string{xs, b.weights("wl", 0.5, 8, 3)})
	y := b.Layer("MatMul", "out", []string{vec, b.weights("wo", 0.5, 8, 3)})
	b.Output(y)
	b.Output(lin)
	return b.build(t)
}

// TestFuseMatMulScale: the scalar Muls of queries and keys fold into their product as
// one scale 0.5·0.7, a Linear layer's scaled input into its MatMul; the Mul whose output
// two layers read and the Mul by a vector stay.
func TestFuseMatMulScale(t *testing.T) {
	m := attentionModel(t)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if stats.MatMulScale != 3 {
		t.Fatalf("folded %d scalar Muls (%s), want 3", stats.MatMulScale, stats)
	}
	want := map[string]struct {
		in    []string
		scale float32
	}{"scores": {[]string{"q", "kt"}, 0.35}, "lin": {[]string{"r", "wl"}, -1.5}, "v": {[]string{"shared", "wv"}, 1}}
	seen := map[string]bool{}
	for i := range m.Layers {
		l := &m.Layers[i]
		seen[l.Name] = true
		if w, ok := want[l.Name]; ok {
			if !slices.Equal(l.Inputs, w.in) || math.Abs(float64(l.Float(opspec.MatMulScaleAttr, 1)-w.scale)) > 1e-6 {
				t.Errorf("%s reads %v with scale %g, want %v and %g", l.Name, l.Inputs, l.Float(opspec.MatMulScaleAttr, 1), w.in, w.scale)
			}
		}
	}
	for _, name := range []string{"qs", "ks", "xs"} {
		if seen[name] {
			t.Errorf("Mul %q still there", name)
		}
	}
	for _, name := range []string{"shared", "vec"} {
		if !seen[name] {
			t.Errorf("Mul %q folded, want it kept", name)
		}
	}
	for _, c := range []string{"sq", "sk", "s3"} {
		if m.Tensor(c) != nil {
			t.Errorf("constant %q still in the model", c)
		}
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatalf("shapes after fusion: %v", err)
	}
}
