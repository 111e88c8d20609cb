package host

// End-to-end tests of custom layers (docs/custom-layers.md: binding, reorders, dumps) on
// the OpenCL CPU device: each builds a model with the model Builder, compiles it with
// configurations from testdata/custom, runs it, and compares every output with a
// reference computed here in plain Go loops.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/tensorio"
)

// ctDir holds the test configurations and their kernels.
const ctDir = "testdata/custom"

// ctPath is the absolute path of a file under ctDir.
func ctPath(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(ctDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ctDevice is the test device (testDeviceSpec), looked up once: the tests run in
// parallel, and a first device lookup from several threads at once crashes inside the
// OpenCL loader.
var ctDevice = sync.OnceValues(func() (*cl.Device, error) {
	d, _, err := cl.Select(testDeviceSpec())
	return d, err
})

// ctParallel runs the test in parallel with the others on the default device. On a device
// named by CLHOST_TEST_DEVICE — oclgrind's simulator in `make check-kernels` — the tests
// run one at a time: the simulator gives wrong results when several contexts run at once.
func ctParallel(t *testing.T) {
	if os.Getenv("CLHOST_TEST_DEVICE") == "" {
		t.Parallel()
	}
}

// ctEngine opens an engine on the test device whose log goes to the returned buffer;
// the engine is closed when the test ends.
func ctEngine(t testing.TB, opts Options) (*Engine, *bytes.Buffer) {
	t.Helper()
	if opts.Device == "" && opts.device == nil {
		d, err := ctDevice()
		if err != nil {
			t.Fatal(err)
		}
		opts.device = d
	}
	log := &bytes.Buffer{}
	opts.Log = log
	e, err := NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, log
}

// ctCompile opens an engine and compiles m with it.
func ctCompile(t testing.TB, opts Options, m *model.Model) (*Network, *bytes.Buffer) {
	t.Helper()
	e, log := ctEngine(t, opts)
	n, err := e.Compile(m)
	if err != nil {
		t.Fatalf("Compile: %v\nlog:\n%s", err, log)
	}
	return n, log
}

// ctCompileError opens an engine, compiles m and returns the error Compile must give.
func ctCompileError(t testing.TB, opts Options, m *model.Model) error {
	t.Helper()
	e, _ := ctEngine(t, opts)
	n, err := e.Compile(m)
	if err == nil {
		n.Close()
		t.Fatal("Compile succeeded, want an error")
	}
	return err
}

func ctInfer(t testing.TB, n *Network, in map[string]*Tensor) map[string]*Tensor {
	t.Helper()
	out, err := n.Infer(context.Background(), in)
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	return out
}

func ctBuild(t testing.TB, b *model.Builder) *model.Model {
	t.Helper()
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ctRand is a seeded tensor of values in [-2, 2).
func ctRand(seed uint64, shape ...int) *Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x6375))
	d := make([]float32, elements(shape))
	for i := range d {
		d[i] = 4*rng.Float32() - 2
	}
	return &Tensor{Shape: shape, Data: d}
}

func ctRandSlice(seed uint64, n int, lo, hi float32) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0x7376))
	d := make([]float32, n)
	for i := range d {
		d[i] = lo + (hi-lo)*rng.Float32()
	}
	return d
}

// ctClose fails the test unless |got - want| ≤ tol·(1 + |want|) everywhere; it names the
// first elements that differ.
func ctClose(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	bad := 0
	var first []string
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= tol*(1+math.Abs(float64(want[i])))) {
			bad++
			if len(first) < 5 {
				first = append(first, fmt.Sprintf("[%d] %g, want %g", i, got[i], want[i]))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ by more than %g (relative to 1+|want|): %s", what, bad, len(got), tol, strings.Join(first, "; "))
	}
}

func ctShape(t testing.TB, what string, got, want []int) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: shape %v, want %v", what, got, want)
	}
}

func ctContains(t testing.TB, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}

