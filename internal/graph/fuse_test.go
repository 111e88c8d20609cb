package graph_test

// Fuse is checked twice over: the rewritten structure against what the rules say, and
// the numbers, the fused model against the unfused one, through the built-in layers' CPU
// references (which implement the fused attributes) and through an Engine on the OpenCL
// device.

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// modelBuilder wraps model.Builder with seeded random weights.
type modelBuilder struct {
	*model.Builder
	rng *rand.Rand
}

func newModel(name string) *modelBuilder {
	return &modelBuilder{Builder: model.NewBuilder(name), rng: rand.New(rand.NewPCG(7, uint64(len(name))))}
}

// weights declares a float32 constant of uniform values in [-scale, scale].
func (b *modelBuilder) weights(name string, scale float64, shape ...int) string {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(scale * (2*b.rng.Float64() - 1))
	}
	return b.ConstFloat32(name, shape, v)
}

func (b *modelBuilder) build(t *testing.T) *model.Model {
	t.Helper()
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	return m
}

var pads1 = model.IntsAttr("pads", 1, 1, 1, 1)

// resnetModel has a basic block (conv, relu, conv without bias, + input, relu), a
// downsampling block whose Add names the shortcut first and whose shortcut conv runs
// before the main branch's last conv, and a classifier Gemm → Relu.
func resnetModel(t *testing.T) *model.Model {
	b := newModel("resnet")
	x := b.Input("x", model.Float32, 2, 4, 8, 8)
	c1 := b.Layer("Conv", "c1", []string{x, b.weights("w1", 0.3, 4, 4, 3, 3), b.weights("b1", 0.1, 4)}, pads1)
	r1 := b.Layer("Relu", "r1", []string{c1})
	c2 := b.Layer("Conv", "c2", []string{r1, b.weights("w2", 0.3, 4, 4, 3, 3)}, pads1)
	a1 := b.Layer("Add", "a1", []string{c2, x})
	r2 := b.Layer("Relu", "r2", []string{a1})
	c3 := b.Layer("Conv", "c3", []string{r2, b.weights("w3", 0.3, 8, 4, 3, 3), b.weights("b3", 0.1, 8)}, pads1, model.IntsAttr("strides", 2, 2))
	r3 := b.Layer("LeakyRelu", "r3", []string{c3}, model.FloatAttr("alpha", 0.2))
	c4 := b.Layer("Conv", "c4", []string{r3, b.weights("w4", 0.3, 8, 8, 3, 3), b.weights("b4", 0.1, 8)}, pads1)
	ds := b.Layer("Conv", "ds", []string{r2, b.weights("wd", 0.3, 8, 4, 1, 1), b.weights("bd", 0.1, 8)}, model.IntsAttr("strides", 2, 2))
	a2 := b.Layer("Add", "a2", []string{ds, c4})
	r4 := b.Layer("Relu", "r4", []string{a2})
	gp := b.Layer("GlobalAveragePool", "gp", []string{r4})
	fl := b.Layer("Flatten", "fl", []string{gp})
	fc := b.Layer("Gemm", "fc", []string{fl, b.weights("wf", 0.5, 8, 5), b.weights("bf", 0.1, 5)})
	y := b.LayerOutputs("Relu", "fc_relu", []string{fc}, []string{"y"})
	b.Output(y...)
	return b.build(t)
}

// mobileModel has MobileNetV2-style expand (Clip 0..6), depthwise (Clip 0..6) and
// projection convs with the input added back (that Add's output a graph output), then
// Sigmoid and HardSwish after convs.
func mobileModel(t *testing.T) *model.Model {
	b := newModel("mobile")
	x := b.Input("x", model.Float32, 1, 6, 9, 9)
	relu6 := []model.Attr{model.FloatAttr("min", 0), model.FloatAttr("max", 6)}
	e := b.Layer("Conv", "e", []string{x, b.weights("we", 1, 12, 6, 1, 1), b.weights("be", 0.5, 12)})
	e6 := b.Layer("Clip", "e6", []string{e}, relu6...)
	d := b.Layer("Conv", "d", []string{e6, b.weights("wd", 1, 12, 1, 3, 3), b.weights("bd", 0.5, 12)}, pads1, model.IntAttr("group", 12))
	d6 := b.Layer("Clip", "d6", []string{d}, relu6...)
	p := b.Layer("Conv", "p", []string{d6, b.weights("wp", 0.3, 6, 12, 1, 1), b.weights("bp", 0.1, 6)})
	a := b.LayerOutputs("Add", "a", []string{x, p}, []string{"y1"})[0]
	s := b.Layer("Conv", "s", []string{a, b.weights("ws", 0.5, 6, 6, 3, 3)}, pads1)
	sg := b.Layer("Sigmoid", "sg", []string{s})
	h := b.Layer("Conv", "h", []string{sg, b.weights("wh", 2, 3, 6, 1, 1), b.weights("bh", 1, 3)})
	y2 := b.LayerOutputs("HardSwish", "hs", []string{h}, []string{"y2"})
	b.Output(a)
	b.Output(y2...)
	return b.build(t)
}

// mobileStemModel is MobileNetV2's start: a 3×3 stride-2 stem Conv of 3 channels with a
// Clip, the first block's depthwise Conv with a Clip and its projection, at batch 2.
func mobileStemModel(t *testing.T) *model.Model {
	b := newModel("mobile stem")
	x := b.Input("x", model.Float32, 2, 3, 17, 16)
	relu6 := []model.Attr{model.FloatAttr("min", 0), model.FloatAttr("max", 6)}
	s := b.Layer("Conv", "s", []string{x, b.weights("ws", 1, 8, 3, 3, 3), b.weights("bs", 0.5, 8)}, pads1, model.IntsAttr("strides", 2, 2))
	s6 := b.Layer("Clip", "s6", []string{s}, relu6...)
	d := b.Layer("Conv", "d", []string{s6, b.weights("wd", 1, 8, 1, 3, 3), b.weights("bd", 0.5, 8)}, pads1, model.IntAttr("group", 8))
	d6 := b.Layer("Clip", "d6", []string{d}, relu6...)
	b.Output(b.Layer("Conv", "p", []string{d6, b.weights("wp", 0.3, 4, 8, 1, 1), b.weights("bp", 0.1, 4)}))
	return b.build(t)
}

// headModel is a classifier head: a 1×1 Conv to 260 channels with a residual and a
// Relu, then GlobalAveragePool and Flatten; and beside it a Conv → GlobalAveragePool →
// Relu, whose Relu acts on the means and must stay a layer of its own.
func headModel(t *testing.T) *model.Model {
	b := newModel("head")
	x := b.Input("x", model.Float32, 2, 8, 5, 7)
	r := b.Input("r", model.Float32, 2, 260, 5, 7)
	c := b.Layer("Conv", "c", []string{x, b.weights("wc", 0.5, 260, 8, 1, 1), b.weights("bc", 0.2, 260)})
	a := b.Layer("Add", "a", []string{c, r})
	cr := b.Layer("Relu", "cr", []string{a})
	gp := b.Layer("GlobalAveragePool", "gp", []string{cr})
	y := b.Layer("Flatten", "fl", []string{gp})
	d := b.Layer("Conv", "d", []string{x, b.weights("wd", 0.5, 256, 8, 1, 1)})
	dp := b.Layer("GlobalAveragePool", "dp", []string{d})
	b.Output(y, b.Layer("Relu", "dr", []string{dp}))
	return b.build(t)
}

