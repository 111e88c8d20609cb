package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/model"
)

func TestConvPoolModel(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, seed uint64) []byte {
		m, err := build(seed)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := model.Save(m, p); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, again, other := write("a.clm", 1), write("b.clm", 1), write("c.clm", 2)
	if !bytes.Equal(a, again) || bytes.Equal(a, other) {
		t.Fatal("the seed does not decide the file")
	}
	m, err := model.Load(filepath.Join(dir, "a.clm"))
	if err != nil {
		t.Fatal(err)
	}
	// 416 / 4 = 104 after the convolution, 104 / 2 = 52 after the pool.
	for name, want := range map[string]string{
		"data": "[1 3 416 416]", "conv1.weight": "[10 3 4 4]", "conv1.bias": "[10]",
		"conv1": "[1 10 104 104]", "pool1": "[1 10 52 52]",
	} {
		if tt := m.Tensor(name); tt == nil || fmt.Sprint(tt.Shape) != want {
			t.Errorf("%s: %+v, want shape %s", name, tt, want)
		}
	}
	w, err := m.Tensor("conv1.weight").Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range w {
		if v < -0.15 || v > 0.15 || v == 0 { // 1/√48 ≈ 0.144
			t.Fatalf("weight %g outside ±1/√48", v)
		}
	}
	if len(m.Layers) != 2 || m.Layers[0].Type != "Conv" || m.Layers[1].Type != "MaxPool" || fmt.Sprint(m.Outputs) != "[pool1]" {
		t.Fatalf("layers %+v outputs %v", m.Layers, m.Outputs)
	}
}
