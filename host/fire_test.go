package host

import (
	"math/rand"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// TestFireModules: on a CPU device a fire module (squeeze, two expansions with their Relus,
// Concat) compiles to one fused layer, and with KeepFires to the convolutions it stands
// for; GPUs keep the convolutions either way. Both forms give the same outputs over
// three inferences at batch 2, the fused one through its private squeezed bands.
func TestFireModules(t *testing.T) {
	b := model.NewBuilder("fire")
	consts := uniformConsts(b, rand.New(rand.NewSource(7)), 0.5)
	x := b.Input("x", model.Float32, 2, 6, 9, 11)
	relu := func(name, in string) string { return b.Layer("Relu", name, []string{in}) }
	s := relu("sr", b.Layer("Conv", "s", []string{x, consts("ws", 4, 6, 1, 1), consts("bs", 4)}))
	e1 := relu("e1r", b.Layer("Conv", "e1", []string{s, consts("we1", 3, 4, 1, 1), consts("be1", 3)}))
	e3 := relu("e3r", b.Layer("Conv", "e3", []string{s, consts("we3", 5, 4, 3, 3), consts("be3", 5)}, model.IntsAttr("pads", 1, 1, 1, 1)))
	b.Output(b.Layer("Concat", "cat", []string{e1, e3}, model.IntAttr("axis", 1)))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	fused, _ := ctCompile(t, Options{NoGlobalConfig: true}, m.Clone())
	kept, _ := ctCompile(t, Options{NoGlobalConfig: true, KeepFires: true}, m.Clone())
	types := func(n *Network) map[string]int {
		out := map[string]int{}
		for _, l := range n.Model.Layers {
			out[l.Type]++
		}
		return out
	}
	wantFused := fused.engine.device.IsCPU()
	if got := types(fused); (got[opspec.FireType] == 1 && got["Conv"] == 0) != wantFused {
		t.Errorf("default options: layer types %v (CPU device: %v)", got, wantFused)
	}
	if got := types(kept); got[opspec.FireType] != 0 || got["Conv"] != 3 {
		t.Errorf("KeepFires: layer types %v, want the three Convs", got)
	}
	for rep := range 3 {
		in := map[string]*Tensor{"x": ctRand(uint64(40+rep), 2, 6, 9, 11)}
		want := ctInfer(t, kept, in)
		got := ctInfer(t, fused, in)
		ctClose(t, "fused fire module", got["cat"].Data, want["cat"].Data, 1e-5)
	}
}
