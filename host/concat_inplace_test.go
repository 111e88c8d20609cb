package host

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// fireModel is a SqueezeNet-style fire module over input shape xs: a 1×1 conv and a
// 3×3 conv (4 → 3 and 4 → 5 channels, with bias), concatenated on the channels and
// passed through a 1×1 conv of 8 → 4 channels plus x (the output). With alsoRead, a Relu reads the 1×1
// conv's output too (a second output); with concatOut the Concat is itself the output.
// It returns the model and, per output name, the reference values for input x.
func fireModel(t *testing.T, xs []int, x []float32, alsoRead, concatOut bool) (*model.Model, map[string][]float32) {
	t.Helper()
	w1s, w3s, wps := []int{3, 4, 1, 1}, []int{5, 4, 3, 3}, []int{4, 8, 1, 1}
	w1, b1 := ctRandSlice(60, elements(w1s), -0.5, 0.5), ctRandSlice(61, 3, -0.2, 0.2)
	w3, b3 := ctRandSlice(62, elements(w3s), -0.5, 0.5), ctRandSlice(63, 5, -0.2, 0.2)
	wp, bp := ctRandSlice(64, elements(wps), -0.5, 0.5), ctRandSlice(65, 4, -0.2, 0.2)
	b := model.NewBuilder("fire")
	in := b.Input("x", model.Float32, xs...)
	e1 := b.Layer("Conv", "e1", []string{in, b.ConstFloat32("w1", w1s, w1), b.ConstFloat32("b1", w1s[:1], b1)}, model.IntsAttr("kernel_shape", 1, 1))
	e3 := b.Layer("Conv", "e3", []string{in, b.ConstFloat32("w3", w3s, w3), b.ConstFloat32("b3", w3s[:1], b3)},
		model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	cat := b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1))
	ref := map[string][]float32{}
	r1, s1 := ctConv(x, xs, w1, w1s, b1, 0, 1)
	r3, _ := ctConv(x, xs, w3, w3s, b3, 1, 1)
	plane := s1[2] * s1[3]
	var rc []float32
	for n := 0; n < xs[0]; n++ {
		rc = append(rc, r1[n*3*plane:(n+1)*3*plane]...)
		rc = append(rc, r3[n*5*plane:(n+1)*5*plane]...)
	}
	if concatOut {
		b.Output(cat)
		ref[cat] = rc
	} else {
		// proj + x: x stays alive through proj, so proj's output reuses no memory that the
		// convs read, and proj is ordered after them by the Concat alone.
		y := b.Layer("Conv", "proj", []string{cat, b.ConstFloat32("wp", wps, wp), b.ConstFloat32("bp", wps[:1], bp)}, model.IntsAttr("kernel_shape", 1, 1))
		sum := b.Layer("Add", "sum", []string{y, in})
		b.Output(sum)
		rp, _ := ctConv(rc, []int{xs[0], 8, xs[2], xs[3]}, wp, wps, bp, 0, 1)
		for i := range rp {
			rp[i] += x[i]
		}
		ref[sum] = rp
	}
	if alsoRead {
		r := b.Layer("Relu", "relu", []string{e1})
		b.Output(r)
		ref[r] = ctMap(r1, func(v float32) float32 { return max(v, 0) })
	}
	return ctBuild(t, b), ref
}

// TestConcatInPlace: the convs write straight into the Concat's output and the Concat
// launches nothing, at batch 1 and, with their images a Concat image apart, at batch 2,
// on both kinds of queue and through repeated inferences over reused memory; with an
// input read elsewhere, with the Concat as a graph output, or with reuse slots instead
// of the arena, it copies as before. Results match the plain computation either way.
func TestConcatInPlace(t *testing.T) {
	cases := []struct {
		name                string
		batch               int
		alsoRead, concatOut bool
		opts                Options
		inPlace             bool
	}{
		{"batch1", 1, false, false, Options{}, true},
		{"batch1 in-order", 1, false, false, Options{Queue: QueueInOrder}, true},
		{"batch2", 2, false, false, Options{}, true},
		{"batch3 in-order", 3, false, false, Options{Queue: QueueInOrder}, true},
		{"batch2 input read twice", 2, true, false, Options{}, false},
		{"batch2 reuse slots", 2, false, false, Options{Arena: Off}, false},
		{"input read twice", 1, true, false, Options{}, false},
		{"concat is an output", 1, false, true, Options{}, false},
		{"reuse slots", 1, false, false, Options{Arena: Off}, false},
		{"kept intermediates", 1, false, false, Options{KeepIntermediates: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := []int{c.batch, 4, 6, 5}
			x := ctRand(66, xs...)
			m, ref := fireModel(t, xs, x.Data, c.alsoRead, c.concatOut)
			c.opts.NoGlobalConfig = true
			n, _ := ctCompile(t, c.opts, m)
			var cat *step
			for _, s := range n.steps {
				if s.layer == "cat" {
					cat = s
				}
			}
			if cat == nil {
				t.Fatal("no step for the Concat")
			}
			if inPlace := len(cat.launches) == 0; inPlace != c.inPlace {
				t.Fatalf("Concat in place: %v, want %v (%s)", inPlace, c.inPlace, cat.desc)
			}
			if c.inPlace && !c.concatOut {
				// proj reads the Concat's output: its launch waits on both convs'.
				launchOf := map[string]int{}
				for i, at := range n.launchAt {
					launchOf[n.steps[at[0]].layer] = i
				}
				waits := n.chain.Waits(launchOf["proj"])
				if !slices.Contains(waits, launchOf["e1"]) || !slices.Contains(waits, launchOf["e3"]) {
					t.Errorf("proj's launch waits on launches %v; e1's is %d, e3's %d", waits, launchOf["e1"], launchOf["e3"])
				}
			}
			for rep := 0; rep < 3; rep++ {
				out := ctInfer(t, n, map[string]*Tensor{"x": x})
				for name, want := range ref {
					ctClose(t, fmt.Sprintf("%s, inference %d", name, rep), out[name].Data, want, 1e-4)
				}
			}
		})
	}
}