// ctDumped reads the one file of dir whose name starts with typ+"_".
func ctDumped(t testing.TB, dir, typ string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, typ+"_*.cl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("dump of %s in %s: %v (%v)", typ, dir, files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ctKernels is the number of kernels each layer enqueued in the last inference
// (Options.Profile must be set).
func ctKernels(n *Network) map[string]int {
	k := map[string]int{}
	for _, p := range n.Profile() {
		k[p.Layer] = p.Kernels
	}
	return k
}

// bfyx is the flat index of (b, f, y, x) in a BFYX tensor of shape s.
func bfyx(s []int, b, f, y, x int) int { return ((b*s[1]+f)*s[2]+y)*s[3] + x }

// ctEach calls fn for every (b, f, y, x) of a 4-D shape.
func ctEach(s []int, fn func(b, f, y, x int)) {
	for b := 0; b < s[0]; b++ {
		for f := 0; f < s[1]; f++ {
			for y := 0; y < s[2]; y++ {
				for x := 0; x < s[3]; x++ {
					fn(b, f, y, x)
				}
			}
		}
	}
}

// ctConv is a plain convolution: square kernel, equal pads and strides, with bias.
func ctConv(in []float32, is []int, w []float32, ws []int, bias []float32, pad, stride int) ([]float32, []int) {
	osh := []int{is[0], ws[0], (is[2]+2*pad-ws[2])/stride + 1, (is[3]+2*pad-ws[3])/stride + 1}
	out := make([]float32, elements(osh))
	ctEach(osh, func(b, o, y, x int) {
		sum := float64(bias[o])
		for c := 0; c < is[1]; c++ {
			for ky := 0; ky < ws[2]; ky++ {
				for kx := 0; kx < ws[3]; kx++ {
					iy, ix := y*stride-pad+ky, x*stride-pad+kx
					if iy < 0 || ix < 0 || iy >= is[2] || ix >= is[3] {
						continue
					}
					sum += float64(in[bfyx(is, b, c, iy, ix)]) * float64(w[bfyx(ws, o, c, ky, kx)])
				}
			}
		}
		out[bfyx(osh, b, o, y, x)] = float32(sum)
	})
	return out, osh
}

// ctMaxPool is a plain max pool without padding.
func ctMaxPool(in []float32, is []int, k, stride int) ([]float32, []int) {
	osh := []int{is[0], is[1], (is[2]-k)/stride + 1, (is[3]-k)/stride + 1}
	out := make([]float32, elements(osh))
	ctEach(osh, func(b, f, y, x int) {
		m := float32(math.Inf(-1))
		for ky := 0; ky < k; ky++ {
			for kx := 0; kx < k; kx++ {
				m = max(m, in[bfyx(is, b, f, y*stride+ky, x*stride+kx)])
			}
		}
		out[bfyx(osh, b, f, y, x)] = m
	})
	return out, osh
}

func ctMap(in []float32, f func(float32) float32) []float32 {
	out := make([]float32, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// TestCustomFormatAny: a layer declaring format ANY takes the producer's layout (BFYX
// here): no reorder is inserted and the kernel's defines say BFYX.
func TestCustomFormatAny(t *testing.T) {
	ctParallel(t)
	b := model.NewBuilder("any")
	x := b.Input("x", model.Float32, 2, 3, 4, 5)
	a := b.Tensor("aff", model.Float32, 2, 3, 4, 5)
	b.LayerOutputs("AffineAny", "aff", []string{x}, []string{a}, model.FloatAttr("alpha", 1.5), model.FloatAttr("beta", -0.5))
	r := b.Layer("Relu", "r", []string{a})
	b.Output(a, r)
	dump := t.TempDir()
	n, log := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "any.xml")}, DumpKernels: dump, Profile: true}, ctBuild(t, b))
	in := ctRand(1, 2, 3, 4, 5)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})

	aff := ctMap(in.Data, func(v float32) float32 { return v*1.5 - 0.5 })
	ctClose(t, "aff", out["aff"].Data, aff, 1e-6)
	ctClose(t, "r", out["r"].Data, ctMap(aff, func(v float32) float32 { return max(v, 0) }), 1e-6)
	if k := ctKernels(n); k["aff"] != 1 {
		t.Errorf("layer aff enqueued %d kernels, want 1 (no reorder for ANY)", k["aff"])
	}
	if strings.Contains(log.String(), "reordered") {
		t.Errorf("a reorder was inserted for format ANY:\n%s", log)
	}
	ctContains(t, "the AffineAny program", ctDumped(t, dump, "AffineAny"),
		"#define INPUT0_FORMAT_BFYX\n", "#define OUTPUT0_FORMAT_BFYX\n", "#define alpha 1.5f\n", "#define beta -0.5f\n")
}

