package onnx

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// The fixtures come from testdata/make_fixtures.py; the literal values below are the ones
// written there.

func load(t *testing.T, name string, opt Options) *model.Model {
	t.Helper()
	m, err := opt.Load(filepath.Join("testdata", name+".onnx"))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return m
}

func findLayer(t *testing.T, m *model.Model, name string) *model.Layer {
	t.Helper()
	for i := range m.Layers {
		if m.Layers[i].Name == name {
			return &m.Layers[i]
		}
	}
	var names []string
	for _, l := range m.Layers {
		names = append(names, l.Name)
	}
	t.Fatalf("no layer %q; layers: %q", name, names)
	return nil
}

func findTensor(t *testing.T, m *model.Model, name string) *model.Tensor {
	t.Helper()
	tn := m.Tensor(name)
	if tn == nil {
		t.Fatalf("no tensor %q", name)
	}
	return tn
}

func wantShapes(t *testing.T, m *model.Model, shapes map[string][]int) {
	t.Helper()
	for name, want := range shapes {
		if got := findTensor(t, m, name).Shape; !slices.Equal(got, want) {
			t.Errorf("tensor %q: shape %v, want %v", name, got, want)
		}
	}
}

func wantLayer(t *testing.T, m *model.Model, name, typ string, ins, outs []string) *model.Layer {
	t.Helper()
	l := findLayer(t, m, name)
	if l.Type != typ || !slices.Equal(l.Inputs, ins) || !slices.Equal(l.Outputs, outs) {
		t.Errorf("layer %q: %s %q → %q, want %s %q → %q", name, l.Type, l.Inputs, l.Outputs, typ, ins, outs)
	}
	return l
}

func wantAttrs(t *testing.T, l *model.Layer, want []model.Attr) {
	t.Helper()
	got := l.Attrs
	if len(got) == 0 {
		got = nil
	}
	norm := func(as []model.Attr) []model.Attr {
		out := slices.Clone(as)
		slices.SortFunc(out, func(a, b model.Attr) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("layer %q attributes:\n got %+v\nwant %+v", l.Name, norm(got), norm(want))
	}
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func wantConst(t *testing.T, m *model.Model, name string, typ model.DataType, shape []int, data []byte) {
	t.Helper()
	tn := findTensor(t, m, name)
	if tn.Type != typ || !slices.Equal(tn.Shape, shape) || !slices.Equal(tn.Data, data) || tn.Data == nil {
		t.Errorf("constant %q: %s %v % x, want %s %v % x", name, tn.Type, tn.Shape, tn.Data, typ, shape, data)
	}
}

func ints(name string, v ...int64) model.Attr {
	return model.Attr{Name: name, Kind: model.AttrInts, Ints: v}
}
func int1(name string, v int64) model.Attr {
	return model.Attr{Name: name, Kind: model.AttrInt, Int: v}
}
func flt(name string, v float32) model.Attr {
	return model.Attr{Name: name, Kind: model.AttrFloat, Float: v}
}

func TestConv(t *testing.T) {
	m := load(t, "conv", Options{})
	if m.Name != "conv" || !slices.Equal(m.Inputs, []string{"x"}) || !slices.Equal(m.Outputs, []string{"z"}) {
		t.Errorf("model %q inputs %q outputs %q", m.Name, m.Inputs, m.Outputs)
	}
	l := wantLayer(t, m, "conv1", "Conv", []string{"x", "W", "B"}, []string{"y"})
	wantAttrs(t, l, []model.Attr{ints("kernel_shape", 3, 3), ints("pads", 1, 0, 1, 0), ints("strides", 2, 1),
		int1("group", 2), ints("dilations", 1, 1)})
	l = wantLayer(t, m, "conv2", "Conv", []string{"y", "W2"}, []string{"z"})
	wantAttrs(t, l, []model.Attr{ints("dilations", 2, 2)})
	wantConst(t, m, "W", model.Float32, []int{4, 1, 3, 3}, f32bytes(
		0.5, -1.0, 0.25, 0.0, 1.0, 0.5, -0.5, 0.75, -0.25,
		1.0, 0.0, -1.0, 2.0, 0.0, -2.0, 1.0, 0.0, -1.0,
		0.125, 0.25, 0.125, 0.25, 0.5, 0.25, 0.125, 0.25, 0.125,
		-1.0, -1.0, -1.0, -1.0, 8.0, -1.0, -1.0, -1.0, -1.0))
	wantConst(t, m, "B", model.Float32, []int{4}, f32bytes(0.5, -0.25, 0.0, 1.0))
	wantConst(t, m, "W2", model.Float32, []int{2, 4, 1, 1}, f32bytes(1.0, -1.0, 0.5, 2.0, 0.0, 1.5, -0.5, 0.25))
	// H: (5+1+1-3)/2+1 = 3, W: (5-3)/1+1 = 3.
	wantShapes(t, m, map[string][]int{"x": {1, 2, 5, 5}, "y": {1, 4, 3, 3}, "z": {1, 2, 3, 3}})
	if findTensor(t, m, "x").Type != model.Float32 || findTensor(t, m, "x").IsConst() {
		t.Error("input x should be a float32 activation")
	}
}

func TestPool(t *testing.T) {
	m := load(t, "pool", Options{})
	wantAttrs(t, wantLayer(t, m, "max_ceil", "MaxPool", []string{"x"}, []string{"max_ceil"}),
		[]model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2), int1("ceil_mode", 1)})
	wantAttrs(t, wantLayer(t, m, "avg_incl", "AveragePool", []string{"x"}, []string{"avg_incl"}),
		[]model.Attr{ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), int1("count_include_pad", 1)})
	wantLayer(t, m, "gap", "GlobalAveragePool", []string{"x"}, []string{"gap"})
	// With ceil_mode a 2x2/2 window over 5 gives 3 outputs, not 2.
	wantShapes(t, m, map[string][]int{"max_ceil": {1, 2, 3, 3}, "max_pad": {1, 2, 3, 3}, "avg_incl": {1, 2, 3, 3},
		"avg_excl": {1, 2, 3, 3}, "gap": {1, 2, 1, 1}})
}