// stemModel has a stem (3 × 3 Conv at stride 2, Relu, 3 × 3 MaxPool at stride 2 with
// ceil_mode, a 1×1 Conv after it), a padded Conv whose 2 × 2 MaxPool is an output, and a
// 7 × 7 stem of too many products per output, whose MaxPool stays a layer.
func stemModel(t *testing.T) *model.Model {
	b := newModel("stem")
	x := b.Input("x", model.Float32, 2, 3, 17, 21)
	c := b.Layer("Conv", "c", []string{x, b.weights("wc", 0.5, 8, 3, 3, 3), b.weights("bc", 0.2, 8)}, model.IntsAttr("strides", 2, 2))
	cr := b.Layer("Relu", "cr", []string{c})
	cp := b.Layer("MaxPool", "cp", []string{cr}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2), model.IntAttr("ceil_mode", 1))
	d := b.Layer("Conv", "d", []string{cp, b.weights("wd", 0.5, 4, 8, 1, 1)})
	e := b.Layer("Conv", "e", []string{x, b.weights("we", 0.5, 5, 3, 3, 3)}, pads1)
	ep := b.Layer("MaxPool", "ep", []string{e}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	f := b.Layer("Conv", "f", []string{x, b.weights("wf", 0.5, 4, 3, 7, 7)}, model.IntsAttr("strides", 2, 2), model.IntsAttr("pads", 3, 3, 3, 3))
	fp := b.Layer("MaxPool", "fp", []string{f}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2), pads1)
	b.Output(d, ep, fp)
	return b.build(t)
}

// fireModel has two SqueezeNet fire modules at batch 2: a squeeze, a 1×1 and a 3×3
// expansion joined by a channel Concat, then a ceil-mode 3 × 3 MaxPool; the second
// module's 3×3 expansion reads 34 channels (a Winograd layer), so its 2 × 2 pool stays
// after its Concat.
func fireModel(t *testing.T) *model.Model {
	b := newModel("fire")
	x := b.Input("x", model.Float32, 2, 6, 11, 11)
	relu := func(name string, in string) string { return b.Layer("Relu", name, []string{in}) }
	s := relu("sr", b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 6, 1, 1), b.weights("bs", 0.2, 4)}))
	e1 := relu("e1r", b.Layer("Conv", "e1", []string{s, b.weights("we1", 0.5, 5, 4, 1, 1), b.weights("be1", 0.2, 5)}))
	e3 := relu("e3r", b.Layer("Conv", "e3", []string{s, b.weights("we3", 0.5, 6, 4, 3, 3), b.weights("be3", 0.2, 6)}, pads1))
	cat := b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
	p := b.Layer("MaxPool", "p", []string{cat}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2), model.IntAttr("ceil_mode", 1))
	q := relu("qr", b.Layer("Conv", "q", []string{p, b.weights("wq", 0.5, 34, 11, 1, 1)}))
	a := b.Layer("Conv", "a", []string{q, b.weights("wa", 0.2, 3, 34, 3, 3)}, pads1)
	c := b.Layer("Conv", "c", []string{q, b.weights("wc", 0.2, 2, 34, 1, 1)})
	cat2 := b.Layer("Concat", "cat2", []string{a, c}, model.IntAttr("axis", -3))
	b.Output(b.Layer("MaxPool", "p2", []string{cat2}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2)))
	return b.build(t)
}

// noFuseModel is built of patterns Fuse must leave alone, but for c8 (Relu folds, the
// Add after it cannot: an activation comes after the residual).
func noFuseModel(t *testing.T) *model.Model {
	b := newModel("nofuse")
	x := b.Input("x", model.Float32, 1, 3, 6, 6)
	w := func(name string) string { return b.weights(name, 0.5, 3, 3, 1, 1) }
	// c1 has two readers.
	c1 := b.Layer("Conv", "c1", []string{x, w("w1")})
	r1 := b.Layer("Relu", "r1", []string{c1})
	s1 := b.Layer("Add", "s1", []string{c1, r1})
	// c2 is a graph output.
	c2 := b.Layer("Conv", "c2", []string{x, w("w2")})
	r2 := b.Layer("Relu", "r2", []string{c2})
	// c3's Add broadcasts a per-channel constant.
	c3 := b.Layer("Conv", "c3", []string{x, w("w3")})
	s3 := b.Layer("Add", "s3", []string{c3, b.weights("k3", 1, 1, 3, 1, 1)})
	// c4 is added to itself.
	c4 := b.Layer("Conv", "c4", []string{x, w("w4")})
	s4 := b.Layer("Add", "s4", []string{c4, c4})
	// Tanh is not among the fused activations.
	c5 := b.Layer("Conv", "c5", []string{x, w("w5")})
	t5 := b.Layer("Tanh", "t5", []string{c5})
	// c8: Relu, then an Add that would have to come before it.
	c8 := b.Layer("Conv", "c8", []string{x, w("w8")})
	r8 := b.Layer("Relu", "r8", []string{c8})
	s8 := b.Layer("Add", "s8", []string{r8, x})
	// c9's Add operand comes from a branch that runs after c9.
	c9 := b.Layer("Conv", "c9", []string{x, w("w9")})
	g1 := b.Layer("Sigmoid", "g1", []string{x})
	g2 := b.Layer("Sigmoid", "g2", []string{g1})
	s9 := b.Layer("Add", "s9", []string{c9, g2})
	b.Output(s1, c2, r2, s3, s4, t5, s8, s9)
	return b.build(t)
}

func layerNamed(t *testing.T, m *model.Model, name string) *model.Layer {
	t.Helper()
	for i := range m.Layers {
		if m.Layers[i].Name == name {
			return &m.Layers[i]
		}
	}
	t.Fatalf("no layer %q; layers: %v", name, layerNames(m))
	return nil
}

func layerNames(m *model.Model) []string {
	var out []string
	for _, l := range m.Layers {
		out = append(out, l.Name)
	}
	return out
}

func tensorNames(m *model.Model) []string {
	var out []string
	for _, t := range m.Tensors {
		out = append(out, t.Name)
	}
	return out
}

// checkLayer compares a layer's inputs, outputs and fused attributes.
func checkLayer(t *testing.T, m *model.Model, name string, inputs, outputs []string, act string, params map[string]float32) {
	t.Helper()
	l := layerNamed(t, m, name)
	if !slices.Equal(l.Inputs, inputs) || !slices.Equal(l.Outputs, outputs) {
		t.Errorf("%s: inputs %q outputs %q, want %q %q", name, l.Inputs, l.Outputs, inputs, outputs)
	}
	if got := l.String(opspec.FusedActivationAttr, ""); got != act {
		t.Errorf("%s: %s %q, want %q", name, opspec.FusedActivationAttr, got, act)
	}
	for k, v := range params {
		if a := l.Attr(k); a == nil || a.Kind != model.AttrFloat || a.Float != v {
			t.Errorf("%s: attribute %s is %+v, want float %v", name, k, a, v)
		}
	}
}

