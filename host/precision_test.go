package host

import (
	"bytes"
	"context"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// fp16Tolerance is the largest error fp16 storage may make against fp32, relative to
// the output's largest magnitude: max|fp16 - fp32| / max|fp32|. Half keeps 11
// significant bits (relative rounding 4.9e-4 per store), and a CNN rounds each
// activation once per layer.
const fp16Tolerance = 1e-2

// smallCNN has one of each op fp16 stores: Conv with fused Relu, MaxPool, a Conv with a
// residual Add, Concat, AveragePool, Sigmoid, GlobalAveragePool, Flatten, Gemm, Softmax.
func smallCNN(t testing.TB) *model.Model {
	b := model.NewBuilder("small cnn")
	w := uniformConsts(b, rand.New(rand.NewSource(5)), 0.4)
	x := b.Input("x", model.Float32, 2, 3, 20, 20)
	c1 := b.Layer("Conv", "c1", []string{x, w("w1", 8, 3, 3, 3), w("b1", 8)}, model.IntsAttr("pads", 1, 1, 1, 1))
	r1 := b.Layer("Relu", "r1", []string{c1})
	p1 := b.Layer("MaxPool", "p1", []string{r1}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	c2 := b.Layer("Conv", "c2", []string{p1, w("w2", 8, 8, 3, 3), w("b2", 8)}, model.IntsAttr("pads", 1, 1, 1, 1))
	a2 := b.Layer("Add", "a2", []string{c2, p1})
	e1 := b.Layer("Conv", "e1", []string{a2, w("we1", 4, 8, 1, 1)})
	e3 := b.Layer("Conv", "e3", []string{a2, w("we3", 4, 4, 3, 3)}, model.IntsAttr("pads", 1, 1, 1, 1), model.IntAttr("group", 2))
	cat := b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
	ap := b.Layer("AveragePool", "ap", []string{cat}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	sg := b.Layer("Sigmoid", "sg", []string{ap})
	gp := b.Layer("GlobalAveragePool", "gp", []string{sg})
	fl := b.Layer("Flatten", "fl", []string{gp})
	fc := b.Layer("Gemm", "fc", []string{fl, w("wf", 10, 8), w("bf", 10)}, model.IntAttr("transB", 1), model.FloatAttr("alpha", 4))
	b.Output(b.LayerOutputs("Softmax", "sm", []string{fc}, []string{"y"})...)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runPrecision compiles m with opts at precision p and runs it on inputs.
func runPrecision(t *testing.T, opts Options, p builtinkernels.Precision, m *model.Model, inputs map[string]*Tensor) (*Network, map[string]*Tensor) {
	t.Helper()
	opts.Precision = p
	e := newTestEngine(t, opts)
	n, err := e.Compile(m)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	t.Cleanup(n.Close)
	out, err := n.Infer(context.Background(), inputs)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return n, out
}

// relError is max|got - want| / max|want|.
func relError(got, want []float32) float64 {
	var d, ref float64
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(want[i])))
		ref = math.Max(ref, math.Abs(float64(want[i])))
	}
	return d / math.Max(ref, 1e-30)
}

func randomInputs(m *model.Model, seed int64) map[string]*Tensor {
	rng := rand.New(rand.NewSource(seed))
	in := map[string]*Tensor{}
	for _, name := range m.Inputs {
		in[name] = randomTensor(rng, m.Tensor(name).Shape...)
	}
	return in
}

// compareFP16 runs m in fp32 and in fp16 and checks the outputs agree within
// fp16Tolerance, and that fp16 stored its activations as half.
func compareFP16(t *testing.T, m *model.Model, opts Options) float64 {
	t.Helper()
	in := randomInputs(m, 7)
	_, want := runPrecision(t, opts, builtinkernels.PrecisionFP32, m, in)
	n16, got := runPrecision(t, opts, builtinkernels.PrecisionFP16, m, in)
	if len(n16.halfLayers) == 0 {
		t.Fatal("fp16: no layer stores half")
	}
	worst := 0.0
	for name, w := range want {
		g := got[name]
		if g == nil || len(g.Data) != len(w.Data) {
			t.Fatalf("output %q: fp16 gave %v", name, g)
		}
		r := relError(g.Data, w.Data)
		worst = math.Max(worst, r)
		if r > fp16Tolerance || math.IsNaN(r) {
			t.Errorf("output %q: fp16 against fp32: relative error %.3g, want ≤ %g", name, r, fp16Tolerance)
		}
	}
	return worst
}

func TestFP16SmallCNNMatchesFP32(t *testing.T) {
	m := smallCNN(t)
	worst := compareFP16(t, m, Options{NoGlobalConfig: true})
	t.Logf("small CNN: fp16 relative error %.3g", worst)
}

// TestFP16ResNet18Shape runs ResNet-18's layers (at 64 × 64, to keep the suite quick)
// in fp16 against fp32.
func TestFP16ResNet18Shape(t *testing.T) {
	if simulated() {
		t.Skip("a whole ResNet-18 under the simulator")
	}
	worst := compareFP16(t, resnet18Model(t, 1, 64), Options{NoGlobalConfig: true})
	t.Logf("ResNet-18 (64 × 64): fp16 relative error %.3g", worst)
}

// TestFP16CustomLayerRunsUnchanged runs Conv → Conv → a user's ReLU kernel → MaxPool →
// Conv in fp16: the custom kernel gets float tensors (its defines say so), and the
// built-ins around it convert, as do the first and last layers from the float graph
// input and to the float graph output.
func TestFP16CustomLayerRunsUnchanged(t *testing.T) {
	b := model.NewBuilder("custom relu")
	w := uniformConsts(b, rand.New(rand.NewSource(2)), 0.5)
	x := b.Input("image", model.Float32, 1, 3, 16, 16)
	c0 := b.Layer("Conv", "conv0", []string{x, w("w0", 8, 3, 3, 3), w("b0", 8)}, model.IntsAttr("pads", 1, 1, 1, 1))
	c := b.Layer("Conv", "conv1", []string{c0, w("w", 8, 8, 3, 3), w("b", 8)}, model.IntsAttr("pads", 1, 1, 1, 1))
	r := b.Tensor("relu1", model.Float32, 1, 8, 16, 16)
	b.LayerOutputs("ReLU", "relu1", []string{c}, []string{r}, model.FloatAttr("negative_slope", 0.1))
	p := b.Layer("MaxPool", "pool1", []string{r}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(b.Layer("Conv", "conv2", []string{p, w("w2", 4, 8, 1, 1)}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	dumps := t.TempDir()
	var log bytes.Buffer
	opts := Options{NoGlobalConfig: true, Configs: []string{"../samples/custom_relu/custom_layer_example.xml"}, DumpKernels: dumps, Log: &log}
	compareFP16(t, m, opts)
	// The MaxPool after the custom layer converts its float input, or reads it as float
	// itself where its kernel can (X_FLOAT: CPUs' window kernel).
	if !regexp.MustCompile(`precision fp16: 4 of 4 layers store half; (3 conversions inserted \(around Conv, MaxPool\)|2 conversions inserted \(around Conv\))`).MatchString(log.String()) {
		t.Errorf("the log does not tell the conversions around the custom layer:\n%s", log.String())
	}
	files, err := filepath.Glob(filepath.Join(dumps, "ReLU_*.cl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dump of the custom program: %v", err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"#define INPUT0_TYPE float", "#define OUTPUT0_TYPE float"} {
			if !strings.Contains(string(text), d) {
				t.Errorf("%s: no %q: the custom kernel must see float tensors", f, d)
			}
		}
	}
}

// TestFP32IsUnchanged checks that naming fp32 is the default exactly: the same outputs
// bit for bit, the same memory, and no half storage or conversion in any program.
func TestFP32IsUnchanged(t *testing.T) {
	m := smallCNN(t)
	in := randomInputs(m, 3)
	nFP32, want := runPrecision(t, Options{NoGlobalConfig: true}, builtinkernels.PrecisionFP32, m, in)
	opts := Options{NoGlobalConfig: true}
	e := newTestEngine(t, opts)
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	got, err := n.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		for i, v := range w.Data {
			if math.Float32bits(got[name].Data[i]) != math.Float32bits(v) {
				t.Fatalf("output %q[%d]: %v with the zero Options, %v with fp32", name, i, got[name].Data[i], v)
			}
		}
	}
	if nFP32.PlannedBytes != n.PlannedBytes {
		t.Errorf("fp32 plans %d bytes of activations, the zero Options %d", nFP32.PlannedBytes, n.PlannedBytes)
	}
	for _, nn := range []*Network{n, nFP32} {
		if len(nn.half) != 0 || len(nn.halfLayers) != 0 {
			t.Errorf("fp32 stores half: %v %v", nn.half, nn.halfLayers)
		}
		for _, p := range nn.progs {
			if strings.Contains(p.source, "#define STORAGE_HALF 1") || strings.Contains(p.source, "clhost_half_to_float") {
				t.Errorf("an fp32 program stores half or converts:\n%.300s", p.source)
			}
		}
	}
}

// TestFP16MobileNetV2AndSqueezeNetShapes runs the two other CNNs of bench/models (at
// 64 × 64) in fp16 against fp32: on CPUs their fused blocks (inverted residuals, fire
// modules, a Conv with its MaxPool) store half.
func TestFP16MobileNetV2AndSqueezeNetShapes(t *testing.T) {
	if simulated() {
		t.Skip("whole networks under the simulator")
	}
	for _, c := range []struct {
		name  string
		model func(testing.TB, int, int) *model.Model
	}{{"MobileNetV2", mobilenetV2Model}, {"SqueezeNet 1.1", squeezenetModel}} {
		worst := compareFP16(t, c.model(t, 1, 64), Options{NoGlobalConfig: true})
		t.Logf("%s (64 × 64): fp16 relative error %.3g", c.name, worst)
	}
}

// TestFP16Check checks the small CNN at fp16: every layer against its reference on the
// device's half values (and the half-rounded weights its kernels read), the outputs
// against the whole network at FP16OutputTolerance; the half tensors' fill pattern
// reads back as unwritten, and an expectation off by 1 % still fails.
func TestFP16Check(t *testing.T) {
	m := smallCNN(t)
	in := randomInputs(m, 7)
	opts := Options{NoGlobalConfig: true, KeepIntermediates: true, Precision: builtinkernels.PrecisionFP16}
	e := newTestEngine(t, opts)
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if len(n.halfLayers) == 0 {
		t.Fatal("no layer stores half")
	}
	r, outs, err := n.Check(context.Background(), in, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.OutputTolerance != FP16OutputTolerance || !strings.Contains(b.String(), "every fp16 layer rounds its output to half") {
		t.Fatalf("fp16 check:\n%s", b.String())
	}
	checked := 0
	for _, l := range r.Layers {
		if len(l.Reference) > 0 {
			checked++
		}
	}
	if checked != len(r.Layers) {
		t.Errorf("%d of %d layers checked:\n%s", checked, len(r.Layers), b.String())
	}

	// The fill: a half tensor holds the half pattern, which widens to an unwritten value.
	if err := n.fillActivations(); err != nil {
		t.Fatal(err)
	}
	c := &checker{n: n, device: map[string]*builtinkernels.HostTensor{}}
	halves := 0
	for name, dt := range n.tensors {
		if !dt.half || dt.buf == nil || n.isConstant(name) || dt.ready < 0 {
			continue
		}
		v, err := c.read(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range v.Data {
			if !unwritten(f) {
				t.Fatalf("%s[%d] after the fill: %v (%#08x)", name, i, f, math.Float32bits(f))
			}
		}
		halves++
	}
	if halves == 0 {
		t.Fatal("no half activation")
	}

	// An expectation 1 % off the output fails.
	for name, o := range outs {
		off := &Tensor{Shape: o.Shape, Data: make([]float32, len(o.Data))}
		for i, v := range o.Data {
			off.Data[i] = v*1.01 + 0.01
		}
		r, _, err := n.Check(context.Background(), in, CheckOptions{Expect: map[string]*Tensor{name: off}})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Failed() {
			t.Errorf("an expectation of %s 1 %% off passed", name)
		}
	}
}
