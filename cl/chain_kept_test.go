package cl

import "testing"

// TestChainKeptInOrder: on an in-order queue SubmitChainKept makes only the kept
// launches' events, the queue's order alone runs the launches one after another
// (add, then three scales: 2a·27), and an out-of-order queue refuses it.
func TestChainKeptInOrder(t *testing.T) {
	ctx := newTestContext(t)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	const n = 1 << 14
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i%89) - 40
	}
	add, scale, c := chainKernels(t, ctx, n, a)
	launches := []ChainLaunch{{Kernel: add, Global: []int{n}}}
	for i := 0; i < 3; i++ {
		launches = append(launches, ChainLaunch{Kernel: scale, Global: []int{n}, Wait: []int{i}})
	}
	keep := []bool{false, true, false, true}
	chain, err := NewChain(launches, keep)
	if err != nil {
		t.Fatal(err)
	}
	before := LiveObjects()
	evs, failed, err := q.SubmitChainKept(chain)
	if err != nil || failed != -1 {
		t.Fatalf("submit: launch %d: %v", failed, err)
	}
	for i, e := range evs {
		if (e != nil) != keep[i] {
			t.Errorf("launch %d: event handed back %v, kept %v", i, e != nil, keep[i])
		}
	}
	if got := LiveObjects() - before; got != 2 {
		t.Errorf("%d live objects after the submission, want the 2 kept events", got)
	}
	if err := evs[3].Wait(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := q.Read(c, 0, out, nil); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesToFloats(out) {
		if v != 54*a[i] {
			t.Fatalf("out[%d] = %v, want %v", i, v, 54*a[i])
		}
	}
	evs[1].Release()
	evs[3].Release()
	if got := LiveObjects(); got != before {
		t.Errorf("live objects %d after releasing the events, want %d", got, before)
	}
	ooo, err := ctx.NewQueue(QueueOptions{OutOfOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ooo.Release()
	if ooo.OutOfOrder {
		if _, _, err := ooo.SubmitChainKept(chain); err == nil {
			t.Error("an out-of-order queue took SubmitChainKept")
		}
	}
}