func TestActivations(t *testing.T) {
	m := load(t, "activations", Options{})
	wantAttrs(t, wantLayer(t, m, "leaky", "LeakyRelu", []string{"x"}, []string{"leaky"}), []model.Attr{flt("alpha", 0.2)})
	wantLayer(t, m, "relu", "Relu", []string{"x"}, []string{"relu"})
	wantLayer(t, m, "sig", "Sigmoid", []string{"x"}, []string{"sig"})
	// Constant bounds become attributes; an omitted bound stays absent.
	wantAttrs(t, wantLayer(t, m, "clip_both", "Clip", []string{"x"}, []string{"clip_both"}),
		[]model.Attr{flt("min", -0.5), flt("max", 0.5)})
	wantAttrs(t, wantLayer(t, m, "clip_max", "Clip", []string{"x"}, []string{"clip_max"}), []model.Attr{flt("max", 0.25)})
	wantAttrs(t, wantLayer(t, m, "soft", "Softmax", []string{"x"}, []string{"soft"}), []model.Attr{int1("axis", 1)})
	if len(m.Layers) != 6 {
		t.Errorf("%d layers, want 6 (the Constant folded)", len(m.Layers))
	}
	for _, gone := range []string{"lo", "hi", "hi2"} {
		if m.Tensor(gone) != nil {
			t.Errorf("constant %q is still in the model though nothing reads it", gone)
		}
	}
	for _, o := range []string{"relu", "leaky", "sig", "clip_both", "clip_max", "soft"} {
		wantShapes(t, m, map[string][]int{o: {1, 3, 2, 2}})
	}
}