// TestCustomFormatBYXFReorders: a layer declaring BYXF gets its input reordered before
// its kernel, and its BYXF output reordered back to BFYX for the next layer. The kernels
// decode positions from the BYXF layout, so data left in BFYX would give wrong results.
func TestCustomFormatBYXFReorders(t *testing.T) {
	ctParallel(t)
	shape := []int{2, 3, 4, 5}
	b := model.NewBuilder("byxf")
	x := b.Input("x", model.Float32, shape...)
	s1 := b.Tensor("s1", model.Float32, shape...)
	b.LayerOutputs("ChanScaleBYXF", "s1", []string{x}, []string{s1})
	s2 := b.Tensor("s2", model.Float32, shape...)
	b.LayerOutputs("ChanScaleMixed", "s2", []string{s1}, []string{s2})
	sig := b.Layer("Sigmoid", "sig", []string{s2})
	b.Output(s1, sig)
	dump := t.TempDir()
	n, log := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "byxf.xml")}, DumpKernels: dump, Profile: true}, ctBuild(t, b))
	in := ctRand(2, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})

	scale := func(src []float32) []float32 {
		dst := make([]float32, len(src))
		ctEach(shape, func(b, f, y, x int) {
			i := bfyx(shape, b, f, y, x)
			dst[i] = src[i]*float32(f+1) + 0.25*float32(y)
		})
		return dst
	}
	wantS1 := scale(in.Data)
	wantSig := ctMap(scale(wantS1), func(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) })
	ctClose(t, "s1", out["s1"].Data, wantS1, 1e-6)
	ctClose(t, "sig", out["sig"].Data, wantSig, 1e-5)

	// s1: reorder in, kernel, reorder out; s2: reorder in, kernel (it writes BFYX).
	k := ctKernels(n)
	if k["s1"] != 3 || k["s2"] != 2 || k["sig"] != 1 {
		t.Errorf("kernels per layer %v, want s1:3 s2:2 sig:1", k)
	}
	ctContains(t, "the engine log", log.String(),
		`layer "s1": input 0 reordered BFYX→BYXF`, `layer "s1": output 0 reordered BYXF→BFYX`,
		`layer "s2": input 0 reordered BFYX→BYXF`)
	if strings.Contains(log.String(), `layer "s2": output`) {
		t.Errorf("s2 writes BFYX, yet its output was reordered:\n%s", log)
	}
	// The reordered copies are scratch of the layers' steps in the memory plan, counted in
	// its figures, not buffers of their own.
	for _, key := range []string{scratchKey("s1", 0, 0), scratchKey("s1", 1, 0), scratchKey("s2", 0, 0)} {
		if _, ok := n.slotBuf[key]; !ok {
			t.Errorf("%s is not in the memory plan", planLabel(key))
		}
	}
	if _, ok := n.slotBuf[scratchKey("s2", 1, 0)]; ok {
		t.Errorf("s2 has a second reorder buffer planned, for an output it writes in BFYX")
	}
	if strings.Contains(log.String(), "outside the memory plan") {
		t.Errorf("a reorder took a buffer of its own:\n%s", log)
	}
	if tensor := int64(4 * elements(shape)); n.SumBytes < 3*tensor+3*tensor {
		t.Errorf("SumBytes %d counts fewer than s1, s2, sig and the three reordered copies (%d bytes each)", n.SumBytes, tensor)
	}
	// BYXF pitches of 2×3×4×5: B = 4·5·3, F = 1, Y = 5·3, X = 3.
	ctContains(t, "the ChanScaleBYXF program", ctDumped(t, dump, "ChanScaleBYXF"),
		"#define INPUT0_FORMAT_BYXF\n", "#define INPUT0_PITCHES (int []){ 60,1,15,3, }\n", "#define OUTPUT0_FORMAT_BYXF\n")
	ctContains(t, "the ChanScaleMixed program", ctDumped(t, dump, "ChanScaleMixed"),
		"#define INPUT0_PITCHES (int []){ 60,1,15,3, }\n", "#define OUTPUT0_FORMAT_BFYX\n", "#define OUTPUT0_PITCHES (int []){ 60,20,5,1, }\n")
}

