package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
)

func TestJitPrintsTheProgram(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runJit([]string{"-c", reluXML, "-l", "ReLU", "--input", "1x96x55x55", "--output", "1x96x55x55:bfyx", "--param", "negative_slope=0.1"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	// Exactly what jit.Generate gives for the same instance.
	layers, err := customlayer.Load(reluXML)
	if err != nil {
		t.Fatal(err)
	}
	shape := []int{1, 96, 55, 55}
	p, err := jit.Generate(layers[0], jit.Instance{Name: "ReLU",
		Inputs:  []jit.Tensor{{Shape: shape}},
		Outputs: []jit.Tensor{{Shape: shape}},
		Params:  jit.ParamMap{"negative_slope": jit.Float(0.1)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != p.Source {
		t.Errorf("stdout is not the program text:\n%s", out.String())
	}
	for _, s := range []string{"#define INPUT0_PITCHES (int []){ 290400,3025,55,1, }\n", "#define neg_slope 0.1f\n", "#line 1 \"" + filepath.Join(filepath.Dir(reluXML), "custom_layer_kernel.cl") + "\"\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("missing %q", s)
		}
	}
	if want := "clhost: entry example_relu_kernel, options \"-cl-mad-enable\", global work size 55,55,96, local chosen by the driver\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}

func TestJitFormatsTypesAndLists(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runJit([]string{"-c", globalXML, "-l", "PriorBoxStyle", "--name", "pb1",
		"--input", "1x3x7x40:byxf:half", "--output", "1x3x7x40:half",
		"--param", "variance=0.1,0.2", "--param", "steps=2,3,4", "--param", "clip=1"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"#define GLOBAL_WORKSIZE (size_t []){ 7,64, }\n", // ((40+31)/32)*32 = 64
		"#define LOCAL_WORKSIZE (size_t []){ 1,32, }\n",
		"#define INPUT0_TYPE half\n#define INPUT0_FORMAT_BYXF\n",
		"#define INPUT0_PITCHES (int []){ 840,1,120,3, }\n",
		"#define OUTPUT0_FORMAT_BFYX\n", // ANY declared, none given
		"#define VARIANCE (float []){ 0.1f,0.2f, }\n",
		"#define STEPS (int []){ 2,3,4, }\n",
		"#define USE_FAST_MATH 1\n#define TILE 16\n#define CLIP 1\n",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("missing %q in\n%s", s, out.String())
		}
	}
}

func TestJitErrors(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"unknown type", []string{"-c", reluXML, "-l", "Relu", "--input", "1x2", "--output", "1x2"}, false,
			`no custom layer of type "Relu" in ` + reluXML + ` or the global configuration (defined: "GRN", "Swish", "Tile", "ReLU")`},
		{"missing param", []string{"-c", globalXML, "-l", "Grn", "--input", "1x2", "--output", "1x2:byxf"}, false,
			`layer "Grn" (type "Grn"): OUTPUT0 is in BYXF but the layer declares BFYX (the host must reorder it)`},
		{"list to scalar", []string{"-c", reluXML, "-l", "ReLU", "--input", "1x2", "--output", "1x2", "--param", "negative_slope=1,2"}, false,
			`layer "ReLU" (type "ReLU"): Define "neg_slope" (../../customlayer/testdata/relu/custom_layer_example.xml:4): parameter "negative_slope" = 1,2: a list cannot be given to the scalar float define`},
		{"bad dims", []string{"-c", reluXML, "-l", "ReLU", "--input", "1xAx3", "--output", "1x2"}, true, `dimension "A" is not a positive integer`},
		{"bad format", []string{"-c", reluXML, "-l", "ReLU", "--input", "1x2:nchw:half", "--output", "1x2"}, true, `"nchw" is neither a format`},
		{"bad param", []string{"-c", reluXML, "-l", "ReLU", "--param", "x"}, true, `want NAME=VALUE`},
		{"no output", []string{"-c", reluXML, "-l", "ReLU", "--input", "1x2"}, true, "no output tensor"},
		{"no layer", []string{"-c", reluXML, "--output", "1x2"}, true, "no layer type"},
		{"no config", []string{"-l", "ReLU", "--output", "1x2"}, true, "no configuration"},
		{"-d without --build", []string{"-c", reluXML, "-l", "ReLU", "--output", "1x2", "-d", "cpu"}, true, "-d only matters with --build"},
		{"too few inputs", []string{"-c", reluXML, "-l", "ReLU", "--output", "1x2"}, false,
			`layer "ReLU" (type "ReLU"): Tensor #1 (arg-index 0) binds input port 0, but the layer has 0 inputs`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runJit(c.args, &out, &errOut)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.As(err, new(usageError)); got != c.usage {
				t.Errorf("usage error = %v, want %v (%v)", got, c.usage, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
			if out.Len() != 0 {
				t.Errorf("program printed despite the error")
			}
		})
	}
	// A missing required parameter names the instance and the parameter.
	dir := writeConfig(t, map[string]string{
		"k.cl": "__kernel void k(__global float* a, __global float* b) { b[0] = a[0] * SCALE; }\n",
		"c.xml": `<CustomLayer name="Scale" type="SimpleGPU" version="1">
  <Kernel entry="k"><Source filename="k.cl"/><Define name="SCALE" type="float" param="scale"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>`,
	})
	var out, errOut bytes.Buffer
	err := runJit([]string{"-c", filepath.Join(dir, "c.xml"), "-l", "Scale", "--name", "head/scale", "--input", "4", "--output", "4"}, &out, &errOut)
	if want := `layer "head/scale" (type "Scale"): Define "SCALE" (` + filepath.Join(dir, "c.xml") + `:2): the layer has no parameter "scale" and the define has no default; the layer has no parameters`; err == nil || err.Error() != want {
		t.Errorf("missing parameter: %v\nwant %s", err, want)
	}
	if code := runMain([]string{"jit", "-c", reluXML, "-l", "Nope", "--output", "1"}); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if code := runMain([]string{"jit", "--input", "0x1"}); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
}

// The build tests run on the OpenCL CPU device for real (PoCL), like every OpenCL test.
// --build answers ok (or the build log) without the program text, which jit without
// --build prints.
func TestJitBuild(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runJit([]string{"-c", reluXML, "-l", "ReLU", "--input", "1x4x5x6", "--output", "1x4x5x6", "--build", "-d", "cpu"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	if !strings.HasSuffix(errOut.String(), "ok\n") {
		t.Errorf("stderr does not end with ok:\n%s", errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("--build printed the program text:\n%.200s", out.String())
	}
}

func TestJitBuildErrorNamesUserFileAndLine(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"good.cl": "// helper file, 2 lines\n#define HELPER 1\n",
		"bad.cl": `__kernel void bad(__global const INPUT0_TYPE* in, __global OUTPUT0_TYPE* out)
{
    out[get_global_id(0)] = in[get_global_id(0)] * undeclared_factor;
}
`,
		"bad.xml": `<CustomLayer name="Bad" type="SimpleGPU" version="1">
  <Kernel entry="bad"><Source filename="good.cl"/><Source filename="bad.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>`,
		"args.xml": `<CustomLayer name="Args" type="SimpleGPU" version="1">
  <Kernel entry="two"><Source filename="two.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/><Data name="w" arg-index="2"/></Buffers>
</CustomLayer>`,
		"two.cl": "__kernel void two(__global const float* a, __global float* b) { b[0] = a[0]; }\n",
	})
	var out, errOut bytes.Buffer
	err := runJit([]string{"-c", filepath.Join(dir, "bad.xml"), "-l", "Bad", "--input", "8", "--output", "8", "--build", "-d", "cpu"}, &out, &errOut)
	if err == nil {
		t.Fatal("the build succeeded")
	}
	where := filepath.Join(dir, "bad.cl") + ":3:"
	if !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "undeclared_factor") {
		t.Errorf("error does not point at %s:\n%v", where, err)
	}
	if !strings.HasPrefix(err.Error(), "build failed on ") {
		t.Errorf("error: %v", err)
	}
	if code := runMain([]string{"jit", "-c", filepath.Join(dir, "bad.xml"), "-l", "Bad", "--input", "8", "--output", "8", "--build", "-d", "cpu"}); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}

	// A kernel whose argument count differs from the declared buffers is caught.
	out.Reset()
	errOut.Reset()
	err = runJit([]string{"-c", filepath.Join(dir, "args.xml"), "-l", "Args", "--input", "8", "--output", "8", "--build", "-d", "cpu"}, &out, &errOut)
	if err == nil || err.Error() != `layer type "Args": kernel "two" takes 2 arguments but the configuration declares 3 buffers` {
		t.Errorf("argument count: %v", err)
	}
}

func TestParseTensorSpec(t *testing.T) {
	for s, want := range map[string]string{
		"1x96x55x55":       "[1 96 55 55] ANY ",
		"4x10:BYXF":        "[4 10] BYXF ",
		"3:half":           "[3] ANY half",
		"2x2:fyxb:char":    "[2 2] FYXB char",
		"2x2:uchar:yxfb":   "[2 2] YXFB uchar",
		"1x1x1x1:any:half": "[1 1 1 1] ANY half",
	} {
		tn, err := parseTensorSpec(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if got := sprintTensor(tn); got != want {
			t.Errorf("%s = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"", "x", "1x", "0x3", "-1", "1x2x3x4x5", "1:bfyx:byxf", "1:half:float", "1::half"} {
		if _, err := parseTensorSpec(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func sprintTensor(t jit.Tensor) string { return fmt.Sprintf("%v %v %s", t.Shape, t.Format, t.Type) }

// TestJitMissingInputHint: an instance given fewer inputs than the Buffers bind is told
// how to pass them (--input, or --input-data with --run), with and without --run.
func TestJitMissingInputHint(t *testing.T) {
	for _, extra := range [][]string{nil, {"--run", "-d", "cpu"}} {
		var out, errOut bytes.Buffer
		args := append([]string{"-c", reluXML, "-l", "ReLU", "--output", "1x4x5x6"}, extra...)
		err := runJit(args, &out, &errOut)
		if err == nil {
			t.Fatalf("%v: no error", extra)
		}
		for _, w := range []string{"binds input port 0, but the layer has 0 inputs", "pass each with --input DIMS[:FORMAT][:TYPE] or, with --run, --input-data inputN=FILE.npy"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: the error lacks %q:\n%v", extra, w, err)
			}
		}
	}
}