// checkListOrder checks that every layer of m.Layers reads only graph inputs, constants
// and outputs of layers listed before it.
func checkListOrder(t *testing.T, m *model.Model) {
	t.Helper()
	have := map[string]bool{}
	for _, in := range m.Inputs {
		have[in] = true
	}
	for _, tn := range m.Tensors {
		if tn.IsConst() {
			have[tn.Name] = true
		}
	}
	for _, l := range m.Layers {
		for _, in := range l.Inputs {
			if in != "" && !have[in] {
				t.Errorf("layer %q reads %q before any layer listed earlier writes it; order %v", l.Name, in, layerNames(m))
			}
		}
		for _, o := range l.Outputs {
			have[o] = true
		}
	}
}

func TestFuseResNetBlocks(t *testing.T) {
	m := resnetModel(t)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 4, ConvResidual: 2, GemmActivation: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	if stats.Layers() != 7 || !strings.Contains(stats.String(), "2 Conv+Add") {
		t.Errorf("Layers() %d, String() %q", stats.Layers(), stats)
	}
	checkLayer(t, m, "c1", []string{"x", "w1", "b1"}, []string{"r1"}, "Relu", nil)
	checkLayer(t, m, "c2", []string{"r1", "w2", "", "x"}, []string{"r2"}, "Relu", nil)
	checkLayer(t, m, "c3", []string{"r2", "w3", "b3"}, []string{"r3"}, "LeakyRelu", map[string]float32{opspec.FusedAlphaAttr: 0.2})
	// The shortcut conv ds runs before c4, so c4 absorbs the Add with ds as residual.
	checkLayer(t, m, "c4", []string{"r3", "w4", "b4", "ds"}, []string{"r4"}, "Relu", nil)
	checkLayer(t, m, "ds", []string{"r2", "wd", "bd"}, []string{"ds"}, "", nil)
	checkLayer(t, m, "fc", []string{"fl", "wf", "bf"}, []string{"y"}, "Relu", nil)
	if got, want := layerNames(m), []string{"c1", "c2", "c3", "ds", "c4", "gp", "fl", "fc"}; !slices.Equal(got, want) {
		t.Errorf("layers %v, want %v", got, want)
	}
	for _, dead := range []string{"c1", "c2", "a1", "c3", "c4", "a2", "fc"} {
		if m.Tensor(dead) != nil {
			t.Errorf("tensor %q of a removed layer is still declared", dead)
		}
	}
	for _, live := range []string{"x", "r1", "r2", "r3", "ds", "r4", "gp", "fl", "y", "w1", "b4"} {
		if m.Tensor(live) == nil {
			t.Errorf("tensor %q is gone; tensors %v", live, tensorNames(m))
		}
	}
	checkListOrder(t, m)
	if err := model.Validate(m); err != nil {
		t.Fatal(err)
	}
	// Shape inference accepts the fused Conv's residual input, as the runtime needs.
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	// A fused model has nothing left to fuse.
	if again, err := graph.Fuse(m); err != nil || again != (graph.FuseStats{}) {
		t.Errorf("second Fuse: %+v, %v", again, err)
	}
}

func TestFuseMobileBlocks(t *testing.T) {
	m := mobileModel(t)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 4, ConvResidual: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	relu6 := map[string]float32{opspec.FusedMinAttr: 0, opspec.FusedMaxAttr: 6}
	checkLayer(t, m, "e", []string{"x", "we", "be"}, []string{"e6"}, "Clip", relu6)
	checkLayer(t, m, "d", []string{"e6", "wd", "bd"}, []string{"d6"}, "Clip", relu6)
	checkLayer(t, m, "p", []string{"d6", "wp", "bp", "x"}, []string{"y1"}, "", nil)
	checkLayer(t, m, "s", []string{"y1", "ws"}, []string{"sg"}, "Sigmoid", nil)
	checkLayer(t, m, "h", []string{"sg", "wh", "bh"}, []string{"y2"}, "HardSwish", nil)
	if len(m.Layers) != 5 {
		t.Errorf("layers %v", layerNames(m))
	}
	checkListOrder(t, m)
}

// A Clip without bounds fuses with the bounds the Clip layer uses, written out.
func TestFuseClipDefaults(t *testing.T) {
	b := newModel("clip")
	x := b.Input("x", model.Float32, 1, 2, 4, 4)
	c := b.Layer("Conv", "c", []string{x, b.weights("w", 1, 2, 2, 1, 1)})
	b.Output(b.Layer("Clip", "k", []string{c}, model.FloatAttr("max", 0.5)))
	m := b.build(t)
	if _, err := graph.Fuse(m); err != nil {
		t.Fatal(err)
	}
	checkLayer(t, m, "c", []string{"x", "w"}, []string{"k"}, "Clip", map[string]float32{opspec.FusedMinAttr: -math.MaxFloat32, opspec.FusedMaxAttr: 0.5})
}

func TestFuseLeavesOthersAlone(t *testing.T) {
	m := noFuseModel(t)
	before := layerNames(m)
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	// c8 takes r8's place, right after its own.
	want := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == "r8" })
	if got := layerNames(m); !slices.Equal(got, want) {
		t.Errorf("layers %v, want %v", got, want)
	}
	checkLayer(t, m, "c8", []string{"x", "w8"}, []string{"r8"}, "Relu", nil)
	checkLayer(t, m, "s8", []string{"r8", "x"}, []string{"s8"}, "", nil)
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5", "c9"} {
		l := layerNamed(t, m, name)
		if len(l.Inputs) != 2 || l.Outputs[0] != name || l.Has(opspec.FusedActivationAttr) {
			t.Errorf("%s was changed: %+v", name, l)
		}
	}
}

// Layers of a custom domain, Clips with bound inputs and kept types stay as they are.
func TestFuseSkips(t *testing.T) {
	build := func() *model.Model {
		b := newModel("skips")
		x := b.Input("x", model.Float32, 1, 2, 4, 4)
		w := func(name string) string { return b.weights(name, 1, 2, 2, 1, 1) }
		c1 := b.Layer("Conv", "c1", []string{x, w("w1")})
		r1 := b.Layer("Relu", "r1", []string{c1}, model.StringAttr("domain", "com.example"))
		c2 := b.Layer("Conv", "c2", []string{x, w("w2")})
		k2 := b.Layer("Clip", "k2", []string{c2, b.ConstFloat32("lo", nil, []float32{0}), b.ConstFloat32("hi", nil, []float32{1})})
		c3 := b.Layer("Conv", "c3", []string{x, w("w3")})
		s3 := b.Layer("Add", "s3", []string{c3, x})
		c4 := b.Layer("Conv", "c4", []string{x, w("w4")}, model.StringAttr("domain", "com.example"))
		r4 := b.Layer("Relu", "r4", []string{c4})
		b.Output(r1, k2, s3, r4)
		return b.build(t)
	}
	m := build()
	stats, err := graph.Fuse(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvResidual: 1}); stats != want {
		t.Errorf("stats %+v, want %+v (only c3's Add folds)", stats, want)
	}
	m = build()
	stats, err = graph.FuseWith(m, graph.FuseOptions{Keep: func(typ string) bool { return typ == "Add" }})
	if err != nil || stats != (graph.FuseStats{}) || len(m.Layers) != 8 {
		t.Errorf("with Add kept: %+v, %v, layers %v", stats, err, layerNames(m))
	}

	m = resnetModel(t)
	stats, err = graph.FuseWith(m, graph.FuseOptions{Keep: func(typ string) bool { return typ == "Relu" }})
	if want := (graph.FuseStats{ConvActivation: 1, ConvResidual: 2}); err != nil || stats != want {
		t.Errorf("resnet with Relu kept: %+v, %v; want %+v (c3's LeakyRelu and both Adds)", stats, err, want)
	}
	m = resnetModel(t)
	if stats, err = graph.FuseWith(m, graph.FuseOptions{Keep: func(typ string) bool { return typ == "Conv" }}); err != nil || stats != (graph.FuseStats{GemmActivation: 1}) {
		t.Errorf("resnet with Conv kept: %+v, %v", stats, err)
	}
}