// TestCustomDataBlobs: Data name= binds a constant input of the layer by its exact name
// or by the last "."- or "/"-separated part of its name, whatever its input position.
func TestCustomDataBlobs(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 4, 3, 5}
	cfg := Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "data.xml")}}
	vals := map[string][]float32{}
	constant := func(b *model.Builder, name string, seed uint64) string {
		vals[name] = ctRandSlice(seed, shape[1], -1.5, 1.5)
		return b.ConstFloat32(name, []int{shape[1]}, vals[name])
	}
	b := model.NewBuilder("data")
	x := b.Input("x", model.Float32, shape...)
	// ss1: "block1.scale" matches scale by its last part, "shift" matches exactly.
	ss1 := b.Tensor("ss1", model.Float32, shape...)
	b.LayerOutputs("ScaleShift", "ss1", []string{x, constant(b, "block1.scale", 10), constant(b, "shift", 11)}, []string{ss1})
	// ss2: "/" separates too, and the inputs come in the other order.
	ss2 := b.Tensor("ss2", model.Float32, shape...)
	b.LayerOutputs("ScaleShift", "ss2", []string{ss1, constant(b, "block2/shift", 12), constant(b, "block2/scale", 13)}, []string{ss2})
	// ss3: an exact name wins over a name that matches by its last part.
	ss3 := b.Tensor("ss3", model.Float32, shape...)
	b.LayerOutputs("ScaleShift", "ss3", []string{ss2, constant(b, "decoy.scale", 14), constant(b, "scale", 15), constant(b, "block3.shift", 16)}, []string{ss3})
	b.Output(ss1, ss3)
	n, _ := ctCompile(t, cfg, ctBuild(t, b))
	in := ctRand(3, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})

	apply := func(src []float32, scale, shift string) []float32 {
		dst := make([]float32, len(src))
		ctEach(shape, func(b, f, y, x int) {
			i := bfyx(shape, b, f, y, x)
			dst[i] = src[i]*vals[scale][f] + vals[shift][f]
		})
		return dst
	}
	want1 := apply(in.Data, "block1.scale", "shift")
	want3 := apply(apply(want1, "block2/scale", "block2/shift"), "scale", "block3.shift")
	ctClose(t, "ss1", out["ss1"].Data, want1, 1e-5)
	ctClose(t, "ss3", out["ss3"].Data, want3, 1e-5)

	// Errors come at Compile, before any program is built.
	for _, c := range []struct {
		name   string
		consts []string
		want   []string
	}{
		{"ambiguous", []string{"a.scale", "b.scale", "c.shift"}, []string{`layer "bad"`, `Data "scale"`, "several constant inputs match (a.scale, b.scale)"}},
		{"missing", []string{"gain", "c.shift"}, []string{`layer "bad"`, `Data "scale"`, "no constant input of the layer has that name (constants: gain, c.shift)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := model.NewBuilder("bad")
			x := b.Input("x", model.Float32, shape...)
			ins := []string{x}
			for i, name := range c.consts {
				ins = append(ins, constant(b, name, uint64(20+i)))
			}
			y := b.Tensor("y", model.Float32, shape...)
			b.LayerOutputs("ScaleShift", "bad", ins, []string{y})
			b.Output(y)
			ctContains(t, "the error", ctCompileError(t, cfg, ctBuild(t, b)).Error(), c.want...)
		})
	}
}

// TestCustomArrayParams: float[] and int[] defines take their values from the layer's
// list attributes, as compound literals whose sizeof gives the length.
func TestCustomArrayParams(t *testing.T) {
	ctParallel(t)
	shape := []int{2, 3, 2, 4}
	weights := []float32{0.1, -1.25, 3.3}
	offsets := []int64{1, -2, 300}
	b := model.NewBuilder("arrays")
	x := b.Input("x", model.Float32, shape...)
	y := b.Tensor("y", model.Float32, shape...)
	b.LayerOutputs("ChannelAffine", "ca", []string{x}, []string{y},
		model.FloatsAttr("weights", weights...), model.IntsAttr("offsets", offsets...))
	b.Output(y)
	dump := t.TempDir()
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "arrays.xml")}, DumpKernels: dump}, ctBuild(t, b))
	in := ctRand(4, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})

	want := make([]float32, len(in.Data))
	ctEach(shape, func(b, f, yy, xx int) {
		i := bfyx(shape, b, f, yy, xx)
		want[i] = in.Data[i]*weights[f] + float32(offsets[f])
	})
	ctClose(t, "y", out["y"].Data, want, 1e-6)
	ctContains(t, "the ChannelAffine program", ctDumped(t, dump, "ChannelAffine"),
		"#define OFFS (int []){ 1,-2,300, }\n", "#define W (float []){ 0.1f,-1.25f,3.3f, }\n")
}

// TestCustomDimInput1: dim="input 1" evaluates the work sizes on input 1's B, F, Y, X
// (2·3·4·1 = 24 rows), not on the output's (120 elements).
func TestCustomDimInput1(t *testing.T) {
	ctParallel(t)
	shape, rows := []int{2, 3, 4, 5}, []int{2, 3, 4, 1}
	b := model.NewBuilder("dim")
	x := b.Input("x", model.Float32, shape...)
	bias := b.Input("bias", model.Float32, rows...)
	y := b.Tensor("y", model.Float32, shape...)
	b.LayerOutputs("RowBias", "rb", []string{x, bias}, []string{y})
	b.Output(y)
	dump := t.TempDir()
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "dim.xml")}, DumpKernels: dump}, ctBuild(t, b))
	// Checked before running: a work size taken from the output would write past the end.
	ctContains(t, "the RowBias program", ctDumped(t, dump, "RowBias"),
		"#define GLOBAL_WORKSIZE (size_t []){ 24, }\n", "#define INPUT1_DIMS (int []){ 2,3,4,1, }\n")
	in, bi := ctRand(5, shape...), ctRand(6, rows...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in, "bias": bi})

	want := make([]float32, len(in.Data))
	ctEach(shape, func(b, f, yy, xx int) {
		want[bfyx(shape, b, f, yy, xx)] = in.Data[bfyx(shape, b, f, yy, xx)] + bi.Data[bfyx(rows, b, f, yy, 0)]
	})
	ctClose(t, "y", out["y"].Data, want, 1e-6)
}

