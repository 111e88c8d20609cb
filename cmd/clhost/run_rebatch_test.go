package main

import (
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/tensorio"
)

// TestRunRebatchesNativeFromInputs: a native model of batch 1 run on an -i file of batch
// 3 is rebatched to it, as --batch 3 would, and as the README says.
func TestRunRebatchesNativeFromInputs(t *testing.T) {
	dir := t.TempDir()
	b := model.NewBuilder("tiny")
	x := b.Input("x", model.Float32, 1, 2, 2, 2)
	y := b.Tensor("y", model.Float32, 1, 2, 2, 2)
	b.LayerOutputs("Relu", "relu", []string{x}, []string{y})
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tiny.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	data := make([]float32, 24)
	for i := range data {
		data[i] = float32(i%5) - 2
	}
	in := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteFile(in, []int{3, 2, 2, 2}, data); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code := runMain([]string{"run", "-m", path, "-d", "cpu", "--quiet", "--cache-dir", "", "-i", in, "-o", out}); code != 0 {
		t.Fatalf("exited %d", code)
	}
	a, err := tensorio.ReadFile(filepath.Join(out, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shape) != 4 || a.Shape[0] != 3 {
		t.Fatalf("y shape %v, want batch 3", a.Shape)
	}
	for i, v := range a.Data {
		if want := max(data[i], 0); v != want {
			t.Fatalf("y[%d] = %g, want %g", i, v, want)
		}
	}
}
