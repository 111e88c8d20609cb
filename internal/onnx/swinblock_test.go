package onnx_test

// testdata/swinblock (see its make.py) is one shifted-window block of torchvision's Swin
// Transformer as PyTorch exports it: its attention mask, window arithmetic and shift fold
// when the model loads, and what is left runs on the OpenCL CPU device to PyTorch's output.

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbinet/npyio/npy"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/internal/onnx"
)

func readNpy(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := npy.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var data []float32
	if err := r.Read(&data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data, r.Header.Descr.Shape
}

func TestSwinBlockRuns(t *testing.T) {
	dir := filepath.Join("testdata", "swinblock")
	m, err := onnx.Load(filepath.Join(dir, "swinblock.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// The load-time subgraphs are gone: no layer of these types is left to run.
	shapeOps := map[string]bool{"Shape": true, "ConstantOfShape": true, "ScatterND": true, "Range": true,
		"Where": true, "Equal": true, "Mod": true, "Expand": true, "Cast": true, "Dropout": true, "Not": true}
	for _, l := range m.Layers {
		if shapeOps[l.Type] {
			t.Errorf("layer %q (%s) was not folded at load time", l.Name, l.Type)
		}
	}

	e, err := host.NewEngine(host.Options{Device: "cpu", NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	x, xs := readNpy(t, filepath.Join(dir, "x.npy"))
	want, _ := readNpy(t, filepath.Join(dir, "y.npy"))
	out, err := n.Infer(context.Background(), map[string]*host.Tensor{"x": {Shape: xs, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	y := out["y"]
	if y == nil || len(y.Data) != len(want) {
		t.Fatalf("output y: %+v", y)
	}
	// float32 through two LayerNorms, attention and an MLP: PyTorch's CPU result to 1e-4
	// of its largest magnitude.
	worst, scale := 0.0, 0.0
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(y.Data[i])-float64(want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	if worst > 1e-4*scale {
		t.Errorf("largest difference from PyTorch %.3g, over 1e-4 of max |y| = %.3g", worst, scale)
	}
	t.Logf("largest difference from PyTorch %.3g (max |y| %.3g)", worst, scale)
}
