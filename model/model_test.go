package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/clhost/clhost/internal/modelfb"
)

// sampleModel uses every feature of the format: each element type, each attribute kind,
// a scalar and an empty constant, NaN and infinities, an omitted optional input, a layer
// with two outputs, a declared intermediate shape and two graph outputs.
func sampleModel(t testing.TB) *Model {
	t.Helper()
	b := NewBuilder("sample")
	x := b.Input("x", Float32, 1, 2, 3, 3)
	w := b.ConstFloat32("w", []int{2, 2, 1, 1}, []float32{1, -2.5, float32(math.Inf(1)), float32(math.NaN())})
	bias := b.ConstFloat32("bias", []int{2}, []float32{0.1, float32(math.Inf(-1))})
	h := b.Const("half", Float16, []int{3}, []byte{0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b}) // 1, -2, 65504
	i8 := b.Const("i8", Int8, []int{2}, []byte{0x80, 0x7f})
	u8 := b.Const("u8", Uint8, []int{2}, []byte{0, 255})
	i32 := b.ConstInt32("i32", []int{2}, []int32{math.MinInt32, 7})
	i64 := b.ConstInt64("shape", []int{1}, []int64{-1})
	scalar := b.ConstFloat32("scalar", nil, []float32{6})
	empty := b.Const("empty", Float32, []int{0, 4}, nil)
	c := b.Layer("Conv", "conv", []string{x, w, bias},
		IntsAttr("strides", 1, 1), IntsAttr("pads"), IntAttr("group", 1),
		FloatAttr("alpha", 0.2), FloatsAttr("scales", 1.5, float32(math.NaN())),
		StringAttr("auto_pad", "NOTSET"))
	clip := b.Layer("Clip", "clip", []string{c, "", scalar})
	outs := b.LayerOutputs("Custom", "custom", []string{clip, h, i8, u8, i32, i64, empty}, []string{"custom.a", "custom.b"})
	b.Tensor("custom.a", Float32, 1, 2, 3, 3)
	b.Tensor("custom.b", Float32, 18)
	b.Output(outs...)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// diffModels names the first difference between two models, treating nil and empty lists
// alike except for tensor data, where nil means "no data". NaNs compare by bits.
func diffModels(a, b *Model) string {
	if a.Name != b.Name {
		return fmt.Sprintf("name %q vs %q", a.Name, b.Name)
	}
	if !slices.Equal(a.Inputs, b.Inputs) || !slices.Equal(a.Outputs, b.Outputs) {
		return fmt.Sprintf("graph inputs/outputs %v %v vs %v %v", a.Inputs, a.Outputs, b.Inputs, b.Outputs)
	}
	if len(a.Tensors) != len(b.Tensors) || len(a.Layers) != len(b.Layers) {
		return fmt.Sprintf("%d tensors %d layers vs %d tensors %d layers", len(a.Tensors), len(a.Layers), len(b.Tensors), len(b.Layers))
	}
	for i := range a.Tensors {
		x, y := &a.Tensors[i], &b.Tensors[i]
		if x.Name != y.Name || x.Type != y.Type || !slices.Equal(x.Shape, y.Shape) ||
			x.IsConst() != y.IsConst() || !bytes.Equal(x.Data, y.Data) {
			return fmt.Sprintf("tensor %d: %+v vs %+v", i, *x, *y)
		}
	}
	for i := range a.Layers {
		x, y := &a.Layers[i], &b.Layers[i]
		if x.Name != y.Name || x.Type != y.Type || !slices.Equal(x.Inputs, y.Inputs) ||
			!slices.Equal(x.Outputs, y.Outputs) || len(x.Attrs) != len(y.Attrs) {
			return fmt.Sprintf("layer %d: %+v vs %+v", i, *x, *y)
		}
		for k := range x.Attrs {
			p, q := &x.Attrs[k], &y.Attrs[k]
			same := p.Name == q.Name && p.Kind == q.Kind
			switch p.Kind {
			case AttrInt:
				same = same && p.Int == q.Int
			case AttrFloat:
				same = same && math.Float32bits(p.Float) == math.Float32bits(q.Float)
			case AttrInts:
				same = same && slices.Equal(p.Ints, q.Ints)
			case AttrFloats:
				same = same && slices.EqualFunc(p.Floats, q.Floats, func(u, v float32) bool {
					return math.Float32bits(u) == math.Float32bits(v)
				})
			case AttrString:
				same = same && p.Str == q.Str
			}
			if !same {
				return fmt.Sprintf("layer %d attribute %d: %+v vs %+v", i, k, *p, *q)
			}
		}
	}
	return ""
}

func TestRoundTrip(t *testing.T) {
	orig := sampleModel(t)
	dir := t.TempDir()
	clm := filepath.Join(dir, "m.clm")
	if err := Save(orig, clm); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(clm)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffModels(orig, loaded); d != "" {
		t.Fatalf("Save → Load changed the model: %s", d)
	}
	js := filepath.Join(dir, "m.json")
	if err := SaveJSON(loaded, js); err != nil {
		t.Fatal(err)
	}
	back, err := LoadJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffModels(orig, back); d != "" {
		t.Fatalf("→ JSON → Load changed the model: %s", d)
	}
	// The file form is deterministic, so the same model always gives the same bytes.
	a, err := Encode(orig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("encoding the round-tripped model gives different bytes")
	}
	if string(a[4:8]) != "CLHM" {
		t.Fatalf("file identifier %q", a[4:8])
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("saving left %d files, want the 2 saved", len(entries))
	}
}

func TestJSONText(t *testing.T) {
	b := NewBuilder("tiny")
	x := b.Input("x", Float32, 2)
	k := b.ConstFloat32("k", []int{2}, []float32{0.1, float32(math.Inf(-1))})
	s := b.ConstInt64("s", []int{1}, []int64{-1})
	y := b.Layer("Mul", "mul", []string{x, k}, IntAttr("n", 3), FloatsAttr("f", 0.5))
	z := b.Layer("Reshape", "r", []string{y, s})
	b.Output(z)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "format": "clhost-model",
  "version": 1,
  "name": "tiny",
  "inputs": ["x"],
  "outputs": ["r"],
  "tensors": [
    {"name": "x", "type": "float32", "shape": [2]},
    {"name": "k", "type": "float32", "shape": [2], "data": [0.1, "-Infinity"]},
    {"name": "s", "type": "int64", "shape": [1], "data": [-1]}
  ],
  "layers": [
    {"name": "mul", "type": "Mul", "inputs": ["x", "k"], "outputs": ["mul"], "attrs": [
      {"name": "n", "int": 3},
      {"name": "f", "floats": [0.5]}
    ]},
    {"name": "r", "type": "Reshape", "inputs": ["mul", "s"], "outputs": ["r"], "attrs": []}
  ]
}
`
	if string(got) != want {
		t.Fatalf("JSON form:\n%s\nwant:\n%s", got, want)
	}
}

// decodeErr decodes and insists on a clean refusal: an *Error, not the recover net.
func decodeErr(t *testing.T, data []byte, what string) error {
	t.Helper()
	m, err := Decode(data, "m.clm")
	if err != nil {
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("%s: error of type %T: %v", what, err, err)
		}
		if strings.Contains(err.Error(), "unreadable structure") {
			t.Fatalf("%s: the verifier let a bad offset through: %v", what, err)
		}
		if !strings.HasPrefix(err.Error(), "m.clm: ") {
			t.Fatalf("%s: error does not name the file: %v", what, err)
		}
		return err
	}
	if m == nil {
		t.Fatalf("%s: nil model and nil error", what)
	}
	return nil
}

func TestTruncatedFilesRefused(t *testing.T) {
	data, err := Encode(sampleModel(t))
	if err != nil {
		t.Fatal(err)
	}
	// The builder may end the file with alignment padding that nothing refers to; a prefix
	// may decode only when all it lost is such zeros, and then to the same model.
	orig := sampleModel(t)
	for n := range len(data) {
		if decodeErr(t, data[:n], fmt.Sprintf("first %d bytes", n)) == nil {
			if bytes.Count(data[n:], []byte{0}) != len(data)-n {
				t.Fatalf("the first %d of %d bytes decoded, losing %x", n, len(data), data[n:])
			}
			m, _ := Decode(data[:n], "m.clm")
			if d := diffModels(orig, m); d != "" {
				t.Fatalf("the first %d bytes decoded to another model: %s", n, d)
			}
		}
	}
}

func TestCorruptedFilesNeverPanic(t *testing.T) {
	data, err := Encode(sampleModel(t))
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	buf := make([]byte, len(data))
	for i := range data {
		for _, mask := range []byte{0x01, 0x10, 0x80, 0xff} {
			copy(buf, data)
			buf[i] ^= mask
			if decodeErr(t, buf, fmt.Sprintf("byte %d ^ %#x", i, mask)) != nil {
				refused++
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		copy(buf, data)
		for range 1 + rng.IntN(8) {
			buf[rng.IntN(len(buf))] = byte(rng.Uint32())
		}
		decodeErr(t, buf, fmt.Sprintf("random trial %d", trial))
	}
	// Most single-byte damage hits structure, names or types and must be noticed.
	if refused < len(data) {
		t.Fatalf("only %d of %d flipped files were refused", refused, 4*len(data))
	}
}

func TestDecodeHeaderErrors(t *testing.T) {
	good, err := Encode(sampleModel(t))
	if err != nil {
		t.Fatal(err)
	}
	wrongID := slices.Clone(good)
	copy(wrongID[4:], "ONNX")
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "m.clm: corrupt file: 0 bytes is too short"},
		{"short", good[:7], "7 bytes is too short"},
		{"identifier", wrongID, `not a clhost model: file identifier "ONNX", want "CLHM"`},
		{"version 2", rawModel(2, false), "format version 2 is not the one this clhost reads (1)"},
		{"no version", rawModel(0, false), "format version is missing"},
		{"shared tables", rawModel(1, true), "refer to the same data so often"},
	}
	for _, c := range cases {
		err := decodeErr(t, c.data, c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// rawModel writes a file with the flatbuffers builder directly, to make files Encode never
// would: another version, or one tensor table referred to 20000 times, each reference
// costing 4 bytes of file but 1000 shape elements of decoding.
func rawModel(version uint32, shared bool) []byte {
	b := flatbuffers.NewBuilder(0)
	var tensors flatbuffers.UOffsetT
	if shared {
		name := b.CreateString("t")
		modelfb.TensorStartShapeVector(b, 1000)
		for range 1000 {
			b.PrependInt64(1)
		}
		shape := b.EndVector(1000)
		modelfb.TensorStart(b)
		modelfb.TensorAddName(b, name)
		modelfb.TensorAddShape(b, shape)
		t := modelfb.TensorEnd(b)
		modelfb.ModelStartTensorsVector(b, 20000)
		for range 20000 {
			b.PrependUOffsetT(t)
		}
		tensors = b.EndVector(20000)
	}
	modelfb.ModelStart(b)
	if version != 0 {
		modelfb.ModelAddFormatVersion(b, version)
	}
	if shared {
		modelfb.ModelAddTensors(b, tensors)
	}
	b.FinishWithFileIdentifier(modelfb.ModelEnd(b), []byte(FileIdentifier))
	return b.FinishedBytes()
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.clm"))
	if err == nil || !strings.Contains(err.Error(), "nope.clm") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestSaveRefusesInvalidModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.clm")
	err := Save(&Model{Name: "bad"}, path)
	if err == nil || !strings.Contains(err.Error(), "saving "+path) || !strings.Contains(err.Error(), "has no outputs") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an invalid model left a file: %v", err)
	}
}

func TestValidateProblems(t *testing.T) {
	f32 := func(name string, shape ...int) Tensor { return Tensor{Name: name, Type: Float32, Shape: shape} }
	layer := func(typ, name string, in []string, out ...string) Layer {
		return Layer{Name: name, Type: typ, Inputs: in, Outputs: out}
	}
	// base is valid: x → relu → y.
	base := func() *Model {
		return &Model{
			Name:    "v",
			Tensors: []Tensor{f32("x", 1, 4)},
			Layers:  []Layer{layer("Relu", "relu", []string{"x"}, "y")},
			Inputs:  []string{"x"},
			Outputs: []string{"y"},
		}
	}
	if err := Validate(base()); err != nil {
		t.Fatalf("base model: %v", err)
	}
	cases := []struct {
		name   string
		change func(m *Model)
		want   string
	}{
		{"tensor without name", func(m *Model) { m.Tensors = append(m.Tensors, Tensor{Data: []byte{}}) }, "tensor 1 has no name"},
		{"duplicate tensor", func(m *Model) { m.Tensors = append(m.Tensors, f32("x", 1)) }, `tensor "x" is declared twice (tensors 0 and 1)`},
		{"unknown type", func(m *Model) { m.Tensors[0].Type = 9 }, `tensor "x" has unknown element type 9`},
		{"negative dim", func(m *Model) { m.Tensors[0].Shape = []int{1, -3} }, `tensor "x": dimension 1 of shape [1 -3] is negative`},
		{"huge shape", func(m *Model) { m.Tensors[0].Shape = []int{1 << 40, 1 << 40} }, `tensor "x": shape [1099511627776 1099511627776] has too many elements`},
		{"short data", func(m *Model) {
			m.Tensors = append(m.Tensors, Tensor{Name: "c", Type: Float32, Shape: []int{2, 3}, Data: make([]byte, 20)})
			m.Layers[0].Inputs = append(m.Layers[0].Inputs, "c")
		}, `tensor "c": data is 20 bytes, but shape [2 3] of float32 needs 24`},
		{"layer without name", func(m *Model) { m.Layers[0].Name = "" }, "layer 0 has no name"},
		{"duplicate layer", func(m *Model) {
			m.Layers = append(m.Layers, layer("Relu", "relu", []string{"y"}, "z"))
		}, `layer name "relu" is used twice (layers 0 and 1)`},
		{"no type", func(m *Model) { m.Layers[0].Type = "" }, `layer "relu" has no type`},
		{"no outputs", func(m *Model) { m.Layers[0].Outputs = nil; m.Outputs = []string{"x"} }, `layer "relu" has no outputs`},
		{"unnamed output", func(m *Model) { m.Layers[0].Outputs = append(m.Layers[0].Outputs, "") }, `layer "relu": output 1 has no name`},
		{"output twice", func(m *Model) { m.Layers[0].Outputs = []string{"y", "y"} }, `layer "relu" lists output "y" twice`},
		{"two producers", func(m *Model) {
			m.Layers = append(m.Layers, layer("Sigmoid", "sig", []string{"x"}, "y"))
		}, `tensor "y" is the output of both layer "relu" and layer "sig"`},
		{"writes constant", func(m *Model) {
			m.Tensors = append(m.Tensors, Tensor{Name: "y", Type: Float32, Shape: []int{1}, Data: make([]byte, 4)})
		}, `layer "relu" writes "y", which is a constant`},
		{"attribute without name", func(m *Model) { m.Layers[0].Attrs = []Attr{{Kind: AttrInt}} }, `layer "relu": attribute 0 has no name`},
		{"attribute twice", func(m *Model) { m.Layers[0].Attrs = []Attr{IntAttr("a", 1), FloatAttr("a", 2)} }, `layer "relu": attribute "a" is given twice`},
		{"attribute kind", func(m *Model) { m.Layers[0].Attrs = []Attr{{Name: "a", Kind: 7}} }, `layer "relu": attribute "a" has unknown kind 7`},
		{"unnamed graph input", func(m *Model) { m.Inputs = append(m.Inputs, "") }, "a graph input has no name"},
		{"graph input twice", func(m *Model) { m.Inputs = append(m.Inputs, "x") }, `graph input "x" is listed twice`},
		{"undeclared graph input", func(m *Model) { m.Inputs = append(m.Inputs, "q") }, `graph input "q" is not among the tensors`},
		{"constant graph input", func(m *Model) { m.Tensors[0].Data = make([]byte, 16) }, `graph input "x" is a constant`},
		{"produced graph input", func(m *Model) {
			m.Tensors = append(m.Tensors, f32("y", 1, 4))
			m.Inputs = append(m.Inputs, "y")
		}, `graph input "y" is also the output of layer "relu"`},
		{"dangling input", func(m *Model) { m.Layers[0].Inputs = []string{"x", "ghost"} }, `layer "relu" (Relu): input "ghost" is not a graph input, a constant or the output of any layer`},
		{"no outputs at all", func(m *Model) { m.Outputs = nil }, "the model has no outputs"},
		{"unnamed graph output", func(m *Model) { m.Outputs = append(m.Outputs, "") }, "a graph output has no name"},
		{"graph output twice", func(m *Model) { m.Outputs = append(m.Outputs, "y") }, `graph output "y" is listed twice`},
		{"dangling graph output", func(m *Model) { m.Outputs = []string{"nowhere"} }, `graph output "nowhere" is not a graph input, a constant or the output of any layer`},
		{"orphan tensor", func(m *Model) { m.Tensors = append(m.Tensors, f32("lost", 3)) }, `tensor "lost" has no data and is neither a graph input nor the output of any layer`},
		{"self loop", func(m *Model) { m.Layers[0].Inputs = []string{"x", "y"} }, `layers form a cycle: "relu" -> "relu"`},
		{"two-layer cycle", func(m *Model) {
			// a reads b's output and b reads a's: from a the walk goes to b and back.
			m.Layers = []Layer{
				layer("Add", "a", []string{"x", "tb"}, "ta"),
				layer("Relu", "b", []string{"ta"}, "tb"),
				layer("Relu", "c", []string{"ta"}, "y"),
			}
		}, `layers form a cycle: "b" -> "a" -> "b"`},
	}
	for _, c := range cases {
		m := base()
		c.change(m)
		err := Validate(m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant it to contain %s", c.name, err, c.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), `model "v": `) {
			t.Errorf("%s: error does not name the model: %v", c.name, err)
		}
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	m := &Model{Name: "many"}
	for i := range 25 {
		m.Layers = append(m.Layers, Layer{Name: fmt.Sprint("l", i), Type: "Relu", Inputs: []string{"nothing"}, Outputs: []string{fmt.Sprint("o", i)}})
	}
	m.Outputs = []string{"o0"}
	err := Validate(m)
	var me *Error
	if !errors.As(err, &me) || len(me.Problems) != maxProblems || me.More != 25-maxProblems {
		t.Fatalf("got %#v", err)
	}
	if !strings.HasPrefix(err.Error(), `model "many": 25 problems: `) || !strings.HasSuffix(err.Error(), "; and 5 more") {
		t.Fatalf("message: %v", err)
	}
}

func TestLevels(t *testing.T) {
	// Layers listed out of order: c needs b, b needs a, d needs only the input.
	m := &Model{
		Tensors: []Tensor{{Name: "x", Shape: []int{1}}},
		Layers: []Layer{
			{Name: "c", Type: "Add", Inputs: []string{"tb", "ta"}, Outputs: []string{"tc"}},
			{Name: "b", Type: "Relu", Inputs: []string{"ta"}, Outputs: []string{"tb"}},
			{Name: "d", Type: "Relu", Inputs: []string{"x"}, Outputs: []string{"td"}},
			{Name: "a", Type: "Relu", Inputs: []string{"x"}, Outputs: []string{"ta"}},
		},
		Inputs:  []string{"x"},
		Outputs: []string{"tc", "td"},
	}
	levels, err := m.Levels()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{2, 3}, {1}, {0}}
	if fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Fatalf("levels %v, want %v", levels, want)
	}
}

func TestJSONErrors(t *testing.T) {
	valid, err := ToJSON(sampleModel(t))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("sample JSON lacks %q", old)
		}
		return bytes.Replace(valid, []byte(old), []byte(new), 1)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "m.json: empty file"},
		{"truncated", valid[:len(valid)/2], "m.json: the JSON ends before the model does"},
		{"syntax", []byte("{\n  \"name\": ,\n}"), "not valid JSON at line 2, column 11"},
		{"type", edit(`"version": 1`, `"version": "1"`), `field "version": expected int, got string`},
		{"unknown field", edit(`"inputs": ["x"]`, `"input": ["x"]`), `unknown field "input"`},
		{"format", edit(`"clhost-model"`, `"other"`), `"format" is "other", want "clhost-model"`},
		{"version", edit(`"version": 1`, `"version": 3`), `"version" is 3, this clhost reads 1`},
		{"element type", edit(`"type": "int8"`, `"type": "bool"`), `tensor "i8": unknown type "bool"`},
		{"count", edit(`[1, -2.5, "Infinity", "NaN"]`, `[1, -2.5, 3]`), `tensor "w": data has 3 values, shape [2 2 1 1] needs 4`},
		{"bad float", edit(`[1, -2.5, "Infinity", "NaN"]`, `[1, -2.5, "inf", 0]`), `tensor "w": data: element 2: "inf" is not a number`},
		{"float range", edit(`[1, -2.5, "Infinity", "NaN"]`, `[1, -2.5, 1e39, 0]`), `tensor "w": data: element 2: 1e39 is out of the float32 range`},
		{"half range", edit(`[1, -2, 65504]`, `[1, -2, 65520]`), `tensor "half": data: element 2: 65520 is out of the float16 range`},
		{"int8 range", edit(`[-128, 127]`, `[-128, 128]`), `tensor "i8": data: element 1: 128 is not an int8`},
		{"uint8 sign", edit(`[0, 255]`, `[-1, 255]`), `tensor "u8": data: element 0: -1 is not a uint8`},
		{"fraction", edit(`[-1]`, `[1.5]`), `tensor "shape": data: element 0: 1.5 is not an int64`},
		{"not an array", edit(`[-1]`, `{"a": 1}`), `tensor "shape": data: not an array`},
		{"two kinds", edit(`{"name": "group", "int": 1}`, `{"name": "group", "int": 1, "float": 1}`), `layer "conv": attribute "group": needs exactly one of`},
		{"no kind", edit(`{"name": "group", "int": 1}`, `{"name": "group"}`), `(has 0)`},
		{"trailing", append(slices.Clone(valid), []byte(`{}`)...), "unexpected data after the model object"},
		{"invalid model", edit(`"outputs": ["custom.a", "custom.b"]`, `"outputs": []`), "the model has no outputs"},
	}
	for _, c := range cases {
		_, err := FromJSON(c.data, "m.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "m.json: ") {
			t.Errorf("%s: got %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestHalf(t *testing.T) {
	// Expected encodings worked out from the binary16 layout: sign, 5 exponent bits with
	// bias 15, 10 mantissa bits.
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0x0000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},               // largest finite
		{65520, 0x7c00},               // halfway to 2^16 rounds up to infinity
		{0.1, 0x2e66},                 // 0.0999755859375 (0.1 is 0x2e66.66…)
		{1.0 / 3, 0x3555},             // 0x3555.55…
		{1 + 1.0/2048, 0x3c00},        // exactly halfway between 0x3c00 and 0x3c01: even
		{1 + 3.0/2048, 0x3c02},        // halfway between 0x3c01 and 0x3c02: even
		{1.0 / (1 << 24), 0x0001},     // smallest subnormal
		{1.0 / (1 << 25), 0x0000},     // half of it: tie to even zero
		{1.5 / (1 << 25), 0x0001},     // above the tie
		{1023.0 / (1 << 24), 0x03ff},  // largest subnormal
		{1023.75 / (1 << 24), 0x0400}, // rounds up into the smallest normal
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, c := range cases {
		if got := Float32ToHalf(c.f); got != c.h {
			t.Errorf("Float32ToHalf(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := Float32ToHalf(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN became %#04x", h)
	}
	// Every finite half converts to float32 and back unchanged.
	for h := range 1 << 16 {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN payloads are not kept
		}
		if got := Float32ToHalf(HalfToFloat32(uint16(h))); got != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, HalfToFloat32(uint16(h)), got)
		}
	}
	if HalfToFloat32(0x3555) != 0.333251953125 || HalfToFloat32(0x0001) != 1.0/(1<<24) {
		t.Error("HalfToFloat32 values")
	}
}

func TestTensorValues(t *testing.T) {
	m := sampleModel(t)
	w, err := m.Tensor("w").Float32s()
	if err != nil || len(w) != 4 || w[1] != -2.5 || !math.IsInf(float64(w[2]), 1) {
		t.Fatalf("w = %v, %v", w, err)
	}
	for name, want := range map[string][]int64{
		"i8":    {-128, 127},
		"u8":    {0, 255},
		"i32":   {math.MinInt32, 7},
		"shape": {-1},
	} {
		got, err := m.Tensor(name).Int64s()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := m.Tensor("x").Float32s(); err == nil || !strings.Contains(err.Error(), `tensor "x" has no data`) {
		t.Errorf("x: %v", err)
	}
	if _, err := m.Tensor("i8").Float32s(); err == nil || !strings.Contains(err.Error(), "holds int8, not float32") {
		t.Errorf("i8: %v", err)
	}
	if _, err := m.Tensor("w").Int64s(); err == nil || !strings.Contains(err.Error(), "holds float32, not integers") {
		t.Errorf("w: %v", err)
	}
	if got := binary.LittleEndian.Uint16(m.Tensor("half").Data[4:]); got != 0x7bff {
		t.Errorf("half data %#x", got)
	}
}

func TestBuilderIsIndependentOfBuiltModel(t *testing.T) {
	b := NewBuilder("m")
	x := b.Input("x", Float32, 2)
	b.Output(b.Layer("Relu", "r", []string{x}))
	m1, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.Output(b.Layer("Sigmoid", "s", []string{x}))
	m2, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(m1.Layers) != 1 || len(m1.Outputs) != 1 || len(m2.Layers) != 2 || len(m2.Outputs) != 2 {
		t.Fatalf("m1 %d layers %v, m2 %d layers %v", len(m1.Layers), m1.Outputs, len(m2.Layers), m2.Outputs)
	}
	_, err = NewBuilder("dup").Build()
	if err == nil || !strings.Contains(err.Error(), `model "dup": the model has no outputs`) {
		t.Fatalf("empty builder: %v", err)
	}
}

// TestLoadOtherForms: Load of an ONNX or JSON model, by name or by content, says which
// loader reads it instead of reporting a bad file identifier.
func TestLoadOtherForms(t *testing.T) {
	onnxPath := filepath.Join("..", "internal", "onnx", "testdata", "conv.onnx")
	onnxData, err := os.ReadFile(onnxPath)
	if err != nil {
		t.Fatal(err)
	}
	jsonData, err := ToJSON(sampleModel(t))
	if err != nil {
		t.Fatal(err)
	}
	const onnxHint = "an ONNX model, not a clhost one: load it with host.LoadModel or onnx.Load"
	const jsonHint = "a model in JSON form, not a clhost file: load it with host.LoadModel or model.LoadJSON"
	if _, err := Load(onnxPath); err == nil || err.Error() != onnxPath+": "+onnxHint {
		t.Errorf("Load(%s): %v", onnxPath, err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"renamed.clm", onnxData, onnxHint},
		{"m.json", jsonData, jsonHint},
		{"renamed.clm", jsonData, jsonHint},
		{"empty.json", nil, jsonHint},
	} {
		if _, err := Decode(c.data, c.name); err == nil || err.Error() != c.name+": "+c.want {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
