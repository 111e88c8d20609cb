package jit

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/customlayer/formula"
)

func loadReLU(t *testing.T) *customlayer.Layer {
	t.Helper()
	layers, err := customlayer.Load(filepath.Join("testdata", "custom_layer_example.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return layers[0]
}

// The built-in defines of a 1×96×55×55 input as OpenVINO kernels expect them
// (docs/custom-layers.md, "Built-in defines"), verbatim.
const specBlock = `#define NUM_INPUTS 1
#define GLOBAL_WORKSIZE_SIZE 3
#define GLOBAL_WORKSIZE (size_t []){ 55,55,96, }
#define LOCAL_WORKSIZE_SIZE 0
#define LOCAL_WORKSIZE (size_t []){  }
#define INPUT0_DIMS_SIZE 4
#define INPUT0_DIMS (int []){ 1,96,55,55, }
#define INPUT0_TYPE float
#define INPUT0_FORMAT_BFYX
#define INPUT0_LOWER_PADDING_SIZE 4
#define INPUT0_LOWER_PADDING (int []){ 0,0,0,0, }
#define INPUT0_UPPER_PADDING_SIZE 4
#define INPUT0_UPPER_PADDING (int []){ 0,0,0,0, }
#define INPUT0_PITCHES_SIZE 4
#define INPUT0_PITCHES (int []){ 290400,3025,55,1, }
#define INPUT0_OFFSET 0
`

func TestOpenVINOExample(t *testing.T) {
	l := loadReLU(t)
	shape := []int{1, 96, 55, 55}
	p, err := Generate(l, Instance{
		Name:    "relu1",
		Inputs:  []Tensor{{Shape: shape}},
		Outputs: []Tensor{{Shape: shape}},
	})
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := os.ReadFile(filepath.Join("testdata", "custom_layer_kernel.cl"))
	if err != nil {
		t.Fatal(err)
	}
	want := "// Custom Layer Built-ins\n" + specBlock +
		`#define OUTPUT0_DIMS_SIZE 4
#define OUTPUT0_DIMS (int []){ 1,96,55,55, }
#define OUTPUT0_TYPE float
#define OUTPUT0_FORMAT_BFYX
#define OUTPUT0_LOWER_PADDING_SIZE 4
#define OUTPUT0_LOWER_PADDING (int []){ 0,0,0,0, }
#define OUTPUT0_UPPER_PADDING_SIZE 4
#define OUTPUT0_UPPER_PADDING (int []){ 0,0,0,0, }
#define OUTPUT0_PITCHES_SIZE 4
#define OUTPUT0_PITCHES (int []){ 290400,3025,55,1, }
#define OUTPUT0_OFFSET 0
// Custom Layer User Defines
#define neg_slope 0.0f
#line 1 "testdata/custom_layer_kernel.cl"
` + string(kernel)
	if p.Source != want {
		t.Errorf("program text differs:\n%s", diff(p.Source, want))
	}
	if !strings.Contains(p.Source, "\n"+specBlock) {
		t.Error("the built-in define block not found verbatim")
	}
	if p.Options != "-cl-mad-enable" || p.Entry != "example_relu_kernel" {
		t.Errorf("options %q entry %q", p.Options, p.Entry)
	}
	if !equalInts(p.Global, []int{55, 55, 96}) || len(p.Local) != 0 {
		t.Errorf("work sizes %v %v", p.Global, p.Local)
	}

	// The parameter, when the layer has it, wins over the default; a float32 attribute
	// widened to float64 still prints as the user wrote it.
	p, err = Generate(l, Instance{Name: "relu1", Inputs: []Tensor{{Shape: shape}}, Outputs: []Tensor{{Shape: shape}},
		Params: ParamMap{"negative_slope": Float(float64(float32(0.1)))}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Source, "\n#define neg_slope 0.1f\n") {
		t.Errorf("neg_slope not 0.1f:\n%s", p.Source)
	}
}

func diff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got  " + a + "\n want " + b
		}
	}
	return "(same lines)"
}

func itoa(i int) string { return strconv.Itoa(i) }

type formulaExpr = formula.Expr

