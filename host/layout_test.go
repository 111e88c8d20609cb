package host

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestLoadLayout: two chained layers fall in two levels with every shape inferred; a
// custom layer without a declared output shape still loads, its failure kept in
// ShapeError.
func TestLoadLayout(t *testing.T) {
	save := func(b *model.Builder) string {
		t.Helper()
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.clm")
		if err := model.Save(m, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	b := model.NewBuilder("chain")
	x := b.Input("x", model.Float32, 1, 4)
	b.Output(b.Layer("Relu", "r2", []string{b.Layer("Relu", "r1", []string{x})}))
	l, err := LoadLayout(save(b), nil)
	if err != nil || l.ShapeError != nil || len(l.Levels) != 2 {
		t.Fatalf("LoadLayout(chain) = %+v, %v; want 2 levels, every shape known", l, err)
	}
	if s := l.Model.Tensor("r2").Shape; len(s) != 2 || s[1] != 4 {
		t.Errorf("r2's shape %v, want [1 4]", s)
	}
	b = model.NewBuilder("custom")
	x = b.Input("x", model.Float32, 2, 2)
	b.Output(b.Layer("GRN", "grn", []string{x}))
	l, err = LoadLayout(save(b), nil)
	if err != nil || l.ShapeError == nil || !strings.Contains(l.ShapeError.Error(), `output "grn" has no declared shape`) {
		t.Errorf("LoadLayout(custom) = %+v, %v; want the shape failure kept", l, err)
	}
	if _, err := LoadLayout(filepath.Join(t.TempDir(), "none.clm"), nil); err == nil {
		t.Error("LoadLayout of a missing file: no error")
	}
}

// TestIntegerInputTypes: an ONNX file's INT64 ids input is named, though it imports as
// float32.
func TestIntegerInputTypes(t *testing.T) {
	path := "../internal/onnx/testdata/ids.onnx"
	m, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := IntegerInputTypes(m, path); len(got) != 1 || got["ids"] != model.Int64 {
		t.Errorf("IntegerInputTypes = %v, want ids: int64", got)
	}
}
