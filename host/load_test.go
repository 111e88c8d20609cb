package host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/onnx"
	"github.com/clhost/clhost/model"
)

// sameModel fails unless a and b have the same JSON form.
func sameModel(t *testing.T, what string, a, b *model.Model) {
	t.Helper()
	ja, err := model.ToJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := model.ToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja, jb) {
		t.Errorf("%s: LoadModel read another model than the format's own loader", what)
	}
}

// TestLoadModelForms: LoadModel reads each of the three forms (the extension in any
// case) as that form's own loader does, and SaveModel writes the two native ones.
func TestLoadModelForms(t *testing.T) {
	const jsonPath = "testdata/leaky_relu.json"
	fromJSON, err := LoadModel(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.LoadJSON(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, jsonPath, fromJSON, want)

	dir := t.TempDir()
	for _, name := range []string{"m.clm", "M.CLM", "m.json"} {
		p := filepath.Join(dir, name)
		if err := SaveModel(fromJSON, p); err != nil {
			t.Fatal(err)
		}
		got, err := LoadModel(p)
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, name, got, want)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "m.clm")); err != nil || !bytes.Equal(data[4:8], []byte(model.FileIdentifier)) {
		t.Errorf("SaveModel did not write m.clm in the native form (%v)", err)
	}

	const onnxPath = "../internal/onnx/testdata/custom.onnx"
	got, err := LoadModel(onnxPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err = onnx.Load(onnxPath)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, onnxPath, got, want)
}

// TestLoadModelErrors: every failure names the file.
func TestLoadModelErrors(t *testing.T) {
	dir := t.TempDir()
	notModel := filepath.Join(dir, "x.json")
	writeFile(t, dir, "x.json", `{"format": "something else"}`)
	m, err := LoadModel("testdata/leaky_relu.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := LoadModel("model.pb"); return err }(), `model.pb: unknown model format ".pb": use .clm, .json, .onnx or .xml (OpenVINO IR)`},
		{func() error { _, err := LoadModel(filepath.Join(dir, "none.onnx")); return err }(), "none.onnx: no such file"},
		{func() error { _, err := LoadModel(notModel); return err }(), notModel + `: "format" is "something else"`},
		{SaveModel(m, filepath.Join(dir, "out.onnx")), `out.onnx: cannot write models as ".onnx": use .clm or .json`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", c.err, c.want)
		}
	}
}

// TestLoadOptions: an ONNX model's dynamic batch takes Batch or the given input shape
// (under the input's name or "", which also fixes other dynamic dimensions); a native
// model is rebatched to a given batch as serve does, and its fixed shapes refuse others.
func TestLoadOptions(t *testing.T) {
	const dynamic = "../internal/onnx/testdata/dynamic.onnx"
	for _, c := range []struct {
		opt   LoadOptions
		batch int
	}{
		{LoadOptions{}, 1},
		{LoadOptions{Batch: 3}, 3},
		{LoadOptions{InputShapes: map[string][]int{"x": {2, 3, 4, 4}}}, 2},
		{LoadOptions{InputShapes: map[string][]int{"": {4, 3, 4, 4}}}, 4},
	} {
		m, err := c.opt.Load(dynamic)
		if err != nil {
			t.Fatalf("%+v: %v", c.opt, err)
		}
		if got := m.Tensor("x").Shape; !slices.Equal(got, []int{c.batch, 3, 4, 4}) {
			t.Errorf("%+v: input shape %v, want batch %d", c.opt, got, c.batch)
		}
	}

	// With its height and width dynamic too, the shape given under "" sets them all.
	m, err := LoadOptions{InputShapes: map[string][]int{"": {2, 3, 5, 7}}}.Load("testdata/dynamic_hw.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Tensor("x").Shape; !slices.Equal(got, []int{2, 3, 5, 7}) {
		t.Errorf("dynamic_hw.onnx: input shape %v, want [2 3 5 7]", got)
	}

	const native = "testdata/leaky_relu.json"
	for _, ok := range []LoadOptions{{Batch: 1}, {InputShapes: map[string][]int{"": {1, 2, 3, 4}}}, {InputShapes: map[string][]int{"x": {1, 2, 3, 4}}}} {
		if _, err := ok.Load(native); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	// A native model is rebatched to the batch its inputs are given at, as serve does
	// (graph.Rebatch), and says so.
	for _, c := range []struct {
		opt   LoadOptions
		batch int
	}{{LoadOptions{Batch: 2}, 2}, {LoadOptions{InputShapes: map[string][]int{"": {3, 2, 3, 4}}}, 3}} {
		var log strings.Builder
		c.opt.Log = &log
		m, err := c.opt.Load(native)
		if err != nil {
			t.Fatalf("%+v: %v", c.opt, err)
		}
		if got := m.Tensor("x").Shape; !slices.Equal(got, []int{c.batch, 2, 3, 4}) {
			t.Errorf("%+v: input shape %v, want batch %d", c.opt, got, c.batch)
		}
		if want := fmt.Sprintf("clhost: %s: the model's fixed batch 1 rebatched to %d, the batch of its inputs\n", native, c.batch); log.String() != want {
			t.Errorf("%+v: log %q, want %q", c.opt, log.String(), want)
		}
	}
	for _, c := range []struct {
		opt  LoadOptions
		want string
	}{
		{LoadOptions{InputShapes: map[string][]int{"x": {1, 2, 3, 5}}}, native + `: input "x" has the fixed shape [1 2 3 4], not [1 2 3 5]`},
		{LoadOptions{InputShapes: map[string][]int{"nope": {1}}}, native + `: a shape is given for "nope", which is not a graph input`},
		{LoadOptions{Batch: -1}, native + ": batch size -1 is negative"},
	} {
		if _, err := c.opt.Load(native); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.opt, err, c.want)
		}
	}
}
