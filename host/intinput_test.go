package host

import (
	"context"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestIntegerGraphInput: a model whose graph input is INT64 token ids (an embedding
// lookup, Gather, then a Relu) runs, the ids given as float32 values as every integer
// activation is held; each output row is the embedding row of its id, negative ids
// counting from the end.
func TestIntegerGraphInput(t *testing.T) {
	b := model.NewBuilder("embedding")
	ids := b.Input("ids", model.Int64, 2, 3)
	table := make([]float32, 10*4)
	for i := range table {
		table[i] = float32(i%7) - 2.5
	}
	g := b.Layer("Gather", "lookup", []string{b.ConstFloat32("table", []int{10, 4}, table), ids})
	y := b.Layer("Relu", "relu", []string{g})
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Options{Device: testDeviceSpec(), NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// A custom layer reading the ids would read float32 values: the JIT must say so.
	if typ := n.typeOf(ids); typ != "float" {
		t.Errorf("a custom layer would read the INT64 ids as %q; they are held as float", typ)
	}
	in := []float32{0, 9, 3, -1, 4, 4}
	out, err := n.Infer(context.Background(), map[string]*Tensor{"ids": {Shape: []int{2, 3}, Data: in}})
	if err != nil {
		t.Fatal(err)
	}
	got := out[y]
	for r, id := range in {
		row := int(id)
		if row < 0 {
			row += 10
		}
		for k := range 4 {
			if want := max(table[row*4+k], 0); got.Data[r*4+k] != want {
				t.Fatalf("row %d (id %v) element %d: %v, want %v", r, id, k, got.Data[r*4+k], want)
			}
		}
	}
}
