package host

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// splitModel has a layer of each kind that splits its batch (Conv with fused
// activations, a fire module whose Concat is written in place, MaxPool, an inverted
// residual block, GlobalAveragePool, Gemm, Softmax) around one that cannot: a Relu over
// the activations reshaped to half the batch, which reads across both halves. Its pool
// is a graph output that later layers also read (fusion moves it into e1 and e3, and
// the block into ex).
func splitModel(t testing.TB, batch int) *model.Model {
	b := model.NewBuilder("split")
	rng := rand.New(rand.NewSource(3))
	w := func(name string, scale float64, shape ...int) string {
		return uniformConsts(b, rng, scale)(name, shape...)
	}
	pads := model.IntsAttr("pads", 1, 1, 1, 1)
	relu := func(name, in string) string { return b.Layer("Relu", name, []string{in}) }
	clip := func(name, in string) string {
		return b.Layer("Clip", name, []string{in}, model.FloatAttr("min", 0), model.FloatAttr("max", 6))
	}
	x := b.Input("x", model.Float32, batch, 8, 12, 12)
	c1 := relu("c1r", b.Layer("Conv", "c1", []string{x, w("w1", 0.3, 16, 8, 3, 3), w("b1", 0.1, 16)}, pads))
	s := relu("sr", b.Layer("Conv", "s", []string{c1, w("ws", 0.3, 8, 16, 1, 1), w("bs", 0.1, 8)}))
	e1 := relu("e1r", b.Layer("Conv", "e1", []string{s, w("we1", 0.3, 12, 8, 1, 1), w("be1", 0.1, 12)}))
	e3 := relu("e3r", b.Layer("Conv", "e3", []string{s, w("we3", 0.3, 12, 8, 3, 3), w("be3", 0.1, 12)}, pads))
	cat := b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
	p := b.Layer("MaxPool", "p", []string{cat}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	// An inverted residual block: 1×1 expansion, depthwise 3×3, 1×1 projection, residual.
	ex := clip("exc", b.Layer("Conv", "ex", []string{p, w("wex", 0.3, 48, 24, 1, 1), w("bex", 0.1, 48)}))
	dw := clip("dwc", b.Layer("Conv", "dw", []string{ex, w("wdw", 0.3, 48, 1, 3, 3), w("bdw", 0.1, 48)}, pads, model.IntAttr("group", 48)))
	pj := b.Layer("Conv", "pj", []string{dw, w("wpj", 0.3, 24, 48, 1, 1), w("bpj", 0.1, 24)})
	res := b.Layer("Add", "res", []string{pj, p})
	// Reshaped to half the batch, a Relu reads images of both halves at once.
	shape := func(name string, s ...int64) string { return b.ConstInt64(name, []int{len(s)}, s) }
	folded := b.Layer("Reshape", "fold", []string{res, shape("fs", int64(batch/2), -1)})
	r := relu("across", folded)
	back := b.Layer("Reshape", "unfold", []string{r, shape("us", int64(batch), 24, 6, 6)})
	gap := b.Layer("GlobalAveragePool", "gap", []string{back})
	flat := b.Layer("Flatten", "flat", []string{gap}, model.IntAttr("axis", 1))
	fc := b.Layer("Gemm", "fc", []string{flat, w("wfc", 0.3, 10, 24), w("bfc", 0.1, 10)}, model.IntAttr("transB", 1))
	b.Output(b.Layer("Softmax", "prob", []string{fc}, model.IntAttr("axis", 1)), p)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSplitBatchMatchesWhole: with the batch split, every layer that can runs in two
// halves (and the Relu across halves does not), and the outputs match the unsplit
// network's over several inferences, at a batch whose halves are odd.
func TestSplitBatchMatchesWhole(t *testing.T) {
	batch := 6
	if simulated() {
		batch = 2 // halves of one image, still odd
	}
	// Out of order on every device (oclgrind's included, for check-kernels), as
	// splitting needs.
	whole := newTestEngine(t, Options{SplitBatch: Off, Queue: QueueOutOfOrder})
	split := newTestEngine(t, Options{SplitBatch: On, Queue: QueueOutOfOrder})
	wn, err := whole.Compile(splitModel(t, batch))
	if err != nil {
		t.Fatal(err)
	}
	sn, err := split.Compile(splitModel(t, batch))
	if err != nil {
		t.Fatal(err)
	}
	if got := wn.SplitLayers(); len(got) != 0 {
		t.Errorf("Off: split layers %v, want none", got)
	}
	got := sn.SplitLayers()
	for _, name := range []string{"c1", "s", "e1", "e3", "ex", "gap", "fc", "prob"} {
		if !slices.ContainsFunc(got, func(l string) bool { return l == name }) {
			t.Errorf("split layers %v: %q missing", got, name)
		}
	}
	if slices.Contains(got, "across") {
		t.Errorf("split layers %v: the Relu over reshaped images must not split", got)
	}
	rng := rand.New(rand.NewSource(5))
	runs := 3
	if simulated() {
		runs = 1
	}
	for run := range runs {
		in := map[string]*Tensor{"x": randomTensor(rng, batch, 8, 12, 12)}
		inferAlike(t, fmt.Sprintf("run %d", run), wn, sn, in)
	}
}

// inferAlike runs both networks on in and fails unless split's outputs match whole's
// to float rounding (halves may take other tiles, so sums may run in another order).
func inferAlike(t *testing.T, label string, whole, split *Network, in map[string]*Tensor) {
	t.Helper()
	want, err := whole.Infer(context.Background(), in)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	have, err := split.Infer(context.Background(), in)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	for name, w := range want {
		h := have[name]
		if h == nil || !slices.Equal(h.Shape, w.Shape) {
			t.Fatalf("%s: output %q missing or misshapen", label, name)
		}
		for i := range w.Data {
			if d := math.Abs(float64(h.Data[i] - w.Data[i])); d > 1e-5*(1+math.Abs(float64(w.Data[i]))) {
				t.Fatalf("%s (split %v): output %q [%d]: split %g, whole %g", label, split.SplitLayers(), name, i, h.Data[i], w.Data[i])
			}
		}
	}
}

// TestSplitBatchEligibility: odd batches keep one launch per kernel, and by default
// (SplitBatch Auto) batches under minSplitBatch and devices under minSplitUnits; so do an element-wise layer whose constant operand holds a value per image, and by
// default (SplitBatch Auto) a network with branches side by side in more than a quarter of
// its levels. A Conv with as many output channels as the batch has images still splits.
func TestSplitBatchEligibility(t *testing.T) {
	e := newTestEngine(t, Options{SplitBatch: On, Queue: QueueOutOfOrder})
	compile := func(e *Engine, m *model.Model) []string {
		t.Helper()
		n, err := e.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		return n.SplitLayers()
	}
	if got := compile(e, splitModel(t, 5)); slices.Contains(got, "c1") {
		t.Errorf("batch 5: split layers %v, want no c1", got)
	}
	if got := compile(e, splitModel(t, 2)); !slices.Contains(got, "c1") {
		t.Errorf("On, batch 2: split layers %v, want c1 among them", got)
	}
	if got := compile(e, splitModel(t, 16)); !slices.Contains(got, "c1") {
		t.Errorf("batch 16: split layers %v: want c1 (16 output channels) among them", got)
	}
	auto := newTestEngine(t, Options{Queue: QueueOutOfOrder})
	got := compile(auto, splitModel(t, 16))
	if units := auto.device.ComputeUnits; auto.device.IsGPU() && len(got) != 0 {
		t.Errorf("Auto on a GPU: split layers %v, want none", got)
	} else if !auto.device.IsGPU() && units >= minSplitUnits && len(got) == 0 {
		t.Errorf("Auto, batch 16, one level of two layers, %d compute units: nothing split", units)
	} else if units < minSplitUnits && len(got) != 0 {
		t.Errorf("Auto, %d compute units (under minSplitUnits): split layers %v, want none", units, got)
	}
	if got := compile(auto, splitModel(t, 8)); len(got) != 0 {
		t.Errorf("Auto, batch 8 (under minSplitBatch): split layers %v, want none", got)
	}
	d := model.NewBuilder("diamond")
	x := d.Input("x", model.Float32, 16, 3, 5, 7)
	d.Output(d.Layer("Add", "c", []string{d.Layer("Relu", "a", []string{x}), d.Layer("Sigmoid", "b", []string{x})}))
	diamond, err := d.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := compile(auto, diamond); len(got) != 0 {
		t.Errorf("Auto, branches side by side in half the levels: split layers %v, want none", got)
	}
	b := model.NewBuilder("broadcast")
	x = b.Input("x", model.Float32, 4, 3, 2, 2)
	perImage := b.ConstFloat32("k", []int{4, 3, 2, 2}, make([]float32, 48))
	perChannel := b.ConstFloat32("c", []int{1, 3, 1, 1}, []float32{1, 2, 3})
	b.Output(b.Layer("Add", "per_channel", []string{b.Layer("Add", "per_image", []string{x, perImage}), perChannel}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := compile(e, m); !slices.Equal(got, []string{"per_channel"}) {
		t.Errorf("element-wise: split layers %v, want [per_channel]", got)
	}
}

// randomChainModel is a seeded random network for the split tests: Convs (1×1 and 3×3,
// some with a residual from a few layers back), Relus, a branch pair joined by a Concat,
// MaxPools while the plane allows, then GlobalAveragePool, Flatten and Gemm. Residuals
// and branches keep tensors alive across layers, so the memory plan reuses buffers in
// orders a plain chain does not.
func randomChainModel(t testing.TB, seed int64, batch int) *model.Model {
	rng := rand.New(rand.NewSource(seed))
	b := model.NewBuilder("random")
	w := uniformConsts(b, rng, 0.4)
	// Few distinct shapes, so that layers share compiled programs (PoCL compiles each
	// in about a second).
	widths := []int{4, 8}
	c, hw := widths[rng.Intn(2)], 12
	cur := b.Input("x", model.Float32, batch, c, hw, hw)
	type tensor struct {
		name  string
		c, hw int
	}
	var recent []tensor
	for i := range 6 + rng.Intn(5) {
		name := func(s string) string { return s + string(rune('a'+i)) }
		switch k := rng.Intn(5); {
		case k == 0 && hw >= 4:
			cur = b.Layer("MaxPool", name("pool"), []string{cur}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
			hw /= 2
		case k == 1:
			m1, m2 := widths[rng.Intn(2)], widths[rng.Intn(2)]
			l := b.Layer("Conv", name("l"), []string{cur, w(name("wl"), m1, c, 1, 1)})
			r := b.Layer("Conv", name("r"), []string{cur, w(name("wr"), m2, c, 3, 3)}, model.IntsAttr("pads", 1, 1, 1, 1))
			cur = b.Layer("Concat", name("cat"), []string{l, r}, model.IntAttr("axis", 1))
			c = m1 + m2
		default:
			m, k := widths[rng.Intn(2)], 1+2*rng.Intn(2)
			var attrs []model.Attr
			if k == 3 {
				attrs = append(attrs, model.IntsAttr("pads", 1, 1, 1, 1))
			}
			cur = b.Layer("Conv", name("conv"), []string{cur, w(name("w"), m, c, k, k), w(name("b"), m)}, attrs...)
			c = m
			// A residual from an earlier tensor of the same shape, if there is one.
			for _, r := range recent {
				if r.c == c && r.hw == hw && rng.Intn(2) == 0 {
					cur = b.Layer("Add", name("add"), []string{cur, r.name})
					break
				}
			}
			cur = b.Layer("Relu", name("relu"), []string{cur})
		}
		recent = append(recent, tensor{cur, c, hw})
	}
	gap := b.Layer("GlobalAveragePool", "gap", []string{cur})
	flat := b.Layer("Flatten", "flat", []string{gap}, model.IntAttr("axis", 1))
	b.Output(b.Layer("Gemm", "fc", []string{flat, w("wfc", 5, c), w("bfc", 5)}, model.IntAttr("transB", 1)))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSplitBatchRandomNetworks: on seeded random networks, the split network's outputs
// match the unsplit one's. A half that waited only on its own half of the steps whose
// memory it reuses (not on both) fails it, as it does TestSplitBatchMatchesWhole.
func TestSplitBatchRandomNetworks(t *testing.T) {
	whole := newTestEngine(t, Options{SplitBatch: Off, Queue: QueueOutOfOrder})
	split := newTestEngine(t, Options{SplitBatch: On, Queue: QueueOutOfOrder})
	seeds := int64(1)
	if fullSweeps {
		seeds = 4
	}
	for seed := int64(1); seed <= seeds; seed++ {
		batch := 4 // one batch (and half), so the seeds share programs
		wn, err := whole.Compile(randomChainModel(t, seed, batch))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		sn, err := split.Compile(randomChainModel(t, seed, batch))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(sn.SplitLayers()) == 0 {
			t.Fatalf("seed %d: nothing split", seed)
		}
		shape := wn.Inputs()[0].Shape
		in := map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(seed)), shape...)}
		inferAlike(t, fmt.Sprintf("seed %d", seed), wn, sn, in)
	}
}

// TestSplitBatchClaimedGroups: an inverted residual block tall enough that its bands
// hold several groups of rows claims its groups at run time (pwdwr's DYN), in each half
// of a split batch with counters of its own, kept out of the memory plan (another
// layer's temporaries there would leave them non-zero); over several inferences the
// split and whole networks match.
func TestSplitBatchClaimedGroups(t *testing.T) {
	const batch = 4
	build := func() *model.Model {
		b := model.NewBuilder("claims")
		rng := rand.New(rand.NewSource(9))
		w := func(name string, shape ...int) string { return uniformConsts(b, rng, 0.3)(name, shape...) }
		clip := func(name, in string) string {
			return b.Layer("Clip", name, []string{in}, model.FloatAttr("min", 0), model.FloatAttr("max", 6))
		}
		x := b.Input("x", model.Float32, batch, 24, 40, 40)
		ex := clip("exc", b.Layer("Conv", "ex", []string{x, w("wex", 96, 24, 1, 1), w("bex", 96)}))
		dw := clip("dwc", b.Layer("Conv", "dw", []string{ex, w("wdw", 96, 1, 3, 3), w("bdw", 96)},
			model.IntsAttr("pads", 1, 1, 1, 1), model.IntAttr("group", 96)))
		pj := b.Layer("Conv", "pj", []string{dw, w("wpj", 24, 96, 1, 1), w("bpj", 24)})
		b.Output(b.Layer("Add", "res", []string{pj, x}))
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	dump := t.TempDir()
	whole := newTestEngine(t, Options{SplitBatch: Off, Queue: QueueOutOfOrder})
	split := newTestEngine(t, Options{SplitBatch: On, Queue: QueueOutOfOrder, DumpKernels: dump})
	wn, err := whole.Compile(build())
	if err != nil {
		t.Fatal(err)
	}
	sn, err := split.Compile(build())
	if err != nil {
		t.Fatal(err)
	}
	if got := sn.SplitLayers(); !slices.Contains(got, "ex") {
		t.Fatalf("split layers %v: the block (ex) missing", got)
	}
	if !builtinkernels.DeviceInfoOf(split.device).IsGPU {
		files, _ := filepath.Glob(filepath.Join(dump, opspec.InvertedResidualType+"_*.cl"))
		claims := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			claims = claims || strings.Contains(string(src), "#define DYN 1\n")
		}
		if !claims {
			t.Fatalf("no block program of %v claims its groups at run time", files)
		}
		// pwdwr's scratch 2 holds the counters: never a slot of the memory plan.
		for lane := range 2 {
			if _, ok := sn.slotBuf[scratchKey("ex", 2, lane)]; ok {
				t.Errorf("the counters of lane %d are in the memory plan", lane)
			}
		}
	}
	rng := rand.New(rand.NewSource(11))
	for run := range 3 {
		inferAlike(t, fmt.Sprintf("run %d", run), wn, sn, map[string]*Tensor{"x": randomTensor(rng, batch, 24, 40, 40)})
	}
}