// TestCustomTwoOutputs: a layer with two outputs, bound to kernel arguments in an order
// unlike their ports; both feed a built-in layer and are graph outputs.
func TestCustomTwoOutputs(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 2, 3, 4}
	b := model.NewBuilder("two")
	x := b.Input("x", model.Float32, shape...)
	pos := b.Tensor("pos", model.Float32, shape...)
	neg := b.Tensor("neg", model.Float32, shape...)
	b.LayerOutputs("SplitSign", "split", []string{x}, []string{pos, neg})
	sum := b.Layer("Mul", "prod", []string{pos, neg})
	b.Output(pos, neg, sum)
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "two_outputs.xml")}}, ctBuild(t, b))
	in := ctRand(7, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})

	wantPos := ctMap(in.Data, func(v float32) float32 { return max(v, 0) })
	wantNeg := ctMap(in.Data, func(v float32) float32 { return min(v, 0) })
	ctClose(t, "pos", out["pos"].Data, wantPos, 0)
	ctClose(t, "neg", out["neg"].Data, wantNeg, 0)
	ctClose(t, "prod", out["prod"].Data, make([]float32, len(in.Data)), 0) // one of the two is 0
	if got, want := strings.Join(n.stepWaits(), " "), "split<- prod<-split"; got != want {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// TestCustomOverridesBuiltin: a configuration defining Relu replaces the built-in Relu
// for the run (a leaky ReLU with slope 0.25 instead of max(x, 0)), and the log says so.
func TestCustomOverridesBuiltin(t *testing.T) {
	ctParallel(t)
	b := model.NewBuilder("override")
	x := b.Input("x", model.Float32, 1, 2, 3, 4)
	r := b.Layer("Relu", "r", []string{x})
	b.Output(r)
	cfg := ctPath(t, "relu_override.xml")
	n, log := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{cfg}}, ctBuild(t, b))
	in := ctRand(8, 1, 2, 3, 4)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})
	ctClose(t, "r", out["r"].Data, ctMap(in.Data, func(v float32) float32 {
		if v < 0 {
			return v * 0.25
		}
		return v
	}), 1e-6)
	ctContains(t, "the engine log", log.String(), fmt.Sprintf("custom layer %q from %s replaces the built-in layer type for this run", "Relu", cfg))
	if got := strings.Join(n.CustomLayers(), ","); got != "r (Relu)" {
		t.Errorf("custom layers %q, want %q", got, "r (Relu)")
	}
}

// TestCustomMissingParameter: a define whose parameter the layer lacks, without a
// default, fails Compile with an error naming the layer instance and the parameter.
func TestCustomMissingParameter(t *testing.T) {
	ctParallel(t)
	b := model.NewBuilder("missing")
	x := b.Input("x", model.Float32, 1, 2, 3, 4)
	y := b.Tensor("y", model.Float32, 1, 2, 3, 4)
	b.LayerOutputs("NeedsAlpha", "act7", []string{x}, []string{y}, model.FloatAttr("beta", 2))
	b.Output(y)
	err := ctCompileError(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "missing_param.xml")}}, ctBuild(t, b))
	ctContains(t, "the error", err.Error(), `layer "act7"`, `"NeedsAlpha"`, `Define "alpha" (`+ctPath(t, "missing_param.xml")+`:5): the layer has no parameter "alpha" and the define has no default; the layer's parameters: beta (float)`)
}

// TestCustomKernelChecksAtCompile: an argument count unlike the declared buffers, and an
// entry missing from the program, are Compile errors, not enqueue failures.
func TestCustomKernelChecksAtCompile(t *testing.T) {
	ctParallel(t)
	cfg := Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "bad_kernels.xml")}}
	one := func(typ, name string) *model.Model {
		b := model.NewBuilder(typ)
		x := b.Input("x", model.Float32, 1, 2, 3, 4)
		y := b.Tensor("y", model.Float32, 1, 2, 3, 4)
		b.LayerOutputs(typ, name, []string{x}, []string{y})
		b.Output(y)
		return ctBuild(t, b)
	}
	t.Run("argument count", func(t *testing.T) {
		err := ctCompileError(t, cfg, one("ArgCount", "ac1"))
		ctContains(t, "the error", err.Error(), `layer "ac1"`, `kernel "three_args" takes 3 arguments, but the config declares 2 buffers`)
	})
	t.Run("entry", func(t *testing.T) {
		err := ctCompileError(t, cfg, one("NoEntry", "ne1"))
		ctContains(t, "the error", err.Error(), `layer "ne1"`, `kernel entry "not_there" is not in the built program (its kernels: three_args)`)
	})
}