// A Conv that lists its omitted bias and residual as empty names takes the residual in
// slot 3.
func TestFuseEmptyInputNames(t *testing.T) {
	b := newModel("empty")
	x := b.Input("x", model.Float32, 1, 2, 3, 3)
	c := b.Layer("Conv", "c", []string{x, b.weights("w", 1, 2, 2, 1, 1), "", ""})
	b.Output(b.Layer("Add", "a", []string{c, x}))
	m := b.build(t)
	if _, err := graph.Fuse(m); err != nil {
		t.Fatal(err)
	}
	checkLayer(t, m, "c", []string{"x", "w", "", "x"}, []string{"a"}, "", nil)
}

// Every activation kind the kernels accept is one Fuse folds.
func TestFuseFoldsEveryActivation(t *testing.T) {
	for _, act := range builtinkernels.FusedActivations() {
		b := newModel("act")
		x := b.Input("x", model.Float32, 1, 2, 3, 3)
		c := b.Layer("Conv", "c", []string{x, b.weights("w", 1, 2, 2, 1, 1)})
		b.Output(b.Layer(act, "a", []string{c}))
		m := b.build(t)
		stats, err := graph.Fuse(m)
		if err != nil || stats != (graph.FuseStats{ConvActivation: 1}) {
			t.Errorf("%s: %+v, %v", act, stats, err)
			continue
		}
		checkLayer(t, m, "c", []string{"x", "w"}, []string{"a"}, act, nil)
	}
}

func TestFuseRefusesInvalidModel(t *testing.T) {
	m := &model.Model{Name: "bad", Layers: []model.Layer{{Name: "r", Type: "Relu", Inputs: []string{"nowhere"}, Outputs: []string{"r"}}}, Outputs: []string{"r"}}
	if _, err := graph.Fuse(m); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("error %v, want one naming the unknown input", err)
	}
}

// randomInputs gives every graph input values uniform in [-scale, scale].
func randomInputs(m *model.Model, scale float64) map[string]*builtinkernels.HostTensor {
	rng := rand.New(rand.NewPCG(11, 3))
	out := map[string]*builtinkernels.HostTensor{}
	for _, name := range m.Inputs {
		t := m.Tensor(name)
		v := make([]float32, t.Elements())
		for i := range v {
			v[i] = float32(scale * (2*rng.Float64() - 1))
		}
		out[name] = &builtinkernels.HostTensor{Shape: slices.Clone(t.Shape), Data: v}
	}
	return out
}

// runReference runs a model on the CPU references of the built-in layers.
func runReference(t *testing.T, m *model.Model, inputs map[string]*builtinkernels.HostTensor) map[string]*builtinkernels.HostTensor {
	t.Helper()
	g, err := graph.Build(m)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]*builtinkernels.HostTensor{}
	for k, v := range inputs {
		vals[k] = v
	}
	for i := range m.Tensors {
		if tn := &m.Tensors[i]; tn.IsConst() {
			d, err := tn.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			vals[tn.Name] = &builtinkernels.HostTensor{Shape: tn.Shape, Data: d}
		}
	}
	for _, li := range g.Order() {
		l := &m.Layers[li]
		op, ok := builtinkernels.Lookup(l.Type)
		if !ok {
			t.Fatalf("layer %q: no built-in %s", l.Name, l.Type)
		}
		ins := make([]*builtinkernels.HostTensor, len(l.Inputs))
		for k, name := range l.Inputs {
			if name != "" {
				ins[k] = vals[name]
			}
		}
		outShapes := make([][]int, len(l.Outputs))
		for k, o := range l.Outputs {
			outShapes[k] = m.Tensor(o).Shape
		}
		res, err := op.Reference(l, ins, outShapes)
		if err != nil {
			t.Fatalf("layer %q (%s): %v", l.Name, l.Type, err)
		}
		for k, o := range l.Outputs {
			vals[o] = res[k]
		}
	}
	out := map[string]*builtinkernels.HostTensor{}
	for _, o := range m.Outputs {
		out[o] = vals[o]
	}
	return out
}

// closeTo is |got-want| ≤ 1e-4·max(1, |want|); NaN never passes.
func closeTo(got, want float32) bool {
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-4*math.Max(1, math.Abs(float64(want)))
}

