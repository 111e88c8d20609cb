package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// overrideCase is one built-in layer type that a user's configuration takes over: a node
// of that type with inputs and attributes the built-in would refuse, or rewrite at import,
// whose output must be what the user's kernel (testdata/override/gain.cl) computes.
type overrideCase struct {
	typ    string
	domain string
	extra  []pb // more initializers the node reads
	ins    []string
	attrs  []pb
	out    []int // the output's declared shape
}

// overrideCases span the families of built-ins: element-wise, layout and view ops,
// reductions, convolution, pooling, normalization, ops the importer folds or removes.
var overrideCases = []overrideCase{
	{typ: "Relu", out: []int{1, 2, 3, 8}}, // a shape the built-in rule contradicts
	{typ: "Add", out: []int{1, 2, 3, 4}},  // one input of two
	{typ: "Tile", attrs: []pb{onnxAttrI("tiles", 2), onnxAttrI("axis", 1)}, out: []int{1, 4, 3, 4}},                                                  // OpenVINO's attributes, no repeats
	{typ: "Reshape", attrs: []pb{onnxAttrIs("dims", 2, 12)}, out: []int{2, 12}},                                                                      // no shape input
	{typ: "Transpose", attrs: []pb{onnxAttrIs("perm", 0, 1)}, out: []int{1, 2, 4, 3}},                                                                // a perm of the wrong rank
	{typ: "Resize", attrs: []pb{onnxAttrF("factor", 2)}, out: []int{1, 2, 6, 8}},                                                                     // neither scales nor sizes
	{typ: "Slice", attrs: []pb{onnxAttrI("begin", 1)}, out: []int{1, 2, 3, 2}},                                                                       // no starts or ends
	{typ: "ReduceMean", attrs: []pb{onnxAttrIs("axes", 7)}, out: []int{1, 2, 3, 1}},                                                                  // an axis past the rank
	{typ: "Conv", attrs: []pb{onnxAttrIs("kernel_shape", 3, 3)}, out: []int{1, 2, 3, 4}},                                                             // no weights
	{typ: "MaxPool", attrs: []pb{onnxAttrI("window", 2)}, out: []int{1, 2, 2, 2}},                                                                    // no kernel_shape
	{typ: "Softmax", attrs: []pb{onnxAttrI("axis", 9)}, out: []int{1, 2, 3, 4}},                                                                      // an axis past the rank
	{typ: "Concat", out: []int{1, 2, 3, 4}},                                                                                                          // no axis
	{typ: "BatchNormalization", attrs: []pb{onnxAttrS("mode", "fancy")}, out: []int{1, 2, 3, 4}},                                                     // no statistics: not folded into anything
	{typ: "Shape", out: []int{1, 2, 3, 4}},                                                                                                           // folded at import when the input shape is known
	{typ: "Identity", out: []int{1, 2, 3, 4}},                                                                                                        // removed at import
	{typ: "Dropout", ins: []string{"x", "", "train"}, extra: []pb{onnxConst("train", nil, nil, []int64{1})}, out: []int{1, 2, 3, 4}},                 // training_mode true
	{typ: "Einsum", attrs: []pb{onnxAttrS("equation", "abcd->abdc")}, out: []int{1, 2, 3, 4}},                                                        // rewritten at import as a Transpose
	{typ: "Pad", ins: []string{"x", "pads"}, extra: []pb{onnxConst("pads", []int{8}, nil, []int64{0, 0, 0, 0, 0, 0, 0, 0})}, out: []int{1, 2, 3, 4}}, // pads left an input, unread by the kernel
}

