package host

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

// scratchModel: two 7×7 padded convolutions (each reads a zero-padded copy of its input
// in scratch on CPU devices) with a strided 1×1 between them, and a pool, so the later
// layers' activations can take the memory the first copy used.
func scratchModel(t testing.TB, batch int) *model.Model {
	b := model.NewBuilder("scratch")
	w := uniformConsts(b, rand.New(rand.NewSource(7)), 0.3)
	x := b.Input("x", model.Float32, batch, 3, 20, 20)
	c1 := b.Layer("Relu", "c1r", []string{b.Layer("Conv", "c1", []string{x, w("w1", 8, 3, 7, 7), w("b1", 8)},
		model.IntsAttr("pads", 3, 3, 3, 3))})
	s := b.Layer("Conv", "s", []string{c1, w("ws", 16, 8, 1, 1)}, model.IntsAttr("strides", 2, 2))
	c2 := b.Layer("Conv", "c2", []string{s, w("w2", 16, 16, 7, 7)}, model.IntsAttr("pads", 3, 3, 3, 3))
	b.Output(b.Layer("GlobalAveragePool", "gap", []string{c2}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestScratchInArena: per-inference scratch buffers (here the padded copies) are
// planned in the arena, one per half of a split layer: they count in the plan's
// figures, some share memory with activations not alive meanwhile, and the outputs
// match a network that keeps every tensor and buffer apart, over several inferences
// with the batch split and not.
func TestScratchInArena(t *testing.T) {
	const batch = 4
	apart := newTestEngine(t, Options{KeepIntermediates: true})
	an, err := apart.Compile(scratchModel(t, batch))
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []Mode{Off, On} {
		t.Run(fmt.Sprintf("split%d", split), func(t *testing.T) {
			e := newTestEngine(t, Options{SplitBatch: split, Queue: QueueOutOfOrder, Arena: On})
			n, err := e.Compile(scratchModel(t, batch))
			if err != nil {
				t.Fatal(err)
			}
			var scratch []*memTensor
			for _, mt := range n.mem {
				if mt.name[0] == 0 {
					scratch = append(scratch, mt)
				}
			}
			// Every layer that reads a padded copy has it planned, once per lane. Other
			// plans may have per-inference scratch too (split-K partial sums on GPUs).
			padded := 0
			for _, st := range n.steps {
				if !strings.Contains(st.desc, "conv_pad global") {
					continue
				}
				lanes := max(1, len(slices.Compact(slices.Clone(st.lanes))))
				for lane := range lanes {
					if _, ok := n.scratchRef(st.layer, 1, lane); !ok {
						t.Errorf("layer %q lane %d: its padded copy is not planned", st.layer, lane)
					}
				}
				padded += lanes
			}
			if padded == 0 && strings.Contains(e.device.Platform.Name, "Portable Computing Language") {
				t.Fatal("no layer reads a padded copy on PoCL, where both 7×7 layers should")
			}
			if len(scratch) < padded {
				t.Fatalf("%d scratch buffers planned, want at least the %d padded copies", len(scratch), padded)
			}
			var names []string
			for _, sc := range scratch {
				names = append(names, planLabel(sc.name))
			}
			t.Logf("scratch planned in the arena: %v", names)
			if len(scratch) > 0 {
				shared := 0
				for _, sc := range scratch {
					for _, mt := range n.mem {
						if mt.name[0] != 0 && sharesMemory(sc, mt, n.align) {
							shared++
						}
					}
				}
				if shared == 0 {
					t.Errorf("no scratch buffer shares memory with an activation: plan %d bytes, peak %d", n.PlannedBytes, n.PeakLiveBytes)
				}
			}
			if float64(n.PlannedBytes) > 1.1*float64(n.PeakLiveBytes) {
				t.Errorf("planned %d bytes, %.2f× the largest live set", n.PlannedBytes, float64(n.PlannedBytes)/float64(n.PeakLiveBytes))
			}
			rng := rand.New(rand.NewSource(11))
			for run := range 3 {
				in := map[string]*Tensor{"x": randomTensor(rng, batch, 3, 20, 20)}
				inferAlike(t, fmt.Sprintf("run %d", run), an, n, in)
			}
		})
	}
}