func compareOutputs(t *testing.T, what string, names []string, got, want func(string) ([]int, []float32)) {
	t.Helper()
	for _, name := range names {
		gs, gd := got(name)
		ws, wd := want(name)
		if !slices.Equal(gs, ws) || len(gd) != len(wd) {
			t.Errorf("%s: output %q has shape %v (%d values), want %v (%d)", what, name, gs, len(gd), ws, len(wd))
			continue
		}
		bad := 0
		for i := range wd {
			if !closeTo(gd[i], wd[i]) {
				if bad < 3 {
					t.Errorf("%s: output %q element %d: %v, want %v", what, name, i, gd[i], wd[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: output %q: %d of %d values differ", what, name, bad, len(wd))
		}
	}
}

// testModels are the models of the numeric tests, with the input scale that reaches the
// bends of their activations.
var testModels = []struct {
	name  string
	build func(*testing.T) *model.Model
	scale float64
}{
	{"resnet", resnetModel, 1},
	{"mobile", mobileModel, 3},
	{"mobile stem", mobileStemModel, 3},
	{"nofuse", noFuseModel, 1},
	{"head", headModel, 1},
	{"stem", stemModel, 1},
	{"fire", fireModel, 1},
	{"linear", linearModel, 1},
	{"gelu", geluModel, 2},
	{"attention", attentionModel, 1},
}

// TestFusedMatchesUnfusedReference: the CPU references of the fused model give the
// unfused model's outputs within 1e-4 relative.
func TestFusedMatchesUnfusedReference(t *testing.T) {
	for _, tm := range testModels {
		for _, opts := range fuseVariants {
			t.Run(tm.name+opts.name, func(t *testing.T) {
				plain, fusedM := tm.build(t), tm.build(t)
				stats, err := graph.FuseWith(fusedM, opts.opts)
				if err != nil {
					t.Fatal(err)
				}
				if stats.Layers() == 0 {
					t.Fatal("nothing fused")
				}
				in := randomInputs(plain, tm.scale)
				want := runReference(t, plain, in)
				got := runReference(t, fusedM, in)
				look := func(vals map[string]*builtinkernels.HostTensor) func(string) ([]int, []float32) {
					return func(n string) ([]int, []float32) { return vals[n].Shape, vals[n].Data }
				}
				compareOutputs(t, "reference", plain.Outputs, look(got), look(want))
			})
		}
	}
}

// fuseVariants are the option sets the numeric tests fuse with.
var fuseVariants = []struct {
	name string
	opts graph.FuseOptions
}{
	{"", graph.FuseOptions{}},
	{"/1x1+depthwise", graph.FuseOptions{InvertedResidual: true}},
	{"/blocks", graph.FuseOptions{InvertedResidual: true, ProjectionMinRows: 1}},
	{"/pool", graph.FuseOptions{InvertedResidual: true, GlobalAveragePool: true}},
	{"/maxpool", graph.FuseOptions{MaxPool: true}},
	{"/fire", graph.FuseOptions{Fire: true}},
}

// TestFusedMatchesUnfusedOnDevice compiles both forms on the OpenCL device
// (CLHOST_TEST_DEVICE, default the CPU), the unfused one without the engine's fusion, and
// compares their outputs within 1e-4 relative.
func TestFusedMatchesUnfusedOnDevice(t *testing.T) {
	spec := os.Getenv("CLHOST_TEST_DEVICE")
	if spec == "" {
		spec = "cpu"
	}
	e, err := host.NewEngine(host.Options{Device: spec, NoGlobalConfig: true})
	if err != nil {
		t.Fatalf("OpenCL device %q: %v", spec, err)
	}
	defer e.Close()
	// The unfused model runs on an engine that fuses nothing itself: the engine above
	// applies its own fusion to both models.
	plainEngine, err := host.NewEngine(host.Options{Device: spec, NoGlobalConfig: true, NoFuse: true})
	if err != nil {
		t.Fatalf("OpenCL device %q: %v", spec, err)
	}
	defer plainEngine.Close()
	ctx := context.Background()
	for _, tm := range testModels {
		for _, opts := range fuseVariants {
			t.Run(tm.name+opts.name, func(t *testing.T) {
				plain, fusedM := tm.build(t), tm.build(t)
				if _, err := graph.FuseWith(fusedM, opts.opts); err != nil {
					t.Fatal(err)
				}
				in := map[string]*host.Tensor{}
				for k, v := range randomInputs(plain, tm.scale) {
					in[k] = &host.Tensor{Shape: v.Shape, Data: v.Data}
				}
				run := func(e *host.Engine, m *model.Model) map[string]*host.Tensor {
					n, err := e.Compile(m)
					if err != nil {
						t.Fatal(err)
					}
					out, err := n.Infer(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					return out
				}
				want, got := run(plainEngine, plain), run(e, fusedM)
				look := func(vals map[string]*host.Tensor) func(string) ([]int, []float32) {
					return func(n string) ([]int, []float32) { return vals[n].Shape, vals[n].Data }
				}
				compareOutputs(t, "device", plain.Outputs, look(got), look(want))
			})
		}
	}
}

// TestFuseInvertedResidual: with the option, MobileNet's expansion and depthwise convs
// become one layer that keeps the expansion's Clip under its own names and takes the
// depthwise Clip as its fused activation, the projection and the residual staying a
// Conv. A padded, strided or residual-carrying 1×1 conv, a dilated depthwise one and rows too
// wide for the kernel's buffer stay apart.
func TestFuseInvertedResidual(t *testing.T) {
	m := mobileModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 4, ConvResidual: 1, InvertedResidual: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	e := layerNamed(t, m, "e")
	if e.Type != opspec.InvertedResidualType || !slices.Equal(e.Inputs, []string{"x", "we", "be", "wd", "bd"}) ||
		!slices.Equal(e.Outputs, []string{"d6"}) {
		t.Errorf("e: %s %v → %v", e.Type, e.Inputs, e.Outputs)
	}
	if e.String(opspec.ExpansionActivationAttr, "") != "Clip" || e.Float(opspec.ExpansionMaxAttr, 0) != 6 ||
		e.String(opspec.FusedActivationAttr, "") != "Clip" || e.Float(opspec.FusedMaxAttr, 0) != 6 ||
		e.Int("group", 0) != 12 || !slices.Equal(e.Ints("pads", nil), []int64{1, 1, 1, 1}) {
		t.Errorf("e's attributes: %+v", e.Attrs)
	}
	if p := layerNamed(t, m, "p"); p.Type != "Conv" || len(p.Inputs) != 4 || p.Inputs[3] != "x" {
		t.Errorf("p: %s %v", p.Type, p.Inputs)
	}
	if len(m.Layers) != 4 {
		t.Errorf("layers %v", layerNames(m))
	}
	checkListOrder(t, m)

	relu6 := []model.Attr{model.FloatAttr("min", 0), model.FloatAttr("max", 6)}
	apart := []struct {
		name  string
		width int
		pw    []model.Attr
		dw    []model.Attr
	}{
		{"padded 1×1", 8, []model.Attr{pads1}, []model.Attr{pads1}},
		{"strided 1×1", 8, []model.Attr{model.IntsAttr("strides", 2, 2)}, []model.Attr{pads1}},
		{"dilated depthwise", 8, nil, []model.Attr{pads1, model.IntsAttr("dilations", 2, 2)}},
		{"wide rows", 600, nil, []model.Attr{pads1}},
	}
	for _, c := range apart {
		b := newModel("apart")
		x := b.Input("x", model.Float32, 1, 4, 6, c.width)
		pw := b.Layer("Conv", "pw", []string{x, b.weights("wp", 1, 8, 4, 1, 1)}, c.pw...)
		p6 := b.Layer("Clip", "p6", []string{pw}, relu6...)
		b.Output(b.Layer("Conv", "dw", []string{p6, b.weights("wd", 1, 8, 1, 3, 3)}, append(c.dw, model.IntAttr("group", 8))...))
		m := b.build(t)
		if stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true}); err != nil || stats.InvertedResidual != 0 {
			t.Errorf("%s: %+v, %v", c.name, stats, err)
		}
	}
	// A stem (a 3×3 stride-2 Conv of 3 channels, kernel_shape left to W) joins the
	// depthwise conv, its window under ExpansionWindowPrefix; one of more taps, or with
	// an auto_pad, stays apart.
	stems := []struct {
		name  string
		c     int
		attrs []model.Attr
		fused bool
	}{
		{"stem", 3, []model.Attr{pads1, model.IntsAttr("strides", 2, 2)}, true},
		{"stem of 4 channels", 4, []model.Attr{pads1, model.IntsAttr("strides", 2, 2)}, false},
		{"stem with auto_pad", 3, []model.Attr{model.StringAttr("auto_pad", "SAME_UPPER"), model.IntsAttr("strides", 2, 2)}, false},
	}
	for _, c := range stems {
		b := newModel("stem")
		x := b.Input("x", model.Float32, 1, c.c, 16, 16)
		pw := b.Layer("Conv", "pw", []string{x, b.weights("wp", 1, 8, c.c, 3, 3)}, c.attrs...)
		p6 := b.Layer("Clip", "p6", []string{pw}, relu6...)
		b.Output(b.Layer("Conv", "dw", []string{p6, b.weights("wd", 1, 8, 1, 3, 3)}, pads1, model.IntAttr("group", 8)))
		m := b.build(t)
		stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true})
		if err != nil || (stats.InvertedResidual == 1) != c.fused {
			t.Errorf("%s: %+v, %v", c.name, stats, err)
		}
		if !c.fused {
			continue
		}
		l := layerNamed(t, m, "pw")
		if l.Type != opspec.InvertedResidualType || !slices.Equal(l.Ints(opspec.ExpansionWindowPrefix+"kernel_shape", nil), []int64{3, 3}) ||
			!slices.Equal(l.Ints(opspec.ExpansionWindowPrefix+"strides", nil), []int64{2, 2}) ||
			!slices.Equal(l.Ints(opspec.ExpansionWindowPrefix+"pads", nil), []int64{1, 1, 1, 1}) ||
			!slices.Equal(l.Ints("pads", nil), []int64{1, 1, 1, 1}) || l.Has("strides") || l.String(opspec.ExpansionActivationAttr, "") != "Clip" {
			t.Errorf("%s: %s %+v", c.name, l.Type, l.Attrs)
		}
	}

	// A 1×1 conv that already carries a residual.
	b := newModel("residual")
	x := b.Input("x", model.Float32, 1, 8, 6, 6)
	pw := b.Layer("Conv", "pw", []string{x, b.weights("wp", 1, 8, 8, 1, 1)})
	a := b.Layer("Add", "a", []string{pw, x})
	b.Output(b.Layer("Conv", "dw", []string{a, b.weights("wd", 1, 8, 1, 3, 3)}, pads1, model.IntAttr("group", 8)))
	m = b.build(t)
	if stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true}); err != nil || stats.InvertedResidual != 0 || stats.ConvResidual != 1 {
		t.Errorf("residual 1×1: %+v, %v", stats, err)
	}
}