func TestLegacyOpset(t *testing.T) {
	m := load(t, "legacy", Options{})
	// Dropout folded: the Clip now writes the graph output d itself.
	wantAttrs(t, wantLayer(t, m, "clip", "Clip", []string{"x"}, []string{"d"}), []model.Attr{flt("min", -1), flt("max", 1)})
	// Opset 10 Softmax over axis 1 of a 4-D input normalizes the last three dimensions
	// together: Flatten, Softmax on the rows, Reshape back.
	wantAttrs(t, wantLayer(t, m, "sm/flatten", "Flatten", []string{"x"}, []string{"sm/flat"}), []model.Attr{int1("axis", 1)})
	wantAttrs(t, wantLayer(t, m, "sm", "Softmax", []string{"sm/flat"}, []string{"sm/rows"}), []model.Attr{int1("axis", 1)})
	wantLayer(t, m, "sm/reshape", "Reshape", []string{"sm/rows", "sm/shape"}, []string{"sm"})
	var shape []byte
	for _, d := range []uint64{1, 2, 2, 3} {
		shape = binary.LittleEndian.AppendUint64(shape, d)
	}
	wantConst(t, m, "sm/shape", model.Int64, []int{4}, shape)
	wantShapes(t, m, map[string][]int{"d": {1, 2, 2, 3}, "sm/flat": {1, 12}, "sm/rows": {1, 12}, "sm": {1, 2, 2, 3}})
	if len(m.Layers) != 4 {
		t.Errorf("%d layers, want 4", len(m.Layers))
	}
}

func TestArith(t *testing.T) {
	m := load(t, "arith", Options{})
	if !slices.Equal(m.Inputs, []string{"x", "y"}) {
		t.Errorf("inputs %q", m.Inputs)
	}
	wantLayer(t, m, "add", "Add", []string{"x", "y"}, []string{"a"})
	wantLayer(t, m, "mul", "Mul", []string{"a", "ch"}, []string{"mu"})
	// Identity of x folded: Concat reads x directly.
	wantAttrs(t, wantLayer(t, m, "cat", "Concat", []string{"mu", "x"}, []string{"cat"}), []model.Attr{int1("axis", 1)})
	wantAttrs(t, wantLayer(t, m, "flat", "Flatten", []string{"cat"}, []string{"f"}), []model.Attr{int1("axis", 1)})
	wantAttrs(t, wantLayer(t, m, "gemm", "Gemm", []string{"f", "Wg", "Bg"}, []string{"g"}),
		[]model.Attr{int1("transB", 1), flt("alpha", 0.5), flt("beta", 2)})
	wantLayer(t, m, "reshape", "Reshape", []string{"g", "rs"}, []string{"r"})
	// Identity then Dropout to the graph output: MatMul writes "out".
	wantLayer(t, m, "matmul", "MatMul", []string{"r", "Wm"}, []string{"out"})
	if len(m.Layers) != 7 {
		t.Errorf("%d layers, want 7", len(m.Layers))
	}
	var rs []byte
	rs = binary.LittleEndian.AppendUint64(rs, 3)
	rs = binary.LittleEndian.AppendUint64(rs, 1)
	wantConst(t, m, "rs", model.Int64, []int{2}, rs)
	wantConst(t, m, "ch", model.Float32, []int{1, 2, 1, 1}, f32bytes(2, -0.5))
	wantConst(t, m, "Bg", model.Float32, []int{3}, f32bytes(1, -1, 0.5))
	wantConst(t, m, "Wm", model.Float32, []int{1, 2}, f32bytes(1, -2))
	wantShapes(t, m, map[string][]int{"a": {1, 2, 2, 2}, "mu": {1, 2, 2, 2}, "cat": {1, 4, 2, 2}, "f": {1, 16},
		"g": {1, 3}, "r": {3, 1}, "out": {3, 2}})
	for _, gone := range []string{"xi", "id1", "mm"} {
		if m.Tensor(gone) != nil {
			t.Errorf("tensor %q of a folded copy is still in the model", gone)
		}
	}
}

