package serve

import (
	"fmt"
	"github.com/clhost/clhost/internal/graph"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/tensorio"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func saveModel(t *testing.T, m *model.Model, err error, path string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
}

// mixModel runs BatchMix (testdata/batchmix), which adds item 0 to every item.
func mixModel() (*model.Model, error) {
	b := model.NewBuilder("mix")
	x := b.Input("x", model.Float32, 1, 2, 4, 4)
	y := b.Tensor("y", model.Float32, 1, 2, 4, 4)
	b.LayerOutputs("BatchMix", "mix", []string{x}, []string{y})
	b.Output(y)
	return b.Build()
}

// TestModelRepository serves a --models folder: an ONNX model with a dynamic batch, a
// native model with the sample's custom layer (rebatched), and a native model whose
// custom layer mixes the items of a batch, which the server must find out and run one
// item at a time. Each answers as its reference says.
func TestModelRepository(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "internal", "onnx", "testdata", "dynamic.onnx"), filepath.Join(dir, "dynamic.onnx"))
	m, err := reluModel(1, nil)
	saveModel(t, m, err, filepath.Join(dir, "relu", "relu.clm"))
	for _, f := range []string{"custom_layer_example.xml", "custom_layer_kernel.cl"} {
		copyFile(t, filepath.Join(filepath.Dir(reluConfig), f), filepath.Join(dir, "relu", f))
	}
	m, err = mixModel()
	saveModel(t, m, err, filepath.Join(dir, "mix", "mix.clm"))
	for _, f := range []string{"batchmix.xml", "batchmix.cl"} {
		copyFile(t, filepath.Join("testdata", "batchmix", f), filepath.Join(dir, "mix", f))
	}
	sources, err := DirSources(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sources {
		names = append(names, s.Name+":"+s.Platform)
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[dynamic:onnx_onnxv1 mix:clhost_clm relu:clhost_clm]" {
		t.Fatalf("sources %v", names)
	}
	var log strings.Builder
	ts := startServer(t, sources, 1, Options{MaxBatch: 4, Log: &log})
	for name, sizes := range map[string][]int{"dynamic": {1, 4}, "relu": {1, 4}, "mix": {1}} {
		if m := ts.models[name]; !m.batched || !slices.Equal(m.sizes, sizes) {
			t.Errorf("model %s: batched %v at sizes %v, want batched at %v", name, m.batched, m.sizes, sizes)
		}
	}
	if !strings.Contains(log.String(), `model "mix": batched results differ`) {
		t.Errorf("the log does not say why mix is not batched:\n%s", log.String())
	}

	x, err := tensorio.ReadFile(filepath.Join("..", "internal", "onnx", "testdata", "expected", "dynamic", "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorio.ReadFile(filepath.Join("..", "internal", "onnx", "testdata", "expected", "dynamic", "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	code, r := post(t, ts.httpURL+"/v2/models/dynamic/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{
		{"name": "x", "datatype": "FP32", "shape": x.Shape, "data": x.Data}}}), nil)
	if code != 200 {
		t.Fatalf("dynamic: %d %s", code, r.Error)
	}
	compareFloats(t, "dynamic y", r.floats("y"), y.Data)

	img := randomImage(rand.New(rand.NewSource(9)), 1)
	_, pooled := reluReference(img)
	code, r = post(t, ts.httpURL+"/v2/models/relu/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{
		{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW}, "data": img}}}), nil)
	if code != 200 {
		t.Fatalf("relu: %d %s", code, r.Error)
	}
	compareFloats(t, "relu pooled", r.floats("pooled"), pooled)

	// Three items in one request, each doubled as it is alone.
	v := make([]float32, 3*2*4*4)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	code, r = post(t, ts.httpURL+"/v2/models/mix/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{
		{"name": "x", "datatype": "FP32", "shape": []int{3, 2, 4, 4}, "data": v}}}), nil)
	if code != 200 {
		t.Fatalf("mix: %d %s", code, r.Error)
	}
	want := make([]float32, len(v))
	for i := range v {
		want[i] = 2 * v[i]
	}
	compareFloats(t, "mix y", r.floats("y"), want)
}

// TestRebatch: a native model's batch dimension is rewritten through built-in and custom
// layers; a model whose constants fix the batch is refused.
func TestRebatch(t *testing.T) {
	m, err := reluModel(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := graph.Rebatch(m, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"image", "features", "pooled"} {
		if s := r.Tensor(name).Shape; s[0] != 5 {
			t.Errorf("%s: shape %v, want batch 5", name, s)
		}
	}
	if s := m.Tensor("image").Shape; s[0] != 1 {
		t.Errorf("the original model changed: %v", s)
	}

	b := model.NewBuilder("fixed")
	x := b.Input("x", model.Float32, 1, 2, 3)
	shape := b.ConstInt64("shape", []int{2}, []int64{1, 6})
	y := b.Layer("Reshape", "y", []string{x, shape})
	b.Output(y)
	fixed, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Rebatch(fixed, 4, nil); err == nil {
		t.Error("a Reshape to [1 6] was rebatched to 4")
	}
}

// TestPlan: a batch runs as the inferences of compiled sizes that take the least
// estimated time.
func TestPlan(t *testing.T) {
	in := &instance{model: &servedModel{batched: true, sizes: []int{1, 4}}, est: map[int]float64{1: 1, 4: 1.5}}
	for items, want := range map[int]string{1: "[1]", 2: "[4]", 3: "[4]", 4: "[4]", 5: "[4 1]", 7: "[4 4]", 9: "[4 4 1]"} {
		if got, _ := in.plan(items); fmt.Sprint(got) != want {
			t.Errorf("plan(%d) = %v, want %s", items, got, want)
		}
	}
	in.est = map[int]float64{1: 0.1, 4: 1}
	if got, cost := in.plan(3); fmt.Sprint(got) != "[1 1 1]" || cost < 0.29 || cost > 0.31 {
		t.Errorf("plan(3) with a cheap batch 1 = %v (%g s)", got, cost)
	}
	// An inflated estimate of batch 1 is capped by batch 4's, so a lone item still
	// runs at batch 1 (and its estimate is measured again).
	in.est = map[int]float64{1: 5, 4: 1}
	if got, _ := in.plan(1); fmt.Sprint(got) != "[1]" {
		t.Errorf("plan(1) with batch 1 estimated above batch 4 = %v, want [1]", got)
	}
}