// TestFuseProjection: with ProjectionMinRows, MobileNet's expansion, depthwise and
// projection convs and the residual Add become one layer, the depthwise Clip under the
// Depthwise* names; a block of fewer output rows than asked for keeps its projection,
// unless ProjectionTallRows asks for no more rows than it has.
func TestFuseProjection(t *testing.T) {
	m := mobileModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true, ProjectionMinRows: 9})
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 4, ConvResidual: 1, InvertedResidual: 1, Projection: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	e := layerNamed(t, m, "e")
	if e.Type != opspec.InvertedResidualType || !slices.Equal(e.Inputs, []string{"x", "we", "be", "wd", "bd", "wp", "bp", "x"}) ||
		!slices.Equal(e.Outputs, []string{"y1"}) {
		t.Errorf("e: %s %v → %v", e.Type, e.Inputs, e.Outputs)
	}
	if e.String(opspec.ExpansionActivationAttr, "") != "Clip" || e.String(opspec.DepthwiseActivationAttr, "") != "Clip" ||
		e.Float(opspec.DepthwiseMaxAttr, 0) != 6 || e.Has(opspec.FusedActivationAttr) {
		t.Errorf("e's attributes: %+v", e.Attrs)
	}
	if len(m.Layers) != 3 {
		t.Errorf("layers %v", layerNames(m))
	}
	checkListOrder(t, m)

	m = mobileModel(t)
	if stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true, ProjectionMinRows: 10}); err != nil || stats.Projection != 0 {
		t.Errorf("9 rows, 10 asked for: %+v, %v", stats, err)
	}
	// Tall blocks of any size: 9 rows are enough where 9 are asked for, not where 10 are.
	for _, c := range []struct{ rows, want int }{{9, 1}, {10, 0}} {
		m = mobileModel(t)
		stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true, ProjectionMinRows: 10, ProjectionTallRows: c.rows})
		if err != nil || stats.Projection != c.want {
			t.Errorf("9 rows, %d asked for as tall: %+v, %v", c.rows, stats, err)
		}
	}
}

// TestFuseTallProjection: with ProjectionTallRows, a tall block joins its projection where
// the rolling kernel's ring of rows fits (256 channels of 40 columns: 185 KB; 512: 370 KB)
// and not where it does not (1024 channels: 740 KB; 512 with a 5×5 window, five rows of
// 44 padded columns: 562 KB).
func TestFuseTallProjection(t *testing.T) {
	for _, c := range []struct{ m, k, want int }{{256, 3, 1}, {512, 3, 1}, {1024, 3, 0}, {512, 5, 0}} {
		b := newModel("tall")
		x := b.Input("x", model.Float32, 1, 4, 40, 40)
		e := b.Layer("Conv", "e", []string{x, b.weights("we", 1, c.m, 4, 1, 1)})
		p := int64(c.k / 2)
		d := b.Layer("Conv", "d", []string{e, b.weights("wd", 1, c.m, 1, c.k, c.k)}, model.IntsAttr("pads", p, p, p, p),
			model.IntAttr("group", int64(c.m)))
		b.Output(b.Layer("Conv", "p", []string{d, b.weights("wp", 0.3, 4, c.m, 1, 1)}))
		m := b.build(t)
		stats, err := graph.FuseWith(m, graph.FuseOptions{InvertedResidual: true, ProjectionTallRows: 40})
		if err != nil || stats.InvertedResidual != 1 || stats.Projection != c.want {
			t.Errorf("%d channels, %d×%d: %+v, %v; want %d projection", c.m, c.k, c.k, stats, err, c.want)
		}
	}
}

