package customlayer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// kernelFS holds the sources the inline test configs refer to.
var kernelFS = fstest.MapFS{
	"k.cl":     {Data: []byte("__kernel void k(__global float* a, __global float* b) {}\n")},
	"sub/k.cl": {Data: []byte("// sub\n")},
}

// layerXML wraps the children of one valid-by-default CustomLayer named "L".
func layerXML(kernel, buffers, rest string) string {
	if kernel == "" {
		kernel = `<Kernel entry="k"><Source filename="k.cl"/></Kernel>`
	}
	if buffers == "" {
		buffers = `<Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>`
	}
	return "<CustomLayer name=\"L\" type=\"SimpleGPU\" version=\"1\">\n" + kernel + "\n" + buffers + "\n" + rest + "\n</CustomLayer>\n"
}

func parseString(t *testing.T, s string) ([]*Layer, Errors) {
	t.Helper()
	layers, err := Parse("t.xml", []byte(s), Options{FS: kernelFS})
	if err == nil {
		return layers, nil
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error is %T, not Errors: %v", err, err)
	}
	if len(es) == 0 {
		t.Fatal("empty Errors returned as an error")
	}
	if layers != nil {
		t.Error("layers returned together with errors")
	}
	return layers, es
}

func TestValidationErrors(t *testing.T) {
	tensor := func(attrs string) string {
		return `<Buffers><Tensor ` + attrs + `/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>`
	}
	cases := []struct {
		name string
		xml  string
		want string // the whole message of the first error
	}{
		{"malformed XML", "<CustomLayer name=\"L\">\n<Kernel>\n</CustomLayer>", `t.xml:3: malformed XML: element <Kernel> closed by </CustomLayer>`},
		{"unclosed", "<CustomLayer name=\"L\" type=\"SimpleGPU\" version=\"1\">\n<Kernel entry=\"k\">", `t.xml:2: malformed XML: unexpected EOF`},
		{"missing name", `<CustomLayer type="SimpleGPU" version="1"><Kernel entry="k"><Source filename="k.cl"/></Kernel>` + tensor(`arg-index="0" type="input" port-index="0"`) + `</CustomLayer>`, `t.xml:1: CustomLayer #1: missing attribute "name"`},
		{"missing entry", layerXML(`<Kernel><Source filename="k.cl"/></Kernel>`, "", ""), `t.xml:2: layer "L": Kernel: missing attribute "entry"`},
		{"missing filename", layerXML(`<Kernel entry="k"><Source/></Kernel>`, "", ""), `t.xml:2: layer "L": Source #1: missing attribute "filename"`},
		{"missing arg-index", layerXML("", tensor(`type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: missing attribute "arg-index"`},
		{"missing port-index", layerXML("", tensor(`arg-index="0" type="input"`), ""), `t.xml:3: layer "L": Tensor #1: missing attribute "port-index"`},
		{"missing tensor type", layerXML("", tensor(`arg-index="0" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: missing attribute "type"`},
		{"missing data name", layerXML("", `<Buffers><Tensor arg-index="0" type="output" port-index="0"/><Data arg-index="1"/></Buffers>`, ""), `t.xml:3: layer "L": Data #1: missing attribute "name"`},
		{"missing options", layerXML("", "", `<CompilerOptions/>`), `t.xml:4: layer "L": CompilerOptions #1: missing attribute "options"`},
		{"missing define name", layerXML(`<Kernel entry="k"><Source filename="k.cl"/><Define param="p"/></Kernel>`, "", ""), `t.xml:2: layer "L": Define #1: missing attribute "name"`},
		{"empty entry", layerXML(`<Kernel entry=" "><Source filename="k.cl"/></Kernel>`, "", ""), `t.xml:2: layer "L": Kernel: attribute "entry" is empty`},
		{"type not SimpleGPU", strings.Replace(layerXML("", "", ""), "SimpleGPU", "SimpleCPU", 1), `t.xml:1: layer "L": type "SimpleCPU" is not supported (must be "SimpleGPU")`},
		{"version not 1", strings.Replace(layerXML("", "", ""), `version="1"`, `version="2"`, 1), `t.xml:1: layer "L": version "2" is not supported (must be "1")`},
		{"unknown format", layerXML("", tensor(`arg-index="0" type="input" port-index="0" format="NCHW"`), ""), `t.xml:3: layer "L": Tensor #1: unknown format "NCHW" (must be BFYX, BYXF, YXFB, FYXB or ANY)`},
		{"unknown tensor type", layerXML("", tensor(`arg-index="0" type="weights" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: unknown tensor type "weights" (must be input or output)`},
		{"non-integer arg-index", layerXML("", tensor(`arg-index="one" type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: arg-index "one" is not an integer`},
		{"fractional arg-index", layerXML("", tensor(`arg-index="0.5" type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: arg-index "0.5" is not an integer`},
		{"negative arg-index", layerXML("", tensor(`arg-index="-1" type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: arg-index -1 is negative`},
		{"negative port-index", layerXML("", tensor(`arg-index="0" type="input" port-index="-2"`), ""), `t.xml:3: layer "L": Tensor #1: port-index -2 is negative`},
		{"huge arg-index", layerXML("", tensor(`arg-index="99999999999999999999" type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: arg-index "99999999999999999999" is too large`},
		{"non-integer data arg-index", layerXML("", `<Buffers><Tensor arg-index="0" type="output" port-index="0"/><Data name="w" arg-index="x"/></Buffers>`, ""), `t.xml:3: layer "L": Data "w": arg-index "x" is not an integer`},
		{"same arg-index", "<CustomLayer name=\"ReLU\" type=\"SimpleGPU\" version=\"1\">\n<Kernel entry=\"k\"><Source filename=\"k.cl\"/></Kernel>\n<Buffers>\n<Tensor arg-index=\"0\" type=\"input\" port-index=\"0\"/>\n<Tensor arg-index=\"0\" type=\"output\" port-index=\"0\"/>\n</Buffers></CustomLayer>", `t.xml:5: layer "ReLU": Tensor #2: arg-index 0 is already used by Tensor #1`},
		{"data on tensor's arg-index", layerXML("", `<Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/><Data name="w" arg-index="1"/></Buffers>`, ""), `t.xml:3: layer "L": Data "w": arg-index 1 is already used by Tensor #2`},
		{"port with two formats", layerXML("", `<Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="input" port-index="0" format="byxf"/><Tensor arg-index="2" type="output" port-index="0"/></Buffers>`, ""), `t.xml:3: layer "L": Tensor #2: input port 0 is also bound by Tensor #1 with format BFYX; a port has one format`},
		{"gap", layerXML("", `<Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="2" type="output" port-index="0"/></Buffers>`, ""), `t.xml:3: layer "L": Buffers: gap in the arg-index sequence: no buffer has arg-index 1 (the 2 buffers must use 0 to 1)`},
		{"no Source", layerXML(`<Kernel entry="k"></Kernel>`, "", ""), `t.xml:2: layer "L": Kernel: no <Source> element (at least one is required)`},
		{"unreadable source", layerXML(`<Kernel entry="k"><Source filename="missing.cl"/></Kernel>`, "", ""), `t.xml:2: layer "L": Source "missing.cl": cannot read missing.cl: file does not exist`},
		{"source outside FS", layerXML(`<Kernel entry="k"><Source filename="../k.cl"/></Kernel>`, "", ""), `t.xml:2: layer "L": Source "../k.cl": cannot read ../k.cl: the path leaves the file system it is read from`},
		{"unknown define type", layerXML(`<Kernel entry="k"><Source filename="k.cl"/><Define name="D" type="double"/></Kernel>`, "", ""), `t.xml:2: layer "L": Define "D": unknown type "double" (must be int, float, int[] or float[])`},
		{"bad int default", layerXML(`<Kernel entry="k"><Source filename="k.cl"/><Define name="D" type="int" default="1.5"/></Kernel>`, "", ""), `t.xml:2: layer "L": Define "D": default "1.5": "1.5" is not an integer`},
		{"bad float[] default", layerXML(`<Kernel entry="k"><Source filename="k.cl"/><Define name="D" type="float[]" default="0.1,x"/></Kernel>`, "", ""), `t.xml:2: layer "L": Define "D": default "0.1,x": "x" is not a number`},
		{"bad define name", layerXML(`<Kernel entry="k"><Source filename="k.cl"/><Define name="1D"/></Kernel>`, "", ""), `t.xml:2: layer "L": Define "1D": name "1D" does not start with a valid macro name`},
		{"bad entry", layerXML(`<Kernel entry="my kernel"><Source filename="k.cl"/></Kernel>`, "", ""), `t.xml:2: layer "L": Kernel: entry "my kernel" is not a valid OpenCL C function name`},
		{"formula syntax", layerXML("", "", `<WorkSizes global="X,(Y"/>`), `t.xml:4: layer "L": WorkSizes: global: formula "(Y": syntax error: Unbalanced parenthesis`},
		{"formula float literal", layerXML("", "", `<WorkSizes global="X*1.5"/>`), `t.xml:4: layer "L": WorkSizes: global: formula "X*1.5": unexpected '.': only integer literals are allowed`},
		{"formula name", layerXML("", "", `<WorkSizes global="X,Y" local="W,1"/>`), `t.xml:4: layer "L": WorkSizes: local: formula "W": unknown name "W" (a formula may use B, F, Y and X)`},
		{"bad dim", layerXML("", "", `<WorkSizes dim="input X"/>`), `t.xml:4: layer "L": WorkSizes: dim "input X" is not output, input, "input N" or "input,N"`},
		{"bad dim keyword", layerXML("", "", `<WorkSizes dim="weights"/>`), `t.xml:4: layer "L": WorkSizes: dim "weights" is not output, input, "input N" or "input,N"`},
		{"4 global sizes", layerXML("", "", `<WorkSizes global="X,Y,F,B"/>`), `t.xml:4: layer "L": WorkSizes: global: formula "X,Y,F,B": 4 entries, at most 3 are allowed`},
		{"4 local sizes", layerXML("", "", `<WorkSizes global="X,Y,F" local="1,1,1,1"/>`), `t.xml:4: layer "L": WorkSizes: local: formula "1,1,1,1": 4 entries, at most 3 are allowed`},
		{"local count", layerXML("", "", `<WorkSizes global="X,Y,F" local="1,1"/>`), `t.xml:4: layer "L": WorkSizes: local has 2 entries ("1,1") but global has 3 ("X,Y,F"): the counts must match`},
		{"local count vs default", layerXML("", "", `<WorkSizes local="1,1"/>`), `t.xml:4: layer "L": WorkSizes: local has 2 entries ("1,1") but global has 1 ("B*F*Y*X"): the counts must match`},
		{"missing Kernel", "<CustomLayer name=\"L\" type=\"SimpleGPU\" version=\"1\">\n<Buffers><Tensor arg-index=\"0\" type=\"output\" port-index=\"0\"/></Buffers></CustomLayer>", `t.xml:1: layer "L": missing <Kernel> element`},
		{"missing Buffers", "<CustomLayer name=\"L\" type=\"SimpleGPU\" version=\"1\">\n<Kernel entry=\"k\"><Source filename=\"k.cl\"/></Kernel></CustomLayer>", `t.xml:1: layer "L": missing <Buffers> element`},
		{"two Kernels", layerXML("", "", `<Kernel entry="k"><Source filename="k.cl"/></Kernel>`), `t.xml:4: layer "L": Kernel: given 2 times (exactly once)`},
		{"two WorkSizes", layerXML("", "", "<WorkSizes/>\n<WorkSizes/>"), `t.xml:5: layer "L": WorkSizes: given 2 times (at most once)`},
		{"no Tensor", layerXML("", `<Buffers><Data name="w" arg-index="0"/></Buffers>`, ""), `t.xml:3: layer "L": Buffers: no <Tensor> element (at least one is required)`},
		{"no output", layerXML("", `<Buffers><Tensor arg-index="0" type="input" port-index="0"/></Buffers>`, ""), `t.xml:3: layer "L": Buffers: no Tensor of type output: the kernel would write nothing`},
		{"unknown element", layerXML("", "", `<Worksizes global="X"/>`), `t.xml:4: layer "L": unexpected element <Worksizes> (expected Kernel, Buffers, CompilerOptions or WorkSizes)`},
		{"unknown attribute", layerXML("", tensor(`arg-index="0" type="input" portindex="0" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: unknown attribute "portindex" (allowed: arg-index, type, port-index, format)`},
		{"repeated attribute", layerXML("", tensor(`arg-index="0" arg-index="0" type="input" port-index="0"`), ""), `t.xml:3: layer "L": Tensor #1: attribute "arg-index" given twice`},
		{"duplicate layer", layerXML("", "", "") + layerXML("", "", ""), `t.xml:6: layer "L": defined twice in this file (first at line 1)`},
		{"empty file", "", `t.xml: the file is empty (expected CustomLayer elements)`},
		{"only a comment", "<!-- nothing -->", `t.xml: no XML element in the file (expected CustomLayer elements)`},
		{"wrong root", "<Layers>\n<Other/>\n</Layers>", `t.xml:2: unexpected element <Other> under <Layers> (expected CustomLayer)`},
		{"empty root", "<Layers>\n</Layers>", `t.xml:1: no CustomLayer element under <Layers>`},
		{"two roots", "<A/>\n<CustomLayer/>", `t.xml:1: unexpected top-level element <A> (expected CustomLayer)`},
		{"text", "just text", `t.xml: no XML element in the file (expected CustomLayer elements)`},
		{"binary", "\x00\x01\x02<\xff\xfe>", `t.xml:1: malformed XML: illegal character code U+0000`},
		{"deep nesting", strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100), `t.xml:1: elements nested more than 64 levels deep`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, es := parseString(t, c.xml)
			if es == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if es[0].Error() != c.want {
				t.Errorf("first error:\n got %q\nwant %q\nall:\n%v", es[0].Error(), c.want, es)
			}
		})
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	src := `<CustomLayers>
<CustomLayer name="A" type="SimpleCPU" version="2">
  <Kernel entry="k">
    <Source filename="nope.cl"/>
    <Define name="D" type="vec4"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="NHWC"/>
    <Tensor arg-index="0" type="output" port-index="0"/>
    <Data name="w" arg-index="3"/>
  </Buffers>
  <WorkSizes global="X,Y,Z" local="1" dim="weights"/>
</CustomLayer>
<CustomLayer name="B" type="SimpleGPU" version="1">
  <Kernel entry="k"/>
  <Buffers><Tensor arg-index="0" type="output" port-index="0"/></Buffers>
</CustomLayer>
</CustomLayers>`
	_, es := parseString(t, src)
	want := []string{
		`t.xml:2: layer "A": type "SimpleCPU" is not supported (must be "SimpleGPU")`,
		`t.xml:2: layer "A": version "2" is not supported (must be "1")`,
		`t.xml:4: layer "A": Source "nope.cl": cannot read nope.cl: file does not exist`,
		`t.xml:5: layer "A": Define "D": unknown type "vec4" (must be int, float, int[] or float[])`,
		`t.xml:8: layer "A": Tensor #1: unknown format "NHWC" (must be BFYX, BYXF, YXFB, FYXB or ANY)`,
		`t.xml:9: layer "A": Tensor #2: arg-index 0 is already used by Tensor #1`,
		`t.xml:7: layer "A": Buffers: gap in the arg-index sequence: no buffer has arg-index 1 (the 3 buffers must use 0 to 2)`,
		`t.xml:7: layer "A": Buffers: gap in the arg-index sequence: no buffer has arg-index 2 (the 3 buffers must use 0 to 2)`,
		`t.xml:12: layer "A": WorkSizes: global: formula "Z": unknown name "Z" (a formula may use B, F, Y and X)`,
		`t.xml:12: layer "A": WorkSizes: dim "weights" is not output, input, "input N" or "input,N"`,
		`t.xml:15: layer "B": Kernel: no <Source> element (at least one is required)`,
	}
	got := strings.Split(es.Error(), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOpenVINOReLUExample(t *testing.T) {
	path := filepath.Join("testdata", "relu", "custom_layer_example.xml")
	layers, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	l := layers[0]
	kernel, _ := os.ReadFile(filepath.Join("testdata", "relu", "custom_layer_kernel.cl"))
	checks := []struct {
		what      string
		got, want any
	}{
		{"name", l.Name, "ReLU"},
		{"type", l.Type, "SimpleGPU"},
		{"version", l.Version, "1"},
		{"entry", l.Entry, "example_relu_kernel"},
		{"sources", len(l.Sources), 1},
		{"source path", l.Sources[0].Path, filepath.Join("testdata", "relu", "custom_layer_kernel.cl")},
		{"source filename", l.Sources[0].Filename, "custom_layer_kernel.cl"},
		{"source text", l.Sources[0].Text, string(kernel)},
		{"defines", len(l.Defines), 1},
		{"define", l.Defines[0], Define{Name: "neg_slope", Param: "negative_slope", Type: Float, Default: "0.0", HasDefault: true, Line: 4}},
		{"tensors", l.Tensors, []Tensor{{ArgIndex: 0, Kind: Input, Port: 0, Format: BFYX, Line: 7}, {ArgIndex: 1, Kind: Output, Port: 0, Format: BFYX, Line: 8}}},
		{"buffers", l.NumBuffers(), 2},
		{"options", l.Options(), "-cl-mad-enable"},
		{"global", len(l.WorkSizes.Global), 3},
		{"global text", l.WorkSizes.Global[2].String(), "B*F"},
		{"local", len(l.WorkSizes.Local), 0},
		{"dim", l.WorkSizes.Dim, Dim{}},
		{"origin", l.Origin, path},
		{"where", l.Where(), path + ":1"},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

func equal(a, b any) bool {
	return strings.TrimSpace(sprint(a)) == strings.TrimSpace(sprint(b))
}

func sprint(v any) string { return fmt.Sprintf("%#v", v) }

func TestOpenVINOGlobalStyle(t *testing.T) {
	layers, err := Load(filepath.Join("testdata", "global", "cldnn_global_custom_kernels.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 3 {
		t.Fatalf("%d layers, want 3", len(layers))
	}
	pb := layers[0]
	wantDefines := []Define{
		{Name: "VARIANCE", Param: "variance", Type: FloatArray, Default: "0.1", HasDefault: true, Line: 8},
		{Name: "STEPS", Param: "steps", Type: IntArray, Default: "8,16,32", HasDefault: true, Line: 9},
		{Name: "USE_FAST_MATH", Default: "1", HasDefault: true, Line: 10},
		{Name: "TILE 16", Line: 11},
		{Name: "CLIP", Param: "clip", Type: Int, Default: "0", HasDefault: true, Line: 12},
	}
	if !equal(pb.Defines, wantDefines) {
		t.Errorf("defines:\n got %#v\nwant %#v", pb.Defines, wantDefines)
	}
	if pb.Tensors[0].Format != ANY || pb.Tensors[1].Format != ANY {
		t.Errorf("formats %v %v, want ANY", pb.Tensors[0].Format, pb.Tensors[1].Format)
	}
	if pb.WorkSizes.Dim != (Dim{Input: true}) {
		t.Errorf("dim = %v, want input 0", pb.WorkSizes.Dim)
	}
	if g, l := pb.WorkSizes.Global, pb.WorkSizes.Local; len(g) != 2 || g[1].String() != "((X + 31)/32)*32" || len(l) != 2 || l[1].String() != "32" {
		t.Errorf("work sizes %v / %v", g, l)
	}
	if pb.Options() != "-cl-mad-enable -cl-fast-relaxed-math" {
		t.Errorf("options %q", pb.Options())
	}
	sd := layers[2]
	args := sd.Args()
	if len(args) != 3 || args[0].Tensor == nil || args[1].Data == nil || args[1].Data.Name != "weights" || args[2].Tensor == nil || args[2].Tensor.Format != BYXF {
		t.Errorf("args of %s: %+v", sd.Name, args)
	}
	if sd.Tensors[0].Format != BFYX {
		t.Errorf("lower-case bfyx read as %v", sd.Tensors[0].Format)
	}
	if sd.WorkSizes.Global[0].String() != DefaultGlobal {
		t.Errorf("default global %v", sd.WorkSizes.Global)
	}
	if f, ok := sd.FormatOf(Output, 0); !ok || f != BYXF {
		t.Errorf("FormatOf(output 0) = %v %v", f, ok)
	}
	if _, ok := sd.FormatOf(Input, 1); ok {
		t.Error("FormatOf(input 1) found a tensor")
	}
}

func TestLoadFromFS(t *testing.T) {
	xml, err := os.ReadFile(filepath.Join("testdata", "relu", "custom_layer_example.xml"))
	if err != nil {
		t.Fatal(err)
	}
	kernel := []byte("__kernel void example_relu_kernel() {}\n")
	fsys := fstest.MapFS{
		"configs/relu.xml":                   {Data: xml},
		"configs/custom_layer_kernel.cl":     {Data: kernel},
		"kernels/custom_layer_kernel.cl":     {Data: []byte("// other\n")},
		"configs/abs.xml":                    {Data: bytes.Replace(xml, []byte(`filename="custom_layer_kernel.cl"`), []byte(`filename="/kernels/custom_layer_kernel.cl"`), 1)},
		"configs/missing.xml":                {Data: bytes.Replace(xml, []byte(`filename="custom_layer_kernel.cl"`), []byte(`filename="nope.cl"`), 1)},
		"configs/sub/../custom_layer_kernel": {Data: nil},
	}
	layers, err := LoadFS(fsys, "configs/relu.xml")
	if err != nil {
		t.Fatal(err)
	}
	if s := layers[0].Sources[0]; s.Path != "configs/custom_layer_kernel.cl" || s.Text != string(kernel) {
		t.Errorf("source %+v", s)
	}
	layers, err = LoadFS(fsys, "configs/abs.xml")
	if err != nil {
		t.Fatal(err)
	}
	if s := layers[0].Sources[0]; s.Path != "kernels/custom_layer_kernel.cl" || s.Text != "// other\n" {
		t.Errorf("absolute source %+v", s)
	}
	_, err = LoadFS(fsys, "configs/missing.xml")
	if err == nil || err.Error() != `configs/missing.xml:3: layer "ReLU": Source "nope.cl": cannot read configs/nope.cl: file does not exist` {
		t.Errorf("missing source: %v", err)
	}
	_, err = LoadFS(fsys, "configs/none.xml")
	if err == nil || err.Error() != `configs/none.xml: cannot read: file does not exist` {
		t.Errorf("missing config: %v", err)
	}

	// Bytes with a virtual base folder.
	layers, err = Parse("embedded:relu.xml", xml, Options{FS: fsys, Dir: "kernels"})
	if err != nil {
		t.Fatal(err)
	}
	if s := layers[0].Sources[0]; s.Path != "kernels/custom_layer_kernel.cl" {
		t.Errorf("virtual base: %+v", s)
	}
	// Bytes with sources on disk.
	layers, err = Parse("relu.xml", xml, Options{Dir: filepath.Join("testdata", "relu")})
	if err != nil {
		t.Fatal(err)
	}
	if s := layers[0].Sources[0]; s.Path != filepath.Join("testdata", "relu", "custom_layer_kernel.cl") {
		t.Errorf("OS base: %+v", s)
	}
}

func TestAbsoluteSourcePath(t *testing.T) {
	dir := t.TempDir()
	k := filepath.Join(dir, "abs.cl")
	if err := os.WriteFile(k, []byte("// abs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := layerXML(`<Kernel entry="k"><Source filename="`+k+`"/><Source filename="k2.cl"/></Kernel>`, "", "")
	if err := os.WriteFile(filepath.Join(dir, "k2.cl"), []byte("// k2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "c.xml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(x, `filename="k2.cl"`, `filename="`+filepath.Join(dir, "k2.cl")+`"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	layers, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := layers[0].Sources; len(s) != 2 || s[0].Path != k || s[0].Text != "// abs\n" || s[1].Text != "// k2\n" {
		t.Errorf("sources %+v", s)
	}
	if _, err := Load(filepath.Join(dir, "none.xml")); err == nil || !strings.Contains(err.Error(), "none.xml: cannot read: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRegistryOverride(t *testing.T) {
	a := layerXML("", "", "")
	a = strings.Replace(a, `name="L"`, `name="ReLU"`, 1) + strings.Replace(layerXML("", "", ""), `name="L"`, `name="Tile"`, 1)
	b := strings.Replace(layerXML(`<Kernel entry="k2"><Source filename="k.cl"/></Kernel>`, "", ""), `name="L"`, `name="ReLU"`, 1)
	c := strings.Replace(layerXML(`<Kernel entry="k3"><Source filename="k.cl"/></Kernel>`, "", ""), `name="L"`, `name="ReLU"`, 1)
	var log []string
	r := NewRegistry(func(s string) { log = append(log, s) })
	for _, f := range []struct{ name, xml string }{{"global.xml", a}, {"b.xml", b}, {"c.xml", c}} {
		if err := r.Parse(f.name, []byte(f.xml), Options{FS: kernelFS}); err != nil {
			t.Fatal(err)
		}
	}
	l, ok := r.Lookup("ReLU")
	if !ok || l.Entry != "k3" || l.Origin != "c.xml" {
		t.Errorf("ReLU = %+v", l)
	}
	if _, ok := r.Lookup("relu"); ok {
		t.Error("lookup is case-insensitive")
	}
	want := []string{
		`custom layer "ReLU" from b.xml:1 replaces the one from global.xml:1`,
		`custom layer "ReLU" from c.xml:1 replaces the one from b.xml:1`,
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	all := r.Layers()
	if r.Len() != 2 || len(all) != 2 || all[0].Name != "ReLU" || all[0].Origin != "c.xml" || all[1].Name != "Tile" || all[1].Origin != "global.xml" {
		t.Errorf("layers %v", all)
	}
	// A file with an error adds nothing.
	if err := r.Parse("bad.xml", []byte(strings.Replace(c, "k3", "k 3", 1)), Options{FS: kernelFS}); err == nil {
		t.Error("bad file accepted")
	}
	if l, _ := r.Lookup("ReLU"); l.Entry != "k3" {
		t.Error("a failing file replaced a layer")
	}
}

func TestLoadRegistryCollectsAllFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join("testdata", "relu", "custom_layer_example.xml")
	bad1 := filepath.Join(dir, "bad1.xml")
	bad2 := filepath.Join(dir, "bad2.xml")
	os.WriteFile(bad1, []byte("<CustomLayer"), 0o644)
	os.WriteFile(bad2, []byte(layerXML(`<Kernel entry="k"/>`, "", "")), 0o644)
	r, err := LoadRegistry(nil, good, bad1, bad2)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(es[0].Error(), bad1+":1: malformed XML") || !strings.HasPrefix(es[1].Error(), bad2+":2: layer \"L\": Kernel: no <Source>") {
		t.Errorf("errors:\n%v", es)
	}
	if _, ok := r.Lookup("ReLU"); !ok {
		t.Error("good file not loaded")
	}
}

func TestParseDim(t *testing.T) {
	for s, want := range map[string]Dim{
		"output": {}, "OUTPUT": {}, " output ": {}, "input": {Input: true}, "input 0": {Input: true},
		"input 2": {Input: true, Index: 2}, "input,1": {Input: true, Index: 1}, "input, 3": {Input: true, Index: 3}, "Input 1": {Input: true, Index: 1},
	} {
		got, err := ParseDim(s)
		if err != nil || got != want {
			t.Errorf("ParseDim(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "in", "input1", "input -1", "input x", "output 1", "input 1 2", "input 99999999999999999999"} {
		if _, err := ParseDim(s); err == nil {
			t.Errorf("ParseDim(%q) accepted", s)
		}
	}
}

func TestBigFile(t *testing.T) {
	// 10 MB of comments around a valid layer loads; 10 MB of junk fails cleanly.
	pad := "<!--" + strings.Repeat("x", 10<<20) + "-->\n"
	if _, es := parseString(t, pad+layerXML("", "", "")); es != nil {
		t.Errorf("padded file: %v", es)
	}
	if _, es := parseString(t, strings.Repeat("<CustomLayer>", 1<<20)); es == nil {
		t.Error("junk accepted")
	}
	many := strings.Repeat(`<Define name="D"/>`, 20000)
	_, es := parseString(t, layerXML(`<Kernel entry="k"><Source filename="k.cl"/>`+many+`</Kernel>`, "", ""))
	if es != nil {
		t.Errorf("many defines: %v", es[0])
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{
		filepath.Join("testdata", "relu", "custom_layer_example.xml"),
		filepath.Join("testdata", "global", "cldnn_global_custom_kernels.xml"),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(layerXML("", "", `<WorkSizes global="X,Y" local="1,1" dim="input 1"/>`)))
	f.Add([]byte("<CustomLayer"))
	f.Add([]byte{0, 1, 2})
	fsys := fstest.MapFS{
		"custom_layer_kernel.cl": {Data: []byte("k")},
		"prior_box_style.cl":     {Data: []byte("k")},
		"grn.cl":                 {Data: []byte("k")},
		"k.cl":                   {Data: []byte("k")},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		layers, err := Parse("f.xml", data, Options{FS: fsys, Dir: "."})
		if err != nil {
			es, ok := err.(Errors)
			if !ok || len(es) == 0 || layers != nil {
				t.Fatalf("bad error result %T %v", err, err)
			}
			return
		}
		for _, l := range layers {
			if l.Name == "" || l.Entry == "" || len(l.Sources) == 0 || len(l.Tensors) == 0 || len(l.WorkSizes.Global) == 0 {
				t.Fatalf("incomplete layer accepted: %+v", l)
			}
			for i, a := range l.Args() {
				if a.Index != i {
					t.Fatalf("args %+v not 0..n-1", l.Args())
				}
			}
			if n := len(l.WorkSizes.Local); n != 0 && n != len(l.WorkSizes.Global) {
				t.Fatalf("local/global counts %d/%d", n, len(l.WorkSizes.Global))
			}
		}
	})
}

// TestNear: a type that differs from a defined one only in case, or by one edit, finds
// it; others find nothing.
func TestNear(t *testing.T) {
	r := NewRegistry(nil)
	r.Add(&Layer{Name: "HardSwishx", Origin: "hs.xml", Line: 2}, &Layer{Name: "GRN"}, &Layer{Name: "Swish"})
	for _, c := range []struct{ typ, want string }{
		{"HardSwishX", "HardSwishx"}, // case
		{"hardswishx", "HardSwishx"},
		{"HardSwish", "HardSwishx"}, // one dropped
		{"HardSwishxx", "HardSwishx"},
		{"GRM", "GRN"},     // one changed
		{"Swihs", "Swish"}, // neighbours swapped
		{"GRN", ""},        // the same name is no suggestion
		{"Conv", ""},
		{"Swhsi", ""}, // two edits
	} {
		l, ok := r.Near(c.typ)
		got := ""
		if ok {
			got = l.Name
		}
		if got != c.want {
			t.Errorf("Near(%q) = %q, want %q", c.typ, got, c.want)
		}
	}
}