func parseList(s string) ([]formula.Expr, error) { return formula.ParseList(s) }

func parseF32(s string) (float32, error) {
	f, err := strconv.ParseFloat(s, 32)
	return float32(f), err
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPitchTables(t *testing.T) {
	shape := []int{2, 3, 4, 5}
	lower := []int{0, 1, 2, 3}
	upper := []int{1, 0, 1, 2} // padded: B=3 F=4 Y=7 X=10
	cases := []struct {
		f             customlayer.Format
		plain, padded [4]int
		offset        int
	}{
		{customlayer.BFYX, [4]int{60, 20, 5, 1}, [4]int{280, 70, 10, 1}, 0*280 + 1*70 + 2*10 + 3*1},
		{customlayer.BYXF, [4]int{60, 1, 15, 3}, [4]int{280, 1, 40, 4}, 0*280 + 1*1 + 2*40 + 3*4},
		{customlayer.YXFB, [4]int{1, 2, 30, 6}, [4]int{1, 3, 120, 12}, 0*1 + 1*3 + 2*120 + 3*12},
		{customlayer.FYXB, [4]int{1, 40, 10, 2}, [4]int{1, 210, 30, 3}, 0*1 + 1*210 + 2*30 + 3*3},
	}
	for _, c := range cases {
		l, err := NewLayout(shape, c.f, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l.Pitches != c.plain || l.Offset != 0 || l.Size() != 120 {
			t.Errorf("%v: pitches %v offset %d size %d, want %v 0 120", c.f, l.Pitches, l.Offset, l.Size(), c.plain)
		}
		checkBijection(t, l)
		l, err = NewLayout(shape, c.f, lower, upper)
		if err != nil {
			t.Fatal(err)
		}
		if l.Pitches != c.padded || l.Offset != c.offset || l.Size() != 840 {
			t.Errorf("%v padded: pitches %v offset %d size %d, want %v %d 840", c.f, l.Pitches, l.Offset, l.Size(), c.padded, c.offset)
		}
		checkBijection(t, l)
		if got := l.Index(0, 0, 0, 0); got != c.offset {
			t.Errorf("%v: Index(0,0,0,0) = %d, want the offset %d", c.f, got, c.offset)
		}
	}
	// ANY lays out as BFYX.
	if l, _ := NewLayout(shape, customlayer.ANY, nil, nil); l.Format != customlayer.BFYX || l.Pitches != cases[0].plain {
		t.Errorf("ANY: %+v", l)
	}
}

// checkBijection checks that every element of the padded box has its own place in the
// buffer, inside it.
func checkBijection(t *testing.T, l Layout) {
	t.Helper()
	p := l.Padded()
	seen := make([]bool, l.Size())
	for b := 0; b < p[0]; b++ {
		for f := 0; f < p[1]; f++ {
			for y := 0; y < p[2]; y++ {
				for x := 0; x < p[3]; x++ {
					i := b*l.Pitches[0] + f*l.Pitches[1] + y*l.Pitches[2] + x*l.Pitches[3]
					if i < 0 || i >= len(seen) || seen[i] {
						t.Fatalf("%v: element %d,%d,%d,%d maps to %d twice or outside", l.Format, b, f, y, x, i)
					}
					seen[i] = true
				}
			}
		}
	}
}

func TestPitchDefinesInText(t *testing.T) {
	l := loadReLU(t)
	l.Tensors[0].Format = customlayer.ANY
	l.Tensors[1].Format = customlayer.YXFB
	p, err := Generate(l, Instance{Name: "r",
		Inputs:  []Tensor{{Shape: []int{2, 3, 4, 5}, Format: customlayer.BYXF, Lower: []int{0, 1, 2, 3}, Upper: []int{1, 0, 1, 2}, Type: "half"}},
		Outputs: []Tensor{{Shape: []int{2, 3, 4, 5}, Format: customlayer.ANY, Lower: []int{0, 1, 2, 3}, Upper: []int{1, 0, 1, 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"#define INPUT0_TYPE half\n#define INPUT0_FORMAT_BYXF\n",
		"#define INPUT0_LOWER_PADDING (int []){ 0,1,2,3, }\n",
		"#define INPUT0_UPPER_PADDING (int []){ 1,0,1,2, }\n",
		"#define INPUT0_PITCHES (int []){ 280,1,40,4, }\n#define INPUT0_OFFSET 93\n",
		"#define OUTPUT0_FORMAT_YXFB\n",
		"#define OUTPUT0_PITCHES (int []){ 1,3,120,12, }\n#define OUTPUT0_OFFSET 279\n",
		"#define GLOBAL_WORKSIZE (size_t []){ 5,4,6, }\n",
	} {
		if !strings.Contains(p.Source, line) {
			t.Errorf("missing %q in\n%s", line, p.Source)
		}
	}
}

func TestLowerRanks(t *testing.T) {
	cases := []struct {
		shape   []int
		dims    string
		pitches string
	}{
		{[]int{7, 2, 3}, "{ 7,2,3,1, }", "{ 6,3,1,1, }"}, // [T,N,C] → B=T F=N Y=C X=1
		{[]int{4, 10}, "{ 4,10,1,1, }", "{ 10,1,1,1, }"},
		{[]int{5}, "{ 5,1,1,1, }", "{ 1,1,1,1, }"},
		{[]int{}, "{ 1,1,1,1, }", "{ 1,1,1,1, }"},
	}
	l := loadReLU(t)
	l.WorkSizes.Global = l.WorkSizes.Global[:0]
	l.WorkSizes.Global = append(l.WorkSizes.Global, mustList(t, "B*F*Y*X")...)
	for _, c := range cases {
		p, err := Generate(l, Instance{Name: "r", Inputs: []Tensor{{Shape: c.shape}}, Outputs: []Tensor{{Shape: c.shape}}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Source, "#define INPUT0_DIMS_SIZE 4\n#define INPUT0_DIMS (int [])"+c.dims+"\n") ||
			!strings.Contains(p.Source, "#define OUTPUT0_PITCHES (int [])"+c.pitches+"\n") {
			t.Errorf("shape %v:\n%s", c.shape, p.Source)
		}
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		if !equalInts(p.Global, []int{n}) {
			t.Errorf("shape %v: global %v, want [%d]", c.shape, p.Global, n)
		}
	}
}

const definesXML = `<CustomLayer name="Defs" type="SimpleGPU" version="1">
  <Kernel entry="k">
    <Source filename="a.cl"/>
    <Source filename="b.cl"/>
    <Define name="I" type="int" param="i" default="3"/>
    <Define name="F" type="float" param="f" default="0.5"/>
    <Define name="IA" type="int[]" param="ia" default="1,2,3"/>
    <Define name="FA" type="float[]" param="fa" default="0.1"/>
    <Define name="U" param="u" default="1 + 2"/>
    <Define name="STATIC_ONLY_DEFAULT" default="7"/>
    <Define name="TILE 16"/>
    <Define name="FLAG"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0"/>
    <Tensor arg-index="1" type="input" port-index="1" format="ANY"/>
    <Data name="w" arg-index="2"/>
    <Tensor arg-index="3" type="output" port-index="0"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <CompilerOptions options="-DX=1"/>
  <WorkSizes dim="input 1" global="Y,((X + 31)/32)*32" local="1,32"/>
</CustomLayer>
`

var definesFS = fstest.MapFS{
	"cfg/defs.xml": {Data: []byte(definesXML)},
	"cfg/a.cl":     {Data: []byte("// a, no newline at the end")},
	"cfg/b.cl":     {Data: []byte("// b\n")},
}

func loadDefs(t *testing.T) *customlayer.Layer {
	t.Helper()
	layers, err := customlayer.LoadFS(definesFS, "cfg/defs.xml")
	if err != nil {
		t.Fatal(err)
	}
	return layers[0]
}

func defsInstance(params ParamMap) Instance {
	return Instance{
		Name:    "block1/defs",
		Inputs:  []Tensor{{Shape: []int{1, 8, 4, 4}}, {Shape: []int{1, 3, 7, 40}}},
		Outputs: []Tensor{{Shape: []int{1, 8, 4, 4}}},
		Params:  params,
	}
}

func TestEveryDefineType(t *testing.T) {
	l := loadDefs(t)
	cases := []struct {
		name   string
		params ParamMap
		want   string
	}{
		{"defaults", nil, `#define I 3
#define F 0.5f
#define IA (int []){ 1,2,3, }
#define FA (float []){ 0.1f, }
#define U 1 + 2
#define STATIC_ONLY_DEFAULT 7
#define TILE 16
#define FLAG
`},
		{"params", ParamMap{"i": Int(-4), "f": Float(2), "ia": Ints(5, 6), "fa": Floats(0.25, 1e-7, 3), "u": String("x*y")}, `#define I -4
#define F 2.0f
#define IA (int []){ 5,6, }
#define FA (float []){ 0.25f,1e-07f,3.0f, }
#define U x*y
`},
		{"conversions", ParamMap{"i": Float(8), "f": Int(3), "ia": Int(9), "fa": Ints(1, 2), "u": Floats(0.5, 1)}, `#define I 8
#define F 3.0f
#define IA (int []){ 9, }
#define FA (float []){ 1.0f,2.0f, }
#define U 0.5f,1.0f
`},
		{"strings", ParamMap{"i": String("12"), "f": String("0.75"), "ia": String("1,2"), "fa": String("1.5"), "u": Int(5)}, `#define I 12
#define F 0.75f
#define IA (int []){ 1,2, }
#define FA (float []){ 1.5f, }
#define U 5
`},
		{"special floats", ParamMap{"f": Float(math.Inf(1)), "fa": Floats(math.Inf(-1), math.NaN(), 1e39, 16777216, 1.5e-45)}, `#define F INFINITY
#define FA (float []){ (-INFINITY),NAN,INFINITY,1.6777216e+07f,1e-45f, }
`},
		{"empty list", ParamMap{"ia": Ints()}, `#define IA (int []){  }
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Generate(l, defsInstance(c.params))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Source, "// Custom Layer User Defines\n") {
				t.Fatal("no user defines header")
			}
			for _, line := range strings.SplitAfter(c.want, "\n") {
				if line != "" && !strings.Contains(p.Source, "\n"+line) {
					t.Errorf("missing %q in\n%s", line, p.Source[strings.Index(p.Source, "// Custom Layer User"):])
				}
			}
		})
	}
}

func TestSourceAssemblyAndWorkSizes(t *testing.T) {
	l := loadDefs(t)
	p, err := Generate(l, defsInstance(nil))
	if err != nil {
		t.Fatal(err)
	}
	tail := `#define FLAG
#line 1 "cfg/a.cl"
// a, no newline at the end
#line 1 "cfg/b.cl"
// b
`
	if !strings.HasSuffix(p.Source, tail) {
		t.Errorf("source tail:\n%s", p.Source)
	}
	if !strings.HasPrefix(p.Source, "// Custom Layer Built-ins\n#define NUM_INPUTS 2\n") {
		t.Errorf("head:\n%s", p.Source[:80])
	}
	// Both inputs and the output, in order.
	i0, i1, o0 := strings.Index(p.Source, "INPUT0_DIMS_SIZE"), strings.Index(p.Source, "INPUT1_DIMS_SIZE"), strings.Index(p.Source, "OUTPUT0_DIMS_SIZE")
	if i0 < 0 || i1 < i0 || o0 < i1 {
		t.Errorf("tensor order %d %d %d", i0, i1, o0)
	}
	// dim="input 1": Y=7, X=40 → ((40+31)/32)*32 = 64 (float evaluation: 71).
	if !equalInts(p.Global, []int{7, 64}) || !equalInts(p.Local, []int{1, 32}) {
		t.Errorf("work sizes %v %v", p.Global, p.Local)
	}
	if !strings.Contains(p.Source, "#define GLOBAL_WORKSIZE_SIZE 2\n#define GLOBAL_WORKSIZE (size_t []){ 7,64, }\n#define LOCAL_WORKSIZE_SIZE 2\n#define LOCAL_WORKSIZE (size_t []){ 1,32, }\n") {
		t.Errorf("work-size defines:\n%s", p.Source)
	}
	if p.Options != "-cl-mad-enable -DX=1" {
		t.Errorf("options %q", p.Options)
	}
	// Deterministic.
	p2, _ := Generate(l, defsInstance(nil))
	if p2.Source != p.Source {
		t.Error("two runs differ")
	}
}

func mustList(t *testing.T, s string) []formulaExpr {
	t.Helper()
	l, err := parseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWorkSizeFormulas(t *testing.T) {
	// B=2 F=5 Y=7 X=40 (output 2x5x7x40).
	cases := []struct {
		global, local string
		want          []int
		wantLocal     []int
	}{
		{"((X + 31)/32)*32", "", []int{64}, nil}, // float: 71
		{"X/3*3", "", []int{39}, nil},            // float: 40
		{"(X+7)/8,Y,B*F", "", []int{5, 7, 10}, nil},
		{"Y/2*2", "", []int{6}, nil},                             // float: 7
		{"F/2+F/2", "", []int{4}, nil},                           // float: 5
		{"X%7+X/7", "", []int{5 + 5}, nil},                       // 40 % 7 = 5
		{"B*F*Y*X", "", []int{2 * 5 * 7 * 40}, nil},              // the default
		{"b*f,y,x", "1,7,8", []int{10, 7, 40}, []int{1, 7, 8}},   // lower case
		{"((X+31)/32)*32,Y", "32,1", []int{64, 7}, []int{32, 1}}, // padded to a multiple
	}
	for _, c := range cases {
		l := loadReLU(t)
		l.WorkSizes.Global = mustList(t, c.global)
		l.WorkSizes.Local = nil
		if c.local != "" {
			l.WorkSizes.Local = mustList(t, c.local)
		}
		shape := []int{2, 5, 7, 40}
		p, err := Generate(l, Instance{Name: "r", Inputs: []Tensor{{Shape: shape}}, Outputs: []Tensor{{Shape: shape}}})
		if err != nil {
			t.Errorf("%q/%q: %v", c.global, c.local, err)
			continue
		}
		if !equalInts(p.Global, c.want) || !equalInts(p.Local, c.wantLocal) {
			t.Errorf("%q/%q: got %v/%v, want %v/%v", c.global, c.local, p.Global, p.Local, c.want, c.wantLocal)
		}
	}
}

func TestErrors(t *testing.T) {
	shape := []int{1, 3, 4, 5}
	std := func() Instance {
		return Instance{Name: "conv1/relu", Inputs: []Tensor{{Shape: shape}}, Outputs: []Tensor{{Shape: shape}}}
	}
	cases := []struct {
		name string
		edit func(l *customlayer.Layer, in *Instance)
		want string
	}{
		{"division by zero", func(l *customlayer.Layer, in *Instance) { l.WorkSizes.Global = mustList(t, "X/(F-3)") },
			`layer "conv1/relu" (type "ReLU"): global work size (testdata/custom_layer_example.xml:11): formula "X/(F-3)" with B=1 F=3 Y=4 X=5: division by zero`},
		{"modulo by zero", func(l *customlayer.Layer, in *Instance) { l.WorkSizes.Global = mustList(t, "X%(B-1)") },
			`layer "conv1/relu" (type "ReLU"): global work size (testdata/custom_layer_example.xml:11): formula "X%(B-1)" with B=1 F=3 Y=4 X=5: modulo by zero`},
		{"zero", func(l *customlayer.Layer, in *Instance) { l.WorkSizes.Global = mustList(t, "X/6") },
			`layer "conv1/relu" (type "ReLU"): global work size (testdata/custom_layer_example.xml:11): formula "X/6" with B=1 F=3 Y=4 X=5: result 0 is not positive`},
		{"negative local", func(l *customlayer.Layer, in *Instance) {
			l.WorkSizes.Global = mustList(t, "X")
			l.WorkSizes.Local = mustList(t, "F-Y")
		}, `layer "conv1/relu" (type "ReLU"): local work size (testdata/custom_layer_example.xml:11): formula "F-Y" with B=1 F=3 Y=4 X=5: result -1 is not positive`},
		{"local does not divide", func(l *customlayer.Layer, in *Instance) {
			l.WorkSizes.Global = mustList(t, "X,Y")
			l.WorkSizes.Local = mustList(t, "2,2")
		}, `layer "conv1/relu" (type "ReLU"): work sizes (testdata/custom_layer_example.xml:11): local size 2 (formula "2") does not divide global size 5 (formula "X") in dimension 0, with B=1 F=3 Y=4 X=5`},
		{"missing param", func(l *customlayer.Layer, in *Instance) {
			l.Defines[0].HasDefault = false
			in.Params = ParamMap{"slope": Float(0.1), "axes": Ints(1, 2)}
		}, `layer "conv1/relu" (type "ReLU"): Define "neg_slope" (testdata/custom_layer_example.xml:4): the layer has no parameter "negative_slope" and the define has no default; the layer's parameters: axes (int[]), slope (float)`},
		{"list to scalar", func(l *customlayer.Layer, in *Instance) { in.Params = ParamMap{"negative_slope": Floats(0.1, 0.2)} },
			`layer "conv1/relu" (type "ReLU"): Define "neg_slope" (testdata/custom_layer_example.xml:4): parameter "negative_slope" = 0.1,0.2: a list cannot be given to the scalar float define`},
		{"string not a number", func(l *customlayer.Layer, in *Instance) { in.Params = ParamMap{"negative_slope": String("steep")} },
			`layer "conv1/relu" (type "ReLU"): Define "neg_slope" (testdata/custom_layer_example.xml:4): parameter "negative_slope" = "steep": not a number`},
		{"line break", func(l *customlayer.Layer, in *Instance) {
			in.Params = ParamMap{"negative_slope": String("1\n#define X")}
		},
			`layer "conv1/relu" (type "ReLU"): Define "neg_slope" (testdata/custom_layer_example.xml:4): parameter "negative_slope" = "1\n#define X": a value with a line break cannot be a define`},
		{"float to int", func(l *customlayer.Layer, in *Instance) {
			l.Defines[0].Type = customlayer.Int
			in.Params = ParamMap{"negative_slope": Float(0.5)}
		}, `layer "conv1/relu" (type "ReLU"): Define "neg_slope" (testdata/custom_layer_example.xml:4): parameter "negative_slope" = 0.5: 0.5 is not an integer`},
		{"missing input", func(l *customlayer.Layer, in *Instance) { in.Inputs = nil },
			`layer "conv1/relu" (type "ReLU"): Tensor #1 (arg-index 0) binds input port 0, but the layer has 0 inputs`},
		{"format mismatch", func(l *customlayer.Layer, in *Instance) { in.Inputs[0].Format = customlayer.BYXF },
			`layer "conv1/relu" (type "ReLU"): INPUT0 is in BYXF but the layer declares BFYX (the host must reorder it)`},
		{"rank 5", func(l *customlayer.Layer, in *Instance) { in.Outputs[0].Shape = []int{1, 1, 1, 1, 1} },
			`layer "conv1/relu" (type "ReLU"): OUTPUT0: rank 5 shape [1 1 1 1 1]: at most 4 dimensions are supported`},
		{"zero dim", func(l *customlayer.Layer, in *Instance) { in.Inputs[0].Shape = []int{1, 0} },
			`layer "conv1/relu" (type "ReLU"): INPUT0: shape [1 0]: dimension 1 is 0, must be at least 1`},
		{"bad type", func(l *customlayer.Layer, in *Instance) { in.Inputs[0].Type = "float4" },
			`layer "conv1/relu" (type "ReLU"): INPUT0: element type "float4" is not an OpenCL C scalar type`},
		{"dim input out of range", func(l *customlayer.Layer, in *Instance) { l.WorkSizes.Dim = customlayer.Dim{Input: true, Index: 1} },
			`layer "conv1/relu" (type "ReLU"): WorkSizes dim="input 1", but the layer has 1 inputs`},
		{"too large", func(l *customlayer.Layer, in *Instance) { in.Inputs[0].Shape = []int{65536, 65536} },
			`layer "conv1/relu" (type "ReLU"): INPUT0: shape [65536 65536] with padding []/[]: the tensor has more than 2147483647 elements, too many for int indexing`},
		{"negative padding", func(l *customlayer.Layer, in *Instance) { in.Inputs[0].Lower = []int{0, -1} },
			`layer "conv1/relu" (type "ReLU"): INPUT0: lower padding [0 -1]: entry 1 is out of range`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := loadReLU(t)
			in := std()
			c.edit(l, &in)
			p, err := Generate(l, in)
			if err == nil {
				t.Fatalf("no error; program:\n%s", p.Source)
			}
			if err.Error() != c.want {
				t.Errorf("\n got %s\nwant %s", err, c.want)
			}
		})
	}
	// Non-uniform work groups allowed: no divisibility error.
	l := loadReLU(t)
	l.WorkSizes.Global, l.WorkSizes.Local = mustList(t, "X,Y"), mustList(t, "2,2")
	in := std()
	in.NonUniformWorkGroups = true
	if _, err := Generate(l, in); err != nil {
		t.Errorf("non-uniform: %v", err)
	}
	// Several problems are reported together.
	l = loadReLU(t)
	l.Defines[0].HasDefault = false
	in = std()
	in.Inputs[0].Type = "quad"
	_, err := Generate(l, in)
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("want 2 problems, got %v", err)
	}
}

func TestFormatFloat(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0.0f", 0.1: "0.1f", float64(float32(0.1)): "0.1f", 1: "1.0f", -2.5: "-2.5f", 1e-7: "1e-07f",
		123456789: "1.2345679e+08f", 100000: "100000.0f", 1e6: "1e+06f", math.MaxFloat32: "3.4028235e+38f",
		math.Inf(1): "INFINITY", math.Inf(-1): "(-INFINITY)", math.NaN(): "NAN", 1e300: "INFINITY",
	} {
		if got := FormatFloat(v); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", v, got, want)
		}
	}
	// Every finite float32 reads back exactly.
	for _, v := range []float32{0.1, 1.0 / 3, 3.14159265, 1e-38, 1.4e-45, 65504, 0.2, 0.3} {
		s := strings.TrimSuffix(FormatFloat(float64(v)), "f")
		if back, err := parseF32(s); err != nil || back != v {
			t.Errorf("%v → %s → %v (%v)", v, s, back, err)
		}
	}
}

func TestParseValue(t *testing.T) {
	for s, want := range map[string]string{
		"3": "int 3", "-3": "int -3", "2,3,4": "ints 2,3,4", "0.5": "float 0.5", "1e3": "float 1000",
		"1,2.5": "floats 1,2.5", "abc": "string \"abc\"", "1,x": "string \"1,x\"", "0.5f": "float 0.5",
	} {
		v := ParseValue(s)
		kind := map[Kind]string{KindInt: "int", KindFloat: "float", KindIntList: "ints", KindFloatList: "floats", KindString: "string"}[v.Kind]
		if got := kind + " " + v.String(); got != want {
			t.Errorf("ParseValue(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzFormulaWorkSizes(f *testing.F) {
	for _, s := range []string{"X,Y,B*F", "Y,((X + 31)/32)*32", "X/(Y-Y)", "B*F*Y*X"} {
		f.Add(s, "", 1, 96, 55, 55)
	}
	f.Add("X,Y", "1,32", 2, 3, 4, 5)
	f.Fuzz(func(t *testing.T, global, local string, b, fe, y, x int) {
		g, err := parseList(global)
		if err != nil {
			return
		}
		l := &customlayer.Layer{Name: "F", Entry: "k",
			Tensors:   []customlayer.Tensor{{Kind: customlayer.Output}},
			WorkSizes: customlayer.WorkSizes{Global: g}}
		if local != "" {
			if l.WorkSizes.Local, err = parseList(local); err != nil {
				return
			}
		}
		p, err := Generate(l, Instance{Name: "f", Outputs: []Tensor{{Shape: []int{b, fe, y, x}}}})
		if err != nil {
			return
		}
		for i, v := range p.Global {
			if v <= 0 || (len(p.Local) > 0 && (p.Local[i] <= 0 || v%p.Local[i] != 0)) {
				t.Fatalf("bad sizes %v %v", p.Global, p.Local)
			}
		}
	})
}
