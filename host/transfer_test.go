package host

import (
	"context"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
)

// TestPinnedTransfers: inputs and outputs copied through pinned host buffers (in pieces,
// from several goroutines, for an input of several MiB) give bit-identical results to
// the direct copies (on a CPU device, writes through a map filled by several goroutines),
// on in-order and out-of-order queues, inference after inference, with and without a
// deadline; Pinned Auto leaves a CPU device on direct copies.
func TestPinnedTransfers(t *testing.T) {
	shape := []int{1, 4, 512, 300} // 2.4 MiB: more than one copying goroutine
	b := model.NewBuilder("pinned")
	x := b.Input("x", model.Float32, shape...)
	a := b.Layer("Relu", "a", []string{x})
	s := b.Layer("Sigmoid", "s", []string{x})
	c := b.Layer("Add", "c", []string{a, s})
	b.Output(c, s)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(4))
	inputs := []*Tensor{randomTensor(rng, shape...), randomTensor(rng, shape...), randomTensor(rng, shape...)}

	direct := newTestEngine(t, Options{NoGlobalConfig: true})
	dn, err := direct.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if direct.device.IsGPU() != (dn.stageIn != nil) {
		t.Fatalf("Auto on a %v device: pinned buffers %v", direct.device.Type, dn.stageIn != nil)
	}
	var want []map[string]*Tensor
	for _, in := range inputs {
		out, err := dn.Infer(context.Background(), map[string]*Tensor{"x": in})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, out)
	}
	for _, queue := range []Options{{Queue: QueueInOrder}, {Queue: QueueOutOfOrder}} {
		queue.NoGlobalConfig, queue.Pinned = true, On
		e := newTestEngine(t, queue)
		n, err := e.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(n.stageIn) != 1 || len(n.stageOut) != 2 {
			t.Fatalf("pinned buffers: %d in, %d out; want 1 and 2", len(n.stageIn), len(n.stageOut))
		}
		for rep := range 2 {
			// The second pass has a deadline: its reads, both outputs' through their
			// pinned buffers before one Finish, run under awaitDeadline.
			ctx := context.Background()
			if rep == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			for i, in := range inputs {
				got, err := n.Infer(ctx, map[string]*Tensor{"x": in})
				if err != nil {
					t.Fatal(err)
				}
				for name, w := range want[i] {
					for j, v := range got[name].Data {
						if math.Float32bits(v) != math.Float32bits(w.Data[j]) {
							t.Fatalf("queue %d, pass %d, input %d: %s[%d] = %v through pinned buffers, %v directly", queue.Queue, rep, i, name, j, v, w.Data[j])
						}
					}
				}
			}
		}
	}
}