// TestFuseGlobalAveragePool: with the option, a classifier head's 1×1 Conv takes its
// residual, its Relu and then the GlobalAveragePool, and its output becomes the pool's
// (N, M, 1, 1); a Relu after the pool stays a layer. Without the option, or where the
// Conv is not a plain 1×1 one, has too few channels or its output has another reader,
// the pool stays a layer.
func TestFuseGlobalAveragePool(t *testing.T) {
	m := headModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{GlobalAveragePool: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 1, ConvResidual: 1, ConvGlobalPool: 2}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	c := layerNamed(t, m, "c")
	if c.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 1 || c.String(opspec.FusedActivationAttr, "") != "Relu" ||
		!slices.Equal(c.Inputs, []string{"x", "wc", "bc", "r"}) || !slices.Equal(c.Outputs, []string{"gp"}) {
		t.Errorf("c: %v → %v, %+v", c.Inputs, c.Outputs, c.Attrs)
	}
	if d := layerNamed(t, m, "d"); d.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 1 || d.Has(opspec.FusedActivationAttr) {
		t.Errorf("d: %+v", d.Attrs)
	}
	if got := layerNames(m); !slices.Equal(got, []string{"c", "fl", "d", "dr"}) {
		t.Errorf("layers %v", got)
	}
	if shape := m.Tensor("gp").Shape; !slices.Equal(shape, []int{2, 260, 1, 1}) {
		t.Errorf("gp's shape %v", shape)
	}
	// Shape inference over the fused model gives the Conv the pool's shape.
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	checkListOrder(t, m)

	if stats, err := graph.FuseWith(headModel(t), graph.FuseOptions{}); err != nil || stats.ConvGlobalPool != 0 {
		t.Errorf("without the option: %+v, %v", stats, err)
	}
	apart := []struct {
		name  string
		m     int
		attrs []model.Attr
		reads bool
	}{
		{"padded", 256, []model.Attr{pads1}, false},
		{"strided", 256, []model.Attr{model.IntsAttr("strides", 2, 2)}, false},
		{"255 channels", 255, nil, false},
		{"two readers", 256, nil, true},
	}
	for _, a := range apart {
		b := newModel("apart")
		x := b.Input("x", model.Float32, 1, 4, 6, 6)
		c := b.Layer("Conv", "c", []string{x, b.weights("w", 1, a.m, 4, 1, 1)}, a.attrs...)
		b.Output(b.Layer("GlobalAveragePool", "gp", []string{c}))
		if a.reads {
			b.Output(b.Layer("Relu", "r", []string{c}))
		}
		if stats, err := graph.FuseWith(b.build(t), graph.FuseOptions{GlobalAveragePool: true}); err != nil || stats.ConvGlobalPool != 0 {
			t.Errorf("%s: %+v, %v", a.name, stats, err)
		}
	}
}

// TestFuseMaxPool: with the option, a stem's Conv takes its Relu and then its MaxPool,
// whose attributes it carries under FusedMaxPoolPrefix, and its output becomes the
// pool's; MaxPoolOf gives the pool back. A 1×1 Conv and a 3×3 one over 31 channels
// take theirs too. Without the option, or where the Conv has too many products per
// output (a 3 × 6 window over 4 channels, a 3×3 one over 32), is grouped or carries a
// residual, where the pool has the Indices output or a storage order, or where the
// Conv's output has another reader, the pool stays a layer.
func TestFuseMaxPool(t *testing.T) {
	m := stemModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{MaxPool: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 1, ConvMaxPool: 2}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	c := layerNamed(t, m, "c")
	if c.String(opspec.FusedActivationAttr, "") != "Relu" || !slices.Equal(c.Ints(opspec.FusedMaxPoolPrefix+"kernel_shape", nil), []int64{3, 3}) ||
		c.Int(opspec.FusedMaxPoolPrefix+"ceil_mode", 0) != 1 || !slices.Equal(c.Outputs, []string{"cp"}) {
		t.Errorf("c: %v → %v, %+v", c.Inputs, c.Outputs, c.Attrs)
	}
	pool, ok := graph.MaxPoolOf(c)
	if !ok || pool.Type != "MaxPool" || !slices.Equal(pool.Ints("strides", nil), []int64{2, 2}) || pool.Has(opspec.FusedActivationAttr) || len(pool.Attrs) != 3 {
		t.Errorf("MaxPoolOf(c): %v, %+v", ok, pool)
	}
	if _, ok := graph.MaxPoolOf(layerNamed(t, m, "d")); ok {
		t.Error("MaxPoolOf(d): a Conv without a pool has one")
	}
	if got := layerNames(m); !slices.Equal(got, []string{"c", "d", "e", "f", "fp"}) {
		t.Errorf("layers %v", got)
	}
	if shape := m.Tensor("cp").Shape; !slices.Equal(shape, []int{2, 8, 4, 5}) {
		t.Errorf("cp's shape %v", shape)
	}
	// Shape inference over the fused model gives the Conv the pool's shape.
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	checkListOrder(t, m)

	if stats, err := graph.FuseWith(stemModel(t), graph.FuseOptions{}); err != nil || stats.ConvMaxPool != 0 {
		t.Errorf("without the option: %+v, %v", stats, err)
	}
	pool3 := []model.Attr{model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("strides", 2, 2)}
	// The first case fuses: the builder itself does not keep the others apart.
	apart := []struct {
		name     string
		w        []int
		attrs    []model.Attr
		pool     []model.Attr
		residual bool
		indices  bool
		reads    bool
	}{
		{"plain", []int{8, 4, 3, 3}, nil, pool3, false, false, false},
		{"1x1", []int{8, 4, 1, 1}, nil, pool3, false, false, false},
		{"3x3 over 31 channels", []int{8, 31, 3, 3}, []model.Attr{pads1}, pool3, false, false, false},
		{"72 products", []int{8, 4, 3, 6}, nil, pool3, false, false, false},
		{"3x3 over 32 channels", []int{8, 32, 3, 3}, []model.Attr{pads1}, pool3, false, false, false},
		{"grouped", []int{8, 2, 3, 3}, []model.Attr{model.IntAttr("group", 2)}, pool3, false, false, false},
		{"residual", []int{4, 4, 3, 3}, []model.Attr{pads1}, pool3, true, false, false},
		{"indices", []int{8, 4, 3, 3}, nil, pool3, false, true, false},
		{"storage order", []int{8, 4, 3, 3}, nil, append(slices.Clone(pool3), model.IntAttr("storage_order", 1)), false, false, false},
		{"two readers", []int{8, 4, 3, 3}, nil, pool3, false, false, true},
	}
	for _, a := range apart {
		ch := a.w[1]
		if a.name == "grouped" {
			ch *= 2
		}
		b := newModel("apart")
		x := b.Input("x", model.Float32, 1, ch, 11, 11)
		c := b.Layer("Conv", "c", []string{x, b.weights("w", 1, a.w...)}, a.attrs...)
		if a.residual {
			c = b.Layer("Add", "a", []string{c, x})
		}
		outs := []string{"p"}
		if a.indices {
			outs = append(outs, "i")
		}
		b.LayerOutputs("MaxPool", "p", []string{c}, outs, a.pool...)
		b.Output(outs...)
		if a.reads {
			b.Output(b.Layer("Relu", "r", []string{c}))
		}
		want := 0
		if a.name == "plain" || a.name == "1x1" || a.name == "3x3 over 31 channels" {
			want = 1
		}
		if stats, err := graph.FuseWith(b.build(t), graph.FuseOptions{MaxPool: true}); err != nil || stats.ConvMaxPool != want {
			t.Errorf("%s: %+v, %v", a.name, stats, err)
		}
	}
}