// TestCustomCompileErrorNamesFile: a build failure shows the compiler's message with the
// user's .cl file and line (the JIT's #line directive), and the layer.
func TestCustomCompileErrorNamesFile(t *testing.T) {
	ctParallel(t)
	b := model.NewBuilder("broken")
	x := b.Input("x", model.Float32, 1, 2, 3, 4)
	y := b.Tensor("y", model.Float32, 1, 2, 3, 4)
	b.LayerOutputs("Broken", "bk", []string{x}, []string{y})
	b.Output(y)
	err := ctCompileError(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "bad_kernels.xml")}}, ctBuild(t, b))
	ctContains(t, "the error", err.Error(), `layer "bk" (Broken, custom layer from `+ctPath(t, "bad_kernels.xml")+":24)", ctPath(t, "broken.cl")+":6:", "undeclared_scale")
}

// ctPipeline is x (1×3×8×8) → Conv 4×3×3×3 pad 1 → AffineAny → AffineAny (the same
// parameters, so one program) → MaxPool 2×2, and its reference values per tensor.
func ctPipeline(t testing.TB) (*model.Model, *Tensor, map[string]*Tensor) {
	xs, ws := []int{1, 3, 8, 8}, []int{4, 3, 3, 3}
	w := ctRandSlice(30, elements(ws), -0.5, 0.5)
	bias := ctRandSlice(31, ws[0], -0.2, 0.2)
	b := model.NewBuilder("pipeline")
	x := b.Input("x", model.Float32, xs...)
	c := b.Layer("Conv", "conv1", []string{x, b.ConstFloat32("conv1.weight", ws, w), b.ConstFloat32("conv1.bias", ws[:1], bias)},
		model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	a1 := b.Tensor("aff1", model.Float32, 1, 4, 8, 8)
	b.LayerOutputs("AffineAny", "aff1", []string{c}, []string{a1}, model.FloatAttr("alpha", 0.5), model.FloatAttr("beta", 0.25))
	a2 := b.Tensor("aff2", model.Float32, 1, 4, 8, 8)
	b.LayerOutputs("AffineAny", "aff2", []string{a1}, []string{a2}, model.FloatAttr("alpha", 0.5), model.FloatAttr("beta", 0.25))
	p := b.Layer("MaxPool", "pool1", []string{a2}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(p)
	m := ctBuild(t, b)

	in := ctRand(32, xs...)
	ref := map[string]*Tensor{"x": in}
	conv, cs := ctConv(in.Data, xs, w, ws, bias, 1, 1)
	ref["conv1"] = &Tensor{Shape: cs, Data: conv}
	aff := func(v float32) float32 { return v*0.5 + 0.25 }
	ref["aff1"] = &Tensor{Shape: cs, Data: ctMap(conv, aff)}
	ref["aff2"] = &Tensor{Shape: cs, Data: ctMap(ref["aff1"].Data, aff)}
	pool, ps := ctMaxPool(ref["aff2"].Data, cs, 2, 2)
	ref["pool1"] = &Tensor{Shape: ps, Data: pool}
	return m, in, ref
}

type ctFile struct {
	text  string
	mtime time.Time
}

func ctSnapshot(t testing.TB, dir string) map[string]ctFile {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]ctFile{}
	for _, en := range entries {
		info, err := en.Info()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		snap[en.Name()] = ctFile{string(b), info.ModTime()}
	}
	return snap
}

// ctSnapshotDiff describes how two folder snapshots differ, or is "".
func ctSnapshotDiff(a, b map[string]ctFile) string {
	var d []string
	for name, fa := range a {
		fb, ok := b[name]
		switch {
		case !ok:
			d = append(d, name+" disappeared")
		case fa.text != fb.text:
			d = append(d, name+" has new content")
		case !fa.mtime.Equal(fb.mtime):
			d = append(d, fmt.Sprintf("%s was rewritten (mtime %v → %v)", name, fa.mtime, fb.mtime))
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			d = append(d, name+" is new")
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

var ctBuildOptions = regexp.MustCompile(`(?m)^ \* build options: (".*")$`)

// TestKernelDump: one file per distinct program (built-in and custom) named
// <type>_<hash>.cl, holding exactly the compiled text and a trailer; compiling again into
// the same folder writes nothing; every file compiles on its own with its recorded
// build options.
func TestKernelDump(t *testing.T) {
	ctParallel(t)
	m, in, ref := ctPipeline(t)
	dir := t.TempDir()
	cfgPath := ctPath(t, "any.xml")
	opts := Options{NoGlobalConfig: true, Configs: []string{cfgPath}, DumpKernels: dir}
	e, log := ctEngine(t, opts)
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	out := ctInfer(t, n, map[string]*Tensor{"x": in})
	ctClose(t, "pool1", out["pool1"].Data, ref["pool1"].Data, 1e-5)

	first := ctSnapshot(t, dir)
	var names []string
	for name := range first {
		names = append(names, name)
	}
	sort.Strings(names)
	pattern := regexp.MustCompile(`^(AffineAny|Conv|MaxPool)_[0-9a-f]{6}\.cl$`)
	if len(names) != 3 || !pattern.MatchString(names[0]) || !pattern.MatchString(names[1]) || !pattern.MatchString(names[2]) {
		t.Fatalf("dumped files %v, want one AffineAny (shared by aff1 and aff2), one Conv and one MaxPool", names)
	}
	if got := strings.Count(log.String(), "kernel dump: wrote"); got != 3 {
		t.Errorf("log reports %d written files, want 3:\n%s", got, log)
	}

	// The custom program is exactly the JIT text for these shapes and parameters.
	layers, err := customlayer.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	shape := []int{1, 4, 8, 8}
	prog, err := jit.Generate(layers[0], jit.Instance{Name: "aff1", Params: layerParams{&m.Layers[1]},
		Inputs: []jit.Tensor{{Shape: shape, Format: customlayer.ANY}}, Outputs: []jit.Tensor{{Shape: shape, Format: customlayer.ANY}}})
	if err != nil {
		t.Fatal(err)
	}
	aff := ctDumped(t, dir, "AffineAny")
	if !strings.HasPrefix(aff, prog.Source+"\n/* clhost kernel dump\n") {
		t.Errorf("the AffineAny dump is not the JIT text followed by the trailer:\n%s", aff)
	}
	ctContains(t, "the AffineAny dump", aff,
		"#line 1 \""+ctPath(t, "affine_any.cl")+"\"\n", " *   aff1 (AffineAny): ", " *   aff2 (AffineAny): ", "global [256]",
		fmt.Sprintf(" * build options: %q\n", strings.TrimSpace(os.Getenv("CLHOST_BUILD_OPTIONS"))), " * build log:\n")

	// Compiling again, with the same engine and with a new one, writes nothing.
	for i, eng := range []*Engine{e, func() *Engine { e2, _ := ctEngine(t, opts); return e2 }()} {
		before := log.Len()
		if _, err := eng.Compile(m); err != nil {
			t.Fatal(err)
		}
		if diff := ctSnapshotDiff(first, ctSnapshot(t, dir)); diff != "" {
			t.Errorf("compile #%d changed the dump folder: %s", i+2, diff)
		}
		if strings.Contains(log.String()[before:], "wrote") {
			t.Errorf("compile #%d logged a write:\n%s", i+2, log.String()[before:])
		}
	}

	// Every file compiles on its own, with the options its trailer records.
	ctx, err := cl.NewContext(e.device)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	for _, name := range names {
		text := first[name].text
		mm := ctBuildOptions.FindStringSubmatch(text)
		if mm == nil {
			t.Errorf("%s: no build options line in the trailer", name)
			continue
		}
		options, err := strconv.Unquote(mm[1])
		if err != nil {
			t.Errorf("%s: build options %s: %v", name, mm[1], err)
			continue
		}
		p, err := ctx.BuildProgram(text, options)
		if err != nil {
			t.Errorf("%s does not compile on its own: %v", name, err)
			continue
		}
		kernels, err := p.KernelNames()
		if err != nil || len(kernels) == 0 {
			t.Errorf("%s: kernels %v, %v", name, kernels, err)
		}
		p.Release()
	}
}

// TestDumpTensors: DumpTensors writes every activation of an inference (input,
// intermediates, output; no constants) as <tensor>.npy.
func TestDumpTensors(t *testing.T) {
	ctParallel(t)
	m, in, ref := ctPipeline(t)
	dir := t.TempDir()
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "any.xml")}, DumpTensors: dir}, m)
	ctInfer(t, n, map[string]*Tensor{"x": in})
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, en := range entries {
		files = append(files, en.Name())
	}
	if got, want := strings.Join(files, " "), "aff1.npy aff2.npy conv1.npy pool1.npy x.npy"; got != want {
		t.Fatalf("dumped %q, want %q", got, want)
	}
	for name, want := range ref {
		a, err := tensorio.ReadFile(filepath.Join(dir, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		ctShape(t, name, a.Shape, want.Shape)
		ctClose(t, name, a.Data, want.Data, 1e-5)
	}
}

// TestCustomConfigFS: configurations and kernels from an fs.FS (Options.ConfigFS), as a
// program embedding them would pass; compiler messages name the path inside the FS.
func TestCustomConfigFS(t *testing.T) {
	ctParallel(t)
	fsys := fstest.MapFS{
		"cfg/layers.xml": {Data: []byte(`<CustomLayers>
  <CustomLayer name="Negate" type="SimpleGPU" version="1">
    <Kernel entry="negate">
      <Source filename="kernels/negate.cl"/>
      <Define name="GAIN" type="float" param="gain" default="1"/>
    </Kernel>
    <Buffers>
      <Tensor arg-index="0" type="input" port-index="0"/>
      <Tensor arg-index="1" type="output" port-index="0"/>
    </Buffers>
  </CustomLayer>
  <CustomLayer name="BrokenFS" type="SimpleGPU" version="1">
    <Kernel entry="broken_fs">
      <Source filename="kernels/broken.cl"/>
    </Kernel>
    <Buffers>
      <Tensor arg-index="0" type="input" port-index="0"/>
      <Tensor arg-index="1" type="output" port-index="0"/>
    </Buffers>
  </CustomLayer>
</CustomLayers>
`)},
		"cfg/kernels/negate.cl": {Data: []byte("__kernel void negate(const __global float* in, __global float* out)\n{\n    out[get_global_id(0)] = -GAIN * in[get_global_id(0)];\n}\n")},
		"cfg/kernels/broken.cl": {Data: []byte("__kernel void broken_fs(const __global float* in, __global float* out)\n{\n    out[0] = nothing_here;\n}\n")},
	}
	opts := Options{NoGlobalConfig: true, ConfigFS: []ConfigFile{{FS: fsys, Path: "cfg/layers.xml"}}}
	one := func(typ string) *model.Model {
		b := model.NewBuilder(typ)
		x := b.Input("x", model.Float32, 1, 3, 2, 2)
		y := b.Tensor("y", model.Float32, 1, 3, 2, 2)
		b.LayerOutputs(typ, "l1", []string{x}, []string{y}, model.FloatAttr("gain", 3))
		b.Output(y)
		return ctBuild(t, b)
	}
	n, _ := ctCompile(t, opts, one("Negate"))
	in := ctRand(40, 1, 3, 2, 2)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})
	ctClose(t, "y", out["y"].Data, ctMap(in.Data, func(v float32) float32 { return -3 * v }), 1e-6)

	err := ctCompileError(t, opts, one("BrokenFS"))
	ctContains(t, "the error", err.Error(), `layer "l1" (BrokenFS, custom layer from cfg/layers.xml:12)`, "cfg/kernels/broken.cl:3:", "nothing_here")
}

