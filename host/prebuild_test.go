package host

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/clhost/clhost/model"
)

// threeProgramModel is x → Relu → 2×2 MaxPool → GlobalAveragePool: three small
// programs.
func threeProgramModel(t testing.TB) *model.Model {
	b := model.NewBuilder("three")
	x := b.Input("x", model.Float32, 1, 3, 6, 6)
	r := b.Layer("Relu", "r", []string{x})
	p := b.Layer("MaxPool", "p", []string{r}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(b.Layer("GlobalAveragePool", "g", []string{p}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPrebuildInParallelWithProgress: Compile builds the network's programs several at
// once, reports each build to Options.Progress (0 of total first, then one step at a
// time up to total), and the network computes exactly what one built a program at a
// time computes. A second compile on the engine builds nothing and reports nothing.
func TestPrebuildInParallelWithProgress(t *testing.T) {
	t.Setenv("CLHOST_BUILD_THREADS", "4")
	var calls [][2]int
	e := newTestEngine(t, Options{NoGlobalConfig: true, Progress: func(done, total int, what string) {
		if what != "programs" {
			t.Errorf("progress of %q, want programs", what)
		}
		calls = append(calls, [2]int{done, total})
	}})
	n, err := e.Compile(threeProgramModel(t))
	if err != nil {
		t.Fatal(err)
	}
	total := len(n.progs)
	if total < 2 {
		t.Fatalf("the model needs %d programs; the test wants several", total)
	}
	want := [][2]int{}
	for i := 0; i <= total; i++ {
		want = append(want, [2]int{i, total})
	}
	if !slices.Equal(calls, want) {
		t.Errorf("progress %v, want %v", calls, want)
	}
	if e.programs.peakBuilding < 2 {
		t.Errorf("at most %d build in progress at once, want several", e.programs.peakBuilding)
	}
	calls = nil
	if _, err := e.Compile(threeProgramModel(t)); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Errorf("a compile with every program built reported %v", calls)
	}

	t.Setenv("CLHOST_BUILD_THREADS", "1")
	serial, err := newTestEngine(t, Options{NoGlobalConfig: true}).Compile(threeProgramModel(t))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(3)), 1, 3, 6, 6)}
	got, err := n.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := serial.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range ref {
		if !slices.Equal(got[name].Data, r.Data) {
			t.Errorf("output %s differs between parallel and serial builds", name)
		}
	}
}