// TestFuseConcatMaxPool: the pool of the first fire module's Concat moves into both
// expansions, whose outputs take the pooled shapes and which the Concat now joins into
// the pool's output; the second module's pool stays, as its 3×3 expansion reads 34
// channels. A Concat input with another reader, made by a layer that is no Conv, or
// joined twice keeps the pool where it is.
func TestFuseConcatMaxPool(t *testing.T) {
	m := fireModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{MaxPool: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (graph.FuseStats{ConvActivation: 4, ConcatMaxPool: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	if got := layerNames(m); !slices.Equal(got, []string{"s", "e1", "e3", "cat", "q", "a", "c", "cat2", "p2"}) {
		t.Errorf("layers %v", got)
	}
	for _, c := range []struct {
		name  string
		shape []int
	}{{"e1", []int{2, 5, 5, 5}}, {"e3", []int{2, 6, 5, 5}}} {
		l := layerNamed(t, m, c.name)
		if !slices.Equal(l.Ints(opspec.FusedMaxPoolPrefix+"kernel_shape", nil), []int64{3, 3}) || l.Int(opspec.FusedMaxPoolPrefix+"ceil_mode", 0) != 1 ||
			l.String(opspec.FusedActivationAttr, "") != "Relu" {
			t.Errorf("%s: %+v", c.name, l.Attrs)
		}
		if shape := m.Tensor(l.Outputs[0]).Shape; !slices.Equal(shape, c.shape) {
			t.Errorf("%s's output %s: shape %v, want %v", c.name, l.Outputs[0], shape, c.shape)
		}
	}
	if cat := layerNamed(t, m, "cat"); !slices.Equal(cat.Outputs, []string{"p"}) {
		t.Errorf("cat writes %v, want p", cat.Outputs)
	}
	if m.Tensor("cat") != nil {
		t.Error("the Concat's full-size output is still a tensor")
	}
	// Shape inference over the fused model agrees with the rewritten shapes.
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	if shape := m.Tensor("p").Shape; !slices.Equal(shape, []int{2, 11, 5, 5}) {
		t.Errorf("p's shape %v", shape)
	}
	checkListOrder(t, m)

	for _, c := range []struct {
		name string
		edit func(b *modelBuilder, e1, e3 string) (string, string)
	}{
		{"second reader", func(b *modelBuilder, e1, e3 string) (string, string) {
			b.Output(b.Layer("Relu", "extra", []string{e1}))
			return e1, e3
		}},
		{"not a Conv", func(b *modelBuilder, e1, e3 string) (string, string) {
			return b.Layer("Tanh", "r", []string{e1}), e3
		}},
		{"same input twice", func(b *modelBuilder, e1, e3 string) (string, string) { return e1, e1 }},
	} {
		b := newModel("apart")
		x := b.Input("x", model.Float32, 1, 4, 9, 9)
		e1 := b.Layer("Conv", "e1", []string{x, b.weights("w1", 0.5, 3, 4, 1, 1)})
		e3 := b.Layer("Conv", "e3", []string{x, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1)
		l, r := c.edit(b, e1, e3)
		cat := b.Layer("Concat", "cat", []string{l, r}, model.IntAttr("axis", 1))
		b.Output(b.Layer("MaxPool", "p", []string{cat}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2)))
		if stats, err := graph.FuseWith(b.build(t), graph.FuseOptions{MaxPool: true}); err != nil || stats.ConcatMaxPool != 0 {
			t.Errorf("%s: %+v, %v", c.name, stats, err)
		}
	}
}

// TestFuseFire: a fire module (squeeze, two expansions, their Concat) becomes one layer in
// the Concat's place that reads every part's weights and keeps each activation under its
// own names; modules whose expansions took their MaxPool, whose squeeze has 32 channels or
// more, or that differ from the pattern stay apart.
func TestFuseFire(t *testing.T) {
	m := fireModel(t)
	stats, err := graph.FuseWith(m, graph.FuseOptions{Fire: true})
	if err != nil {
		t.Fatal(err)
	}
	// The second module (q, a, c, cat2) has 34 squeezed channels and its 3×3 expansion
	// comes first in the Concat.
	if want := (graph.FuseStats{ConvActivation: 4, Fire: 1}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	if got := layerNames(m); !slices.Equal(got, []string{"s", "p", "q", "a", "c", "cat2", "p2"}) {
		t.Errorf("layers %v", got)
	}
	fire := layerNamed(t, m, "s")
	if fire.Type != opspec.FireType || !slices.Equal(fire.Inputs, []string{"x", "ws", "bs", "we1", "be1", "we3", "be3"}) ||
		!slices.Equal(fire.Outputs, []string{"cat"}) {
		t.Errorf("fused layer %s %q → %q", fire.Type, fire.Inputs, fire.Outputs)
	}
	for _, name := range []string{opspec.SqueezeActivationAttr, opspec.Expand1ActivationAttr, opspec.FusedActivationAttr} {
		if fire.String(name, "") != "Relu" {
			t.Errorf("%s: %q, want Relu", name, fire.String(name, ""))
		}
	}
	if !slices.Equal(fire.Ints("pads", nil), []int64{1, 1, 1, 1}) {
		t.Errorf("pads %v: want the 3×3 expansion's", fire.Ints("pads", nil))
	}
	for _, gone := range []string{"sr", "e1r", "e3r"} {
		if m.Tensor(gone) != nil {
			t.Errorf("tensor %s is still there", gone)
		}
	}
	if err := graph.InferShapes(m); err != nil {
		t.Fatal(err)
	}
	checkListOrder(t, m)

	// With the MaxPool folded into the expansions first, the module stays apart.
	m = fireModel(t)
	if stats, err := graph.FuseWith(m, graph.FuseOptions{Fire: true, MaxPool: true}); err != nil || stats.Fire != 0 || stats.ConcatMaxPool != 1 {
		t.Errorf("with MaxPool: %+v, %v", stats, err)
	}

	for _, c := range []struct {
		name string
		edit func(b *modelBuilder, x string) (cat string)
	}{
		{"32 squeezed channels", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 32, 4, 1, 1)})
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 32, 1, 1)})
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 32, 3, 3)}, pads1)
			return b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
		}},
		{"squeeze read a third time", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 4, 1, 1)})
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 4, 1, 1)})
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1)
			b.Output(b.Layer("Tanh", "t", []string{s}))
			return b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
		}},
		{"3×3 expansion first", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 4, 1, 1)})
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 4, 1, 1)})
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1)
			return b.Layer("Concat", "cat", []string{e3, e1}, model.IntAttr("axis", 1))
		}},
		{"3×3 expansion at stride 2", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 4, 1, 1)})
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 4, 1, 1), ""}, model.IntsAttr("strides", 2, 2))
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1, model.IntsAttr("strides", 2, 2))
			return b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
		}},
		{"squeeze is 3×3", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 4, 3, 3)}, pads1)
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 4, 1, 1)})
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1)
			return b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
		}},
		{"Concat along the width", func(b *modelBuilder, x string) string {
			s := b.Layer("Conv", "s", []string{x, b.weights("ws", 0.5, 4, 4, 1, 1)})
			e1 := b.Layer("Conv", "e1", []string{s, b.weights("w1", 0.5, 3, 4, 1, 1)})
			e3 := b.Layer("Conv", "e3", []string{s, b.weights("w3", 0.5, 3, 4, 3, 3)}, pads1)
			return b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 3))
		}},
	} {
		b := newModel("apart")
		x := b.Input("x", model.Float32, 1, 4, 9, 9)
		b.Output(b.Layer("Relu", "out", []string{c.edit(b, x)}))
		if stats, err := graph.FuseWith(b.build(t), graph.FuseOptions{Fire: true}); err != nil || stats.Fire != 0 {
			t.Errorf("%s: %+v, %v", c.name, stats, err)
		}
	}
}
