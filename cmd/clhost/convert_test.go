package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/model"
)

// smallConvPool is OCL-ENGINE's conv + pool shape of model at a size that is easy to
// work out by hand: 1×3×8×8 → Conv 4×3×2×2 stride 2 → 1×4×4×4 → MaxPool 2×2 stride 2 →
// 1×4×2×2.
func smallConvPool(t *testing.T) *model.Model {
	t.Helper()
	b := model.NewBuilder("small")
	x := b.Input("data", model.Float32, 1, 3, 8, 8)
	w := make([]float32, 48)
	for i := range w {
		w[i] = float32(i) / 10
	}
	c := b.Layer("Conv", "conv1", []string{x,
		b.ConstFloat32("conv1.weight", []int{4, 3, 2, 2}, w),
		b.ConstFloat32("conv1.bias", []int{4}, []float32{1, 2, 3, 4})},
		model.IntsAttr("strides", 2, 2))
	p := b.Layer("MaxPool", "pool1", []string{c}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(p)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	clm := filepath.Join(dir, "a.clm")
	if err := model.Save(smallConvPool(t), clm); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "a.json")
	back := filepath.Join(dir, "b.CLM") // extensions in any case
	if code := runMain([]string{"convert", clm, js}); code != 0 {
		t.Fatalf("clm → json exited %d", code)
	}
	if code := runMain([]string{"convert", js, back}); code != 0 {
		t.Fatalf("json → clm exited %d", code)
	}
	a, _ := os.ReadFile(clm)
	b, _ := os.ReadFile(back)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("clm → json → clm changed the file (%d vs %d bytes)", len(a), len(b))
	}
	text, _ := os.ReadFile(js)
	if !bytes.Contains(text, []byte(`{"name": "conv1.bias", "type": "float32", "shape": [4], "data": [1, 2, 3, 4]}`)) {
		t.Fatalf("JSON does not hold the weights inline:\n%s", text)
	}
}

func TestConvertONNX(t *testing.T) {
	out := filepath.Join(t.TempDir(), "conv.clm")
	if code := runMain([]string{"convert", "../../internal/onnx/testdata/conv.onnx", out}); code != 0 {
		t.Fatalf("exited %d", code)
	}
	m, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Layers {
		if l.Type == "Conv" {
			return
		}
	}
	t.Fatalf("no Conv layer in %+v", m.Layers)
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.clm")
	if err := model.Save(smallConvPool(t), good); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.clm")
	data, _ := os.ReadFile(good)
	if err := os.WriteFile(bad, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"convert", good}, 2},
		{[]string{"convert", good, "x.json", "extra"}, 2},
		{[]string{"convert", "model.txt", "x.clm"}, 2},
		{[]string{"convert", good, filepath.Join(dir, "x.onnx")}, 2},
		{[]string{"convert", "-bogus", good, "x.clm"}, 2},
		{[]string{"convert", filepath.Join(dir, "missing.clm"), filepath.Join(dir, "x.json")}, 1},
		{[]string{"convert", bad, filepath.Join(dir, "x.json")}, 1},
		{[]string{"convert", good, filepath.Join(dir, "no", "such", "dir.json")}, 1},
	}
	for _, c := range cases {
		if code := runMain(c.args); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.json")); err == nil {
		t.Error("a failed conversion wrote its output")
	}
}