// The importer keeps a BatchNormalization as a layer; internal/graph's FoldBatchNorm, which
// the engine runs on every model, folds the one that follows a Conv.
func TestBatchNormKeptOnLoad(t *testing.T) {
	m := load(t, "bn", Options{})
	wantAttrs(t, wantLayer(t, m, "bn", "BatchNormalization", []string{"c", "scale", "beta", "mean", "var"}, []string{"bn"}),
		[]model.Attr{flt("epsilon", 1e-3)})
	wantLayer(t, m, "conv", "Conv", []string{"x", "W", "B"}, []string{"c"})
	wantConst(t, m, "mean", model.Float32, []int{3}, f32bytes(0.2, -0.4, 1.0))
	wantConst(t, m, "var", model.Float32, []int{3}, f32bytes(0.5, 2.0, 0.1))
	wantShapes(t, m, map[string][]int{"c": {1, 3, 4, 4}})

	// The Conv takes the BatchNormalization's output name and its weights change;
	// the BatchNormalization reading the graph input has no Conv to fold into.
	if n := graph.FoldBatchNorm(m); n != 1 {
		t.Fatalf("folded %d, want 1", n)
	}
	wantLayer(t, m, "conv", "Conv", []string{"x", "W", "B"}, []string{"bn"})
	wantLayer(t, m, "relu", "Relu", []string{"bn"}, []string{"y1"})
	wantLayer(t, m, "bn_in", "BatchNormalization", []string{"x", "s2", "b2", "m2", "v2"}, []string{"y2"})
	if len(m.Layers) != 3 {
		t.Errorf("%d layers, want 3", len(m.Layers))
	}
	for _, gone := range []string{"c", "scale", "beta", "mean", "var"} {
		if m.Tensor(gone) != nil {
			t.Errorf("tensor %q should be gone after folding", gone)
		}
	}
	wantShapes(t, m, map[string][]int{"bn": {1, 3, 4, 4}, "y1": {1, 3, 4, 4}, "y2": {1, 2, 4, 4}})
}

func TestCustomOp(t *testing.T) {
	m := load(t, "custom", Options{})
	l := wantLayer(t, m, "ss", "ScaleShift", []string{"x", "block1.scale", "block1.shift"}, []string{"y"})
	wantAttrs(t, l, []model.Attr{
		ints("axes", 1),
		{Name: "weights", Kind: model.AttrFloats, Floats: []float32{0.5, 1.5}},
		{Name: "mode", Kind: model.AttrString, Str: "channel"},
		flt("eps", 1e-4),
		int1("count", 3),
		ints("table", 7, -8),
		{Name: "domain", Kind: model.AttrString, Str: "com.example"},
	})
	wantConst(t, m, "block1.scale", model.Float32, []int{3}, f32bytes(0.5, 1, 2))
	wantConst(t, m, "block1.shift", model.Float32, []int{3}, f32bytes(-1, 0, 1))
	wantLayer(t, m, "relu", "Relu", []string{"y"}, []string{"z"})
	wantShapes(t, m, map[string][]int{"y": {1, 3, 2, 2}, "z": {1, 3, 2, 2}})

	builtin := func(typ string) bool { return typ == "Relu" }
	err := UnsupportedOps(m, builtin)
	want := `model "custom": 1 layer type has no implementation:
  no implementation for layer type "ScaleShift" (layer "ss", domain "com.example"): load a custom-layer config (-c) that defines it`
	if err == nil || err.Error() != want {
		t.Errorf("UnsupportedOps:\n got %v\nwant %s", err, want)
	}
	if err := UnsupportedOps(m, func(string) bool { return true }); err != nil {
		t.Errorf("every type known, yet: %v", err)
	}
}