// overrideConfig writes one CustomLayer per case type, each running gain.cl with GAIN
// from the node's "gain" attribute (no default: the attribute must reach the kernel).
func overrideConfig(t *testing.T, types []string) string {
	t.Helper()
	kernel := ctPath(t, "../override/gain.cl")
	var b strings.Builder
	b.WriteString("<CustomLayers>\n")
	for _, typ := range types {
		fmt.Fprintf(&b, `<CustomLayer name=%q type="SimpleGPU" version="1">
  <Kernel entry="gain"><Source filename=%q/><Define name="GAIN" type="float" param="gain"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
  <WorkSizes global="B*F*Y*X"/>
</CustomLayer>
`, typ, kernel)
	}
	b.WriteString("</CustomLayers>\n")
	path := filepath.Join(t.TempDir(), "override.xml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// overrideModel writes the one-node ONNX model of a case: x [1,2,3,4] → node → y.
func overrideModel(t *testing.T, c overrideCase, gain float32) string {
	t.Helper()
	ins := c.ins
	if ins == nil {
		ins = []string{"x"}
	}
	attrs := append([]pb{onnxAttrF("gain", gain)}, c.attrs...)
	g := pb{}.bytes(1, onnxNode(c.typ, c.domain, c.typ+"_0", ins, []string{"y"}, attrs...)).str(2, "override")
	for _, e := range c.extra {
		g = g.bytes(5, e)
	}
	g = g.bytes(11, onnxValue("x", 1, 2, 3, 4)).bytes(12, onnxValue("y", c.out...))
	path := filepath.Join(t.TempDir(), c.typ+".onnx")
	if err := os.WriteFile(path, onnxGraphModel(g, c.domain), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCustomLayerWinsOverEveryBuiltin: a loaded configuration that names a built-in type
// takes every node of that type, as the model writes it, through the ONNX importer and the
// engine: no built-in shape rule, fold or rewrite sees the node first.
func TestCustomLayerWinsOverEveryBuiltin(t *testing.T) {
	ctParallel(t)
	types := make([]string, len(overrideCases))
	for i, c := range overrideCases {
		types[i] = c.typ
	}
	e, log := ctEngine(t, Options{Configs: []string{overrideConfig(t, types)}})
	x := ctRand(3, 1, 2, 3, 4)
	for i, c := range overrideCases {
		t.Run(c.typ, func(t *testing.T) {
			gain := 1.5 + float32(i)/4
			m, err := LoadOptions{Layers: e.Layers}.Load(overrideModel(t, c, gain))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			n, err := e.Compile(m)
			if err != nil {
				t.Fatalf("compile: %v\nlog:\n%s", err, log)
			}
			defer n.Close()
			if got := strings.Join(n.CustomLayers(), ","); got != c.typ+"_0 ("+c.typ+")" {
				t.Errorf("custom layers %q", got)
			}
			out := ctInfer(t, n, map[string]*Tensor{"x": x})
			ctShape(t, "y", out["y"].Shape, c.out)
			want := make([]float32, len(out["y"].Data))
			for k := range want {
				want[k] = x.Data[k%len(x.Data)]*gain + 1
			}
			ctClose(t, "y", out["y"].Data, want, 1e-6)
		})
	}
}

// TestGlobalTileTakesOpenVINONodes: the global configuration's Tile (OpenVINO's kernel)
// runs a Tile node of OpenVINO's own domain and attributes, and an ONNX Tile alike.
func TestGlobalTileTakesOpenVINONodes(t *testing.T) {
	ctParallel(t)
	e, _ := ctEngine(t, Options{})
	x := ctRand(4, 1, 2, 3, 4)
	tiled := make([]float32, 0, 2*len(x.Data))
	tiled = append(append(tiled, x.Data...), x.Data...) // [1,2,3,4] tiled twice along F
	for _, c := range []overrideCase{
		{typ: "Tile", domain: "org.openvinotoolkit", attrs: []pb{onnxAttrI("tiles", 2), onnxAttrI("axis", 1)}, out: []int{1, 4, 3, 4}},
		{typ: "Tile", ins: []string{"x", "repeats"}, extra: []pb{onnxConst("repeats", []int{4}, nil, []int64{1, 2, 1, 1})}, out: []int{1, 4, 3, 4}},
	} {
		t.Run(c.domain, func(t *testing.T) {
			m, err := LoadOptions{Layers: e.Layers}.Load(overrideModel(t, c, 1))
			if err != nil {
				t.Fatal(err)
			}
			n, err := e.Compile(m)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			out := ctInfer(t, n, map[string]*Tensor{"x": x})
			ctShape(t, "y", out["y"].Shape, c.out)
			ctClose(t, "y", out["y"].Data, tiled, 0)
		})
	}
}

// TestCustomLayerUndeclaredShape: a custom layer whose output the model does not declare,
// and whose attributes the built-in's shape rule cannot take, is an error that names the
// node and says where to declare the shape.
func TestCustomLayerUndeclaredShape(t *testing.T) {
	e, _ := ctEngine(t, Options{Configs: []string{overrideConfig(t, []string{"Transpose"})}})
	c := overrideCase{typ: "Transpose", attrs: []pb{onnxAttrIs("perm", 0, 1)}}
	g := pb{}.bytes(1, onnxNode(c.typ, "", "t0", []string{"x"}, []string{"y"}, append([]pb{onnxAttrF("gain", 1)}, c.attrs...)...)).str(2, "g").
		bytes(11, onnxValue("x", 1, 2, 3, 4)).bytes(12, pb{}.str(1, "y"))
	path := filepath.Join(t.TempDir(), "undeclared.onnx")
	if err := os.WriteFile(path, onnxGraphModel(g, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadOptions{Layers: e.Layers}.Load(path)
	if err == nil {
		t.Fatal("load succeeded, want an error")
	}
	ctContains(t, "the error", err.Error(), "undeclared.onnx", `node "t0" (Transpose): output "y"`, "value_info")
}

// TestLayoutKeepsCustomShapes: LoadLayout (clhost inspect) with the global configuration
// takes an OpenVINO Tile's declared shape, without the built-in Tile's rule.
func TestLayoutKeepsCustomShapes(t *testing.T) {
	c := overrideCase{typ: "Tile", domain: "org.openvinotoolkit", attrs: []pb{onnxAttrI("tiles", 2), onnxAttrI("axis", 1)}, out: []int{1, 4, 3, 4}}
	layers, err := LoadConfigs(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []overrideCase{c, {typ: "Resize", attrs: []pb{onnxAttrF("factor", 2)}, out: []int{1, 2, 6, 8}}} {
		reg := layers
		if tc.typ == "Resize" {
			if reg, err = LoadConfigs(Options{Configs: []string{overrideConfig(t, []string{"Resize"})}}); err != nil {
				t.Fatal(err)
			}
		}
		l, err := LoadLayout(overrideModel(t, tc, 1), reg)
		if err != nil || l.ShapeError != nil {
			t.Fatalf("%s: LoadLayout: %v, shape error %v", tc.typ, err, l.ShapeError)
		}
		ctShape(t, tc.typ, l.Model.Tensor("y").Shape, tc.out)
	}
}
