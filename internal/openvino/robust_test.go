package openvino

// Damaged and unsupported IR: each is an error naming the file, the layer and the
// problem, never a panic. The cases edit the text of testdata/custom.xml.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

func fixture(t testing.TB, name string) ([]byte, []byte) {
	t.Helper()
	x, err := os.ReadFile(filepath.Join("testdata", name+".xml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return x, b
}

func isScaleShift(typ string) bool { return typ == "ScaleShift" }

func TestIRBadFiles(t *testing.T) {
	x, bin := fixture(t, "custom")
	text := string(x)
	cases := []struct {
		name   string
		edit   func(s string) string
		bin    []byte
		custom func(string) bool
		want   []string
	}{
		{name: "short bin", bin: bin[:20], want: []string{`layer 839 "block1/shift" (Const)`, "past the end of the weights file (20 bytes)"}},
		{name: "const past end", edit: func(s string) string { return strings.Replace(s, `offset="16"`, `offset="4096"`, 1) }, want: []string{`layer 839 "block1/shift"`, "offset 4096", "past the end"}},
		{name: "const wrong size", edit: func(s string) string { return strings.Replace(s, `offset="16" size="12"`, `offset="16" size="8"`, 1) }, want: []string{`layer 839`, "size 8 does not hold 3 elements of f32"}},
		{name: "edge to missing layer", edit: func(s string) string { return strings.Replace(s, `to-layer="596"`, `to-layer="597"`, 1) }, want: []string{"edge 4", "ends at layer 597, which the IR does not have"}},
		{name: "edge to missing port", edit: func(s string) string {
			return strings.Replace(s, `to-layer="677" to-port="0"`, `to-layer="677" to-port="5"`, 1)
		}, want: []string{`port 5 of layer 677 "relu" (ReLU), which is not one of its input ports`}},
		{name: "two producers", edit: func(s string) string {
			return strings.Replace(s, "\t</edges>", "\t\t<edge from-layer=\"1\" from-port=\"0\" to-layer=\"677\" to-port=\"0\" />\n\t</edges>", 1)
		}, want: []string{`layer 677 "relu" (ReLU): input port 0 has two producers`, `port 3 of layer 758 "scaleshift"`, `port 0 of layer 1 "x"`}},
		{name: "cycle", edit: func(s string) string {
			return strings.Replace(s, `from-layer="1" from-port="0" to-layer="758"`, `from-layer="677" from-port="1" to-layer="758"`, 1)
		}, want: []string{`the edges form a cycle: layer 677 "relu" (ReLU) → layer 758 "scaleshift" (ScaleShift) → layer 677 "relu" (ReLU) (and 1 layer(s) after it wait on it)`}},
		{name: "const offset overflows", edit: func(s string) string {
			return strings.Replace(s, `offset="16" size="12"`, `offset="9223372036854775800" size="12"`, 1)
		}, want: []string{`layer 839 "block1/shift" (Const)`, "offset 9223372036854775800", "past the end of the weights file"}},
		{name: "empty file", edit: func(string) string { return "" }, want: []string{"not an OpenVINO IR: the file holds no XML element"}},
		{name: "text, not XML", edit: func(string) string { return "model weights v2\n" }, want: []string{"not an OpenVINO IR: the file holds no XML element"}},
		{name: "pooling without a kernel", edit: func(s string) string {
			return strings.Replace(s, `type="ReLU" version="opset1"`, `type="MaxPool" version="opset1"`, 1)
		}, want: []string{`layer 677 "relu" (MaxPool): the attribute kernel`, "is missing"}},
		{name: "ceil pooling with a window in the padding", edit: func(s string) string {
			// OpenVINO gives 4 → 3 here, its last window in the end padding; clhost's
			// pooling has no such window, so the reader says so rather than a shape.
			return strings.Replace(s, `type="ReLU" version="opset1">`, `type="MaxPool" version="opset1">`+"\n\t\t\t"+`<data strides="2,2" pads_begin="0,0" pads_end="1,1" kernel="1,1" rounding_type="ceil" />`, 1)
		}, want: []string{`layer 677 "relu" (MaxPool): rounding_type ceil along spatial axis 0 (size 4, pads 0+1, kernel 1, stride 2)`, "ceil_torch"}},
		{name: "unknown precision", edit: func(s string) string {
			return strings.Replace(s, `precision="FP32" names="y"`, `precision="FP7" names="y"`, 1)
		}, want: []string{`layer 677 "relu" (ReLU)`, `unknown precision "FP7"`}},
		{name: "unknown element type", edit: func(s string) string {
			return strings.Replace(s, `element_type="f32" shape="3" offset="0"`, `element_type="f8e4m3" shape="3" offset="0"`, 1)
		}, want: []string{`layer 920 "block1/scale"`, `unknown element_type "f8e4m3"`}},
		{name: "unknown op version", edit: func(s string) string {
			return strings.Replace(s, `type="ReLU" version="opset1"`, `type="ReLU" version="opset99"`, 1)
		}, want: []string{`layer 677 "relu" (ReLU): unknown op version "opset99"`}},
		{name: "op before its opset", edit: func(s string) string {
			return strings.Replace(s, `type="ReLU" version="opset1"`, `type="HSwish" version="opset2"`, 1)
		}, want: []string{`layer 677 "relu" (HSwish)`, "not an operation of opset2"}},
		{name: "malformed XML", edit: func(s string) string { return s[:len(s)/2] }, want: []string{"malformed XML"}},
		{name: "not IR", edit: func(string) string { return `<model><layer/></model>` }, want: []string{"not an OpenVINO IR: the root element is not <net>", "<model>"}},
		{name: "a configuration given as the model", edit: func(string) string { return `<CustomLayer name="x"/>` }, want: []string{"not an OpenVINO IR but a custom-layer configuration", "give it with -c"}},
		{name: "old IR version", edit: func(s string) string { return strings.Replace(s, `version="11"`, `version="7"`, 1) }, want: []string{`IR version "7"`}},
		{name: "bad id", edit: func(s string) string { return strings.Replace(s, `layer id="677"`, `layer id="x677"`, 1) }, want: []string{`layer "relu" (ReLU): id "x677" is not a number`}},
		{name: "bad dim", edit: func(s string) string { return strings.Replace(s, "<dim>4</dim>", "<dim>four</dim>", 1) }, want: []string{`layer 1 "x" (Parameter): port 0: dim 2: "four" is not a size`}},
		{name: "no config for the extension op", custom: func(string) bool { return false },
			want: []string{"no built-in op and no custom layer for ScaleShift (layers 758 \"scaleshift\")", "CustomLayer", "-c"}},
		{name: "op without a built-in", edit: func(s string) string {
			return strings.Replace(s, `type="ReLU" version="opset1"`, `type="DetectionOutput" version="opset8"`, 1)
		},
			want: []string{"no built-in op and no custom layer for DetectionOutput (layers 677 \"relu\")"}},
		{name: "declared shape disagrees", edit: func(s string) string {
			i := strings.Index(s, `names="y">`)
			return s[:i] + strings.Replace(s[i:], "<dim>3</dim>", "<dim>5</dim>", 1)
		}, want: []string{`layer 677 "relu" (ReLU): output port 1: the IR declares [1,5,4,4], clhost's shape inference gives [1,3,4,4]`}},
		{name: "unconnected input", edit: func(s string) string {
			return strings.Replace(s, "\t\t<edge from-layer=\"677\" from-port=\"1\" to-layer=\"596\" to-port=\"0\" />\n", "", 1)
		},
			want: []string{`layer 596 "y/sink_port_0" (Result): input port 0 is not connected`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := text
			if c.edit != nil {
				s = c.edit(s)
			}
			b := bin
			if c.bin != nil {
				b = c.bin
			}
			custom := c.custom
			if custom == nil {
				custom = isScaleShift
			}
			_, err := Options{Custom: custom}.Decode([]byte(s), b, "custom.xml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append([]string{"custom.xml: "}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestIRDynamicDims: a dynamic dim other than the batch takes the given input shape, and
// without one is an error naming the input.
func TestIRDynamicDims(t *testing.T) {
	x, bin := fixture(t, "custom")
	s := []byte(strings.Replace(string(x), "<dim>4</dim>", "<dim>?</dim>", 1))
	if _, err := (Options{Custom: isScaleShift}).Decode(s, bin, "custom.xml"); err == nil || !strings.Contains(err.Error(), `input "x" has the dynamic dims [1,3,?,4]`) {
		t.Fatalf("without a shape: %v", err)
	}
	m, err := Options{Custom: isScaleShift, InputShapes: map[string][]int{"": {1, 3, 4, 4}}}.Decode(s, bin, "custom.xml")
	if err != nil {
		t.Fatal(err)
	}
	if sh := m.Tensor("x").Shape; len(sh) != 4 || sh[2] != 4 {
		t.Fatalf("input shape %v", sh)
	}
}

// TestIRDecompressed: f16-compressed weights are float32 tensors once read, holding the
// f16 values.
func TestIRDecompressed(t *testing.T) {
	x, bin := fixture(t, "classifier")
	m, err := Options{}.Decode(x, bin, "classifier.xml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Tensors {
		c := &m.Tensors[i]
		if c.IsConst() && c.Type != model.Float32 {
			t.Errorf("constant %q is %s", c.Name, c.Type)
		}
	}
	w := m.Tensor("conv1/weights")
	if w == nil || !w.IsConst() {
		t.Fatal("no constant conv1/weights")
	}
	v, err := w.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	raw := bin[:2]
	if want := model.HalfToFloat32(uint16(raw[0]) | uint16(raw[1])<<8); v[0] != want {
		t.Errorf("conv1/weights[0] = %g, want the f16 value %g", v[0], want)
	}
}

// TestIRMaxPoolIndices: MaxPool-8's indices output may stay unread; an IR that reads it
// is refused, naming the layer and port.
func TestIRMaxPoolIndices(t *testing.T) {
	x, bin := fixture(t, "classifier")
	s := strings.Replace(string(x), "\t</layers>", `		<layer id="999" name="indices" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>-1</dim><dim>8</dim><dim>8</dim><dim>8</dim></port></input></layer>
	</layers>`, 1)
	s = strings.Replace(s, "\t</edges>", "\t\t<edge from-layer=\"353\" from-port=\"2\" to-layer=\"999\" to-port=\"0\" />\n\t</edges>", 1)
	_, err := Options{}.Decode([]byte(s), bin, "classifier.xml")
	if err == nil || !strings.Contains(err.Error(), `layer 353 "pool1" (MaxPool): output port 2 is read, but clhost does not compute it`) {
		t.Fatalf("reading the indices: %v", err)
	}
}

// TestIRMissingWeights: the .bin beside the .xml is looked for, and --weights names
// another.
func TestIRMissingWeights(t *testing.T) {
	x, bin := fixture(t, "custom")
	dir := t.TempDir()
	path := filepath.Join(dir, "net.xml")
	if err := os.WriteFile(path, x, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Options{Custom: isScaleShift}.Load(path)
	if err == nil || !strings.Contains(err.Error(), "net.bin is missing") || !strings.Contains(err.Error(), "--weights") {
		t.Fatalf("without a .bin: %v", err)
	}
	other := filepath.Join(dir, "weights.data")
	if err := os.WriteFile(other, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Options{Custom: isScaleShift, Weights: other}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 2 || m.Layers[0].Type != "ScaleShift" {
		t.Fatalf("layers %+v", m.Layers)
	}
}

// TestIRCustomAttrs: a custom layer keeps its IR type, its Const inputs by name and its
// <data> attributes typed, and a custom layer named like a built-in overrides it.
func TestIRCustomAttrs(t *testing.T) {
	x, bin := fixture(t, "custom")
	m, err := Options{Custom: isScaleShift}.Decode(x, bin, "custom.xml")
	if err != nil {
		t.Fatal(err)
	}
	l := &m.Layers[0]
	if l.Type != "ScaleShift" || strings.Join(l.Inputs, " ") != "x block1/scale block1/shift" {
		t.Fatalf("layer %+v", l)
	}
	if w := l.Floats("weights", nil); len(w) != 2 || w[0] != 0.5 || w[1] != 1.5 {
		t.Errorf("weights = %v", w)
	}
	if n := l.Int("count", 0); n != 3 {
		t.Errorf("count = %d", n)
	}
	m, err = Options{Custom: func(typ string) bool { return typ == "ScaleShift" || typ == "ReLU" }}.Decode(x, bin, "custom.xml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers[1].Type != "ReLU" {
		t.Errorf("a custom ReLU became %s", m.Layers[1].Type)
	}
}

// TestIRVersion10 reads the fixture as IR version 10, whose form the serializer shares
// with 11 for these ops.
func TestIRVersion10(t *testing.T) {
	x, bin := fixture(t, "classifier")
	v10 := strings.Replace(string(x), `version="11"`, `version="10"`, 1)
	m, err := Options{Batch: 3}.Decode([]byte(v10), bin, "classifier.xml")
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Tensor("image"); in == nil || in.Shape[0] != 3 {
		t.Fatalf("input %+v: the dynamic batch takes Options.Batch", in)
	}
	if out := m.Tensor("probs"); out == nil || out.Shape[0] != 3 || out.Shape[1] != 10 {
		t.Fatalf("output %+v", out)
	}
}

// TestIROutputNames: an output is named by the first of its port's names (a comma in a
// name written "\,"), and without names by the layer producing it.
func TestIROutputNames(t *testing.T) {
	x, bin := fixture(t, "custom")
	for names, want := range map[string]string{`names="y"`: "y", `names="y\,1, alias"`: "y,1", ``: "relu"} {
		s := strings.Replace(string(x), `names="y"`, names, 1)
		m, err := Options{Custom: isScaleShift}.Decode([]byte(s), bin, "custom.xml")
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Outputs) != 1 || m.Outputs[0] != want || m.Inputs[0] != "x" {
			t.Errorf("with %s: inputs %q, outputs %q, want output %q", names, m.Inputs, m.Outputs, want)
		}
	}
}

func TestIRPortNames(t *testing.T) {
	got := portNames(`a\,b, c,d `)
	if strings.Join(got, "|") != "a,b|c|d" {
		t.Errorf("portNames = %q", got)
	}
}

func TestIRIsIR(t *testing.T) {
	x, _ := fixture(t, "custom")
	if !IsIR(x) || IsIR([]byte(`<?xml version="1.0"?><!-- c --><CustomLayer name="a"/>`)) || IsIR([]byte("garbage")) {
		t.Error("IsIR tells an IR and a config apart wrongly")
	}
}

// FuzzIR reads mutated IR text against the fixture's weights: errors are fine, panics
// are not.
func FuzzIR(f *testing.F) {
	for _, name := range []string{"custom", "classifier", "ssd_head", "segmenter"} {
		x, b := fixture(f, name)
		f.Add(x, b)
	}
	f.Fuzz(func(t *testing.T, x, bin []byte) {
		if len(x) > 1<<20 || len(bin) > 1<<20 {
			return
		}
		_, _ = Options{Custom: isScaleShift, Batch: 2}.Decode(x, bin, "fuzz.xml")
	})
}

// TestIRKeepUnknown: with KeepUnknown, a type nothing implements is read as its IR type,
// inputs, attributes and port dims (for inspect); an unknown op version still fails.
func TestIRKeepUnknown(t *testing.T) {
	x, bin := fixture(t, "custom")
	m, err := Options{KeepUnknown: true}.Decode(x, bin, "custom.xml")
	if err != nil {
		t.Fatal(err)
	}
	l := m.Layers[0]
	if l.Type != "ScaleShift" || len(l.Inputs) != 3 || l.Attr("count") == nil {
		t.Fatalf("layer %+v", l)
	}
	if s := m.Tensor(l.Outputs[0]).Shape; len(s) != 4 || s[1] != 3 {
		t.Errorf("output shape %v, want the port's [1,3,4,4]", s)
	}
	bad := strings.Replace(string(x), `type="ReLU" version="opset1"`, `type="ReLU" version="opset99"`, 1)
	if _, err := (Options{KeepUnknown: true}).Decode([]byte(bad), bin, "custom.xml"); err == nil || !strings.Contains(err.Error(), `unknown op version "opset99"`) {
		t.Errorf("unknown version: %v", err)
	}
}