// TestSeedReluExample runs the OpenVINO documentation example of samples/custom_relu
// (example_relu_kernel, neg_slope from negative_slope) unchanged.
func TestSeedReluExample(t *testing.T) {
	ctParallel(t)
	shape := []int{2, 3, 5, 7}
	b := model.NewBuilder("relu")
	x := b.Input("x", model.Float32, shape...)
	y := b.Tensor("y", model.Float32, shape...)
	b.LayerOutputs("ReLU", "relu1", []string{x}, []string{y}, model.FloatAttr("negative_slope", 0.1))
	b.Output(y)
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{"../samples/custom_relu/custom_layer_example.xml"}}, ctBuild(t, b))
	in := ctRand(50, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})
	ctClose(t, "y", out["y"].Data, ctMap(in.Data, func(v float32) float32 {
		if v < 0 {
			return v * 0.1
		}
		return v
	}), 1e-6)
}

// TestCustomFormatKeptBetweenCustomLayers: when every reader of a custom layer's BYXF
// output takes BYXF, the output stays in BYXF (no reorder back to BFYX and forth again).
func TestCustomFormatKeptBetweenCustomLayers(t *testing.T) {
	ctParallel(t)
	shape := []int{2, 3, 4, 5}
	b := model.NewBuilder("byxf-chain")
	x := b.Input("x", model.Float32, shape...)
	s1 := b.Tensor("s1", model.Float32, shape...)
	b.LayerOutputs("ChanScaleBYXF", "s1", []string{x}, []string{s1})
	s2 := b.Tensor("s2", model.Float32, shape...)
	b.LayerOutputs("ChanScaleMixed", "s2", []string{s1}, []string{s2})
	sig := b.Layer("Sigmoid", "sig", []string{s2})
	b.Output(sig)
	n, log := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "byxf.xml")}, Profile: true}, ctBuild(t, b))
	in := ctRand(2, shape...)
	out := ctInfer(t, n, map[string]*Tensor{"x": in})
	scale := func(src []float32) []float32 {
		dst := make([]float32, len(src))
		ctEach(shape, func(b, f, y, x int) {
			i := bfyx(shape, b, f, y, x)
			dst[i] = src[i]*float32(f+1) + 0.25*float32(y)
		})
		return dst
	}
	want := ctMap(scale(scale(in.Data)), func(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) })
	ctClose(t, "sig", out["sig"].Data, want, 1e-5)
	// s1: reorder in, kernel (its output stays BYXF); s2: kernel only.
	if k := ctKernels(n); k["s1"] != 2 || k["s2"] != 1 {
		t.Errorf("kernels per layer %v, want s1:2 s2:1", k)
	}
	ctContains(t, "the engine log", log.String(), `layer "s1": output 0 kept in BYXF for its readers`)
}