func TestUnknownOpWithoutShape(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "unknown_noshape.onnx"))
	if err == nil {
		t.Fatal("a model whose unknown operators have no declared output shape loaded")
	}
	for _, want := range []string{"unknown_noshape.onnx", `"fancy" (FancyOp)`, `"y"`, `"other" (OtherOp)`, `"z"`, "value_info"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestUnsupportedOps(t *testing.T) {
	m := load(t, "unknown", Options{})
	wantShapes(t, m, map[string][]int{"y": {1, 2}, "r": {1, 2}, "z": {1, 2}, "w": {1, 2}})
	err := UnsupportedOps(m, func(typ string) bool { return typ == "Relu" })
	want := `model "unknown": 2 layer types have no implementation:
  no implementation for layer type "FancyOp" (layer "fancy"): load a custom-layer config (-c) that defines it
  no implementation for layer type "OtherOp" (layers "other", "other2", domain "com.example"): load a custom-layer config (-c) that defines it`
	if err == nil || err.Error() != want {
		t.Errorf("UnsupportedOps:\n got %v\nwant %s", err, want)
	}
}

func TestUnsupportedOpsManyLayers(t *testing.T) {
	m := &model.Model{Name: "many"}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		m.Layers = append(m.Layers, model.Layer{Name: n, Type: "Weird"})
	}
	err := UnsupportedOps(m, func(string) bool { return false })
	var ue *UnsupportedError
	if err == nil || !strings.Contains(err.Error(), `(layers "a", "b", "c" and 2 more)`) {
		t.Fatalf("got %v", err)
	}
	if ue, _ = err.(*UnsupportedError); ue == nil || len(ue.Ops) != 1 || len(ue.Ops[0].Layers) != 5 {
		t.Errorf("error value %#v", err)
	}
}

func TestDynamicBatch(t *testing.T) {
	cases := []struct {
		opt   Options
		batch int
	}{
		{Options{}, 1},
		{Options{Batch: 3}, 3},
		{Options{InputShapes: map[string][]int{"x": {2, 3, 4, 4}}}, 2},
	}
	for _, c := range cases {
		m := load(t, "dynamic", c.opt)
		b := c.batch
		// g's declared ["N", "C", 1, 1] has a symbol no input defines: inferred instead.
		wantShapes(t, m, map[string][]int{"x": {b, 3, 4, 4}, "c": {b, 2, 4, 4}, "g": {b, 2, 1, 1}, "f": {b, 2}, "y": {b, 5}})
	}
	// A batch of 0 holds no values: every layer's outputs are empty, and the model
	// folds to its empty output.
	empty := load(t, "dynamic", Options{InputShapes: map[string][]int{"x": {0, 3, 4, 4}}})
	if y := empty.Tensor("y"); len(empty.Layers) != 0 || len(empty.Inputs) != 0 || y == nil || !y.IsConst() || !slices.Equal(y.Shape, []int{0, 5}) {
		t.Errorf("batch 0: layers %v, inputs %v, y %+v; want none, none and an empty constant [0 5]", empty.Layers, empty.Inputs, y)
	}
	for _, bad := range []struct {
		opt  Options
		want string
	}{
		{Options{InputShapes: map[string][]int{"x": {2, 3, 4}}}, "rank 3"},
		{Options{InputShapes: map[string][]int{"x": {2, 3, 5, 4}}}, "fixes it at 4"},
		{Options{InputShapes: map[string][]int{"nope": {1}}}, `"nope", which is not a graph input`},
		{Options{InputShapes: map[string][]int{"x": {-2, 3, 4, 4}}}, "dimension 0 is -2"},
		{Options{Batch: -1}, "batch size -1"},
	} {
		_, err := bad.opt.Load(filepath.Join("testdata", "dynamic.onnx"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("options %+v: error %v, want one mentioning %q", bad.opt, err, bad.want)
		}
	}
}

func TestExternalData(t *testing.T) {
	m := load(t, "external", Options{})
	wantConst(t, m, "e1", model.Float32, []int{1, 4}, f32bytes(1, 2, 3, 4))
	wantConst(t, m, "e2", model.Float32, []int{4}, f32bytes(0.5, -1, 2, 0.25))
	wantShapes(t, m, map[string][]int{"y": {1, 4}})

	_, err := Load(filepath.Join("testdata", "external_escape.onnx"))
	if err == nil || !strings.Contains(err.Error(), `"../testdata/external.bin": refusing a path outside the model's folder`) {
		t.Errorf("escaping location: %v", err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "external.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(data, "", "mem.onnx"); err == nil || !strings.Contains(err.Error(), "without a folder") {
		t.Errorf("no folder: %v", err)
	}

	// A symbolic link inside the folder that points outside it is refused too.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.onnx"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", "external.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "external.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "m.onnx")); err == nil || !strings.Contains(err.Error(), "external data") {
		t.Errorf("link out of the folder: %v", err)
	}

	// A file too short for the tensor.
	if err := os.Remove(filepath.Join(dir, "external.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "external.bin"), make([]byte, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "m.onnx")); err == nil || !strings.Contains(err.Error(), "run past the end") {
		t.Errorf("short file: %v", err)
	}
}

func TestElementTypes(t *testing.T) {
	m := load(t, "types", Options{})
	le := binary.LittleEndian
	i32 := func(vs ...int32) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint32(b, uint32(v))
		}
		return b
	}
	i64 := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint64(b, uint64(v))
		}
		return b
	}
	cases := []struct {
		name  string
		typ   model.DataType
		shape []int
		data  []byte
	}{
		{"f32_typed", model.Float32, []int{2}, f32bytes(1.5, -2)},
		{"f32_raw", model.Float32, []int{2}, f32bytes(0.25, 8)},
		{"f32_scalar", model.Float32, []int{}, f32bytes(3.5)},
		{"f32_empty", model.Float32, []int{0, 3}, []byte{}},
		{"f64_typed", model.Float32, []int{2}, f32bytes(0.1, 3)},
		{"f64_raw", model.Float32, []int{2}, f32bytes(1.5, -2.25)},
		{"f16_typed", model.Float16, []int{2}, []byte{0x00, 0x3c, 0x00, 0xc1}},
		{"f16_raw", model.Float16, []int{2}, []byte{0x00, 0x3c, 0x00, 0xc1}},
		{"bf16_typed", model.Float32, []int{1}, f32bytes(1.5)},
		{"i8_typed", model.Int8, []int{2}, []byte{0xfd, 7}},
		{"u8_raw", model.Uint8, []int{2}, []byte{0, 255}},
		{"bool_typed", model.Uint8, []int{3}, []byte{1, 0, 1}},
		{"i16_raw", model.Int32, []int{2}, i32(-2, 300)},
		{"u16_typed", model.Int32, []int{2}, i32(65535, 1)},
		{"i32_typed", model.Int32, []int{2}, i32(-5, 6)},
		{"i64_typed", model.Int64, []int{2}, i64(-7, 1<<40)},
		{"u32_typed", model.Int64, []int{1}, i64(4000000000)},
		{"u64_raw", model.Int64, []int{1}, i64(5)},
	}
	for _, c := range cases {
		wantConst(t, m, c.name, c.typ, c.shape, c.data)
	}
}