// TestConcatInPlaceTuned: the tuner times the producers' candidate plans with their
// images a Concat image apart (on output buffers of Plan.OutputSpan elements: the
// contiguous size made NVIDIA's driver lose the context), and the tuned network still
// writes in place and matches the plain computation.
func TestConcatInPlaceTuned(t *testing.T) {
	xs := []int{2, 4, 6, 5}
	x := ctRand(67, xs...)
	m, ref := fireModel(t, xs, x.Data, false, false)
	n, log := ctCompile(t, Options{NoGlobalConfig: true, Tune: On, CacheDir: t.TempDir()}, m)
	if strings.Contains(log.String(), "tuning layer") {
		t.Errorf("tuning failed:\n%s", log)
	}
	for _, s := range n.steps {
		if s.layer == "cat" && len(s.launches) != 0 {
			t.Fatalf("the Concat copies (%s)", s.desc)
		}
	}
	out := ctInfer(t, n, map[string]*Tensor{"x": x})
	for name, want := range ref {
		ctClose(t, name, out[name].Data, want, 1e-4)
	}
}

// TestConcatInPlaceMixedProducers: at batch 2 a Concat of a Conv's output and a Relu's
// (which cannot write its images apart) is copied, and the Conv writes its own tensor.
func TestConcatInPlaceMixedProducers(t *testing.T) {
	xs, ws := []int{2, 3, 5, 4}, []int{4, 3, 1, 1}
	x := ctRand(70, xs...)
	w := ctRandSlice(71, elements(ws), -0.5, 0.5)
	b := model.NewBuilder("mixed")
	in := b.Input("x", model.Float32, xs...)
	c := b.Layer("Conv", "c", []string{in, b.ConstFloat32("w", ws, w)}, model.IntsAttr("kernel_shape", 1, 1))
	r := b.Layer("Relu", "r", []string{in})
	cat := b.Layer("Concat", "cat", []string{c, r}, model.IntAttr("axis", 1))
	b.Output(b.Layer("Sigmoid", "s", []string{cat}))
	m := ctBuild(t, b)
	n, _ := ctCompile(t, Options{NoGlobalConfig: true}, m)
	for _, s := range n.steps {
		if s.layer == "cat" && len(s.launches) == 0 {
			t.Fatal("the Concat is in place although the Relu cannot write its images apart")
		}
	}
	for _, l := range n.Model.Layers {
		if l.Name == "c" && l.Has(opspec.OutputBatchStrideAttr) {
			t.Error("the Conv keeps its output batch stride")
		}
	}
	rc, _ := ctConv(x.Data, xs, w, ws, make([]float32, 4), 0, 1)
	plane := xs[2] * xs[3]
	var want []float32
	for i := 0; i < xs[0]; i++ {
		want = append(want, rc[i*4*plane:(i+1)*4*plane]...)
		want = append(want, ctMap(x.Data[i*3*plane:(i+1)*3*plane], func(v float32) float32 { return max(v, 0) })...)
	}
	want = ctMap(want, func(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) })
	out := ctInfer(t, n, map[string]*Tensor{"x": x})
	ctClose(t, "output", out[n.Model.Outputs[0]].Data, want, 1e-5)
}

// TestReplanDeclinedStrides: when one producer's plan (a tuned one, say) does not honour
// the stride its Concat asked for, every producer loses the attribute, and one whose
// plan spread its output is planned again, contiguous.
func TestReplanDeclinedStrides(t *testing.T) {
	xs := []int{2, 4, 6, 5}
	m, _ := fireModel(t, xs, ctRand(72, xs...).Data, false, false)
	n, _ := ctCompile(t, Options{NoGlobalConfig: true}, m)
	idx := map[string]int{}
	for i, l := range n.Model.Layers {
		idx[l.Name] = i
	}
	var prepared []*preparedLayer
	for _, name := range []string{"e1", "e3"} {
		l := &n.Model.Layers[idx[name]]
		if !l.Has(opspec.OutputBatchStrideAttr) {
			t.Fatalf("%s was not asked for a stride", name)
		}
		p, err := n.prepare(l)
		if err != nil {
			t.Fatal(err)
		}
		prepared = append(prepared, p)
	}
	declined := *prepared[1].plan
	declined.OutputBatchStride = 0
	prepared[1].plan = &declined
	stepOf := map[int]int{idx["e1"]: 0, idx["e3"]: 1}
	if err := n.replanDeclinedStrides(map[int][]int{idx["cat"]: {idx["e1"], idx["e3"]}}, prepared, stepOf); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"e1", "e3"} {
		if n.Model.Layers[idx[name]].Has(opspec.OutputBatchStrideAttr) {
			t.Errorf("%s keeps its stride attribute", name)
		}
		if prepared[i].plan.OutputBatchStride != 0 {
			t.Errorf("%s's plan still spreads its output", name)
		}
	}
}