func TestIdentityOutputs(t *testing.T) {
	m := load(t, "identity", Options{})
	wantLayer(t, m, "relu", "Relu", []string{"x"}, []string{"out1"})
	wantLayer(t, m, "sig", "Sigmoid", []string{"out1"}, []string{"out3"})
	// A graph input cannot also be the output: the copy stays.
	wantLayer(t, m, "copy_x", "Identity", []string{"x"}, []string{"out2"})
	if !slices.Equal(m.Outputs, []string{"out1", "out2", "out3"}) {
		t.Errorf("outputs %q", m.Outputs)
	}
	wantShapes(t, m, map[string][]int{"out1": {1, 2}, "out3": {1, 2}})
	if m.Tensor("r") != nil {
		t.Error(`tensor "r" is still there; the Relu's output should be named out1`)
	}
}

func TestHalfToFloat(t *testing.T) {
	// Bit patterns and values from the IEEE 754 binary16 tables.
	cases := map[uint16]float32{
		0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 5.9604645e-08,
		0x03ff: 6.097555e-05, 0x0400: 6.1035156e-05, 0x3555: 0.33325195,
	}
	for h, want := range cases {
		if got := halfToFloat(h); got != want {
			t.Errorf("halfToFloat(%#04x) = %g, want %g", h, got, want)
		}
	}
	if !math.IsInf(float64(halfToFloat(0xfc00)), -1) || !math.IsNaN(float64(halfToFloat(0x7e00))) {
		t.Error("infinity or NaN converted wrongly")
	}
	if got := halfToFloat(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("negative zero became %g", got)
	}
}
