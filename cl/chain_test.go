package cl

import (
	"fmt"
	"strings"
	"testing"
)

// chainKernels builds vecSrc and returns add (c = a + a over n values) and scale (c *= 3),
// released when the test ends.
func chainKernels(t *testing.T, ctx *Context, n int, a []float32) (add, scale *Kernel, c *Buffer) {
	t.Helper()
	prog, err := ctx.BuildProgram(vecSrc, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prog.Release)
	add, _ = prog.Kernel("add")
	scale, _ = prog.Kernel("scale")
	t.Cleanup(add.Release)
	t.Cleanup(scale.Release)
	ba, _ := ctx.NewBufferFrom(MemReadOnly, floatsToBytes(a))
	c, _ = ctx.NewBuffer(MemReadWrite, 4*n)
	t.Cleanup(ba.Release)
	t.Cleanup(c.Release)
	for i, err := range []error{add.SetArgBuffer(0, ba), add.SetArgBuffer(1, ba), add.SetArgBuffer(2, c), add.SetArgInt32(3, int32(n)), scale.SetArgBuffer(0, c), scale.SetArgFloat32(1, 3)} {
		if err != nil {
			t.Fatalf("argument %d: %v", i, err)
		}
	}
	return add, scale, c
}

// TestChainOrdersAndReleases: on an out-of-order queue a chain's launches run in the
// order of their wait lists (add, then three scales: 2a·27), only the kept launch's
// event outlives the submission, and with every event kept the profile shows each
// launch starting after the one it waits on ended.
func TestChainOrdersAndReleases(t *testing.T) {
	ctx := newTestContext(t)
	for _, profiling := range []bool{false, true} {
		q, err := ctx.NewQueue(QueueOptions{OutOfOrder: true, Profiling: profiling})
		if err != nil {
			t.Fatal(err)
		}
		const n = 1 << 14
		a := make([]float32, n)
		for i := range a {
			a[i] = float32(i%89) - 40
		}
		add, scale, c := chainKernels(t, ctx, n, a)
		launches := []ChainLaunch{{Kernel: add, Global: []int{n}}}
		for i := 0; i < 3; i++ {
			launches = append(launches, ChainLaunch{Kernel: scale, Global: []int{n}, Local: []int{64}, Wait: []int{i}})
		}
		keep := []bool{profiling, profiling, profiling, true}
		chain, err := NewChain(launches, keep)
		if err != nil {
			t.Fatal(err)
		}
		before := LiveObjects()
		evs, failed, err := q.SubmitChain(chain, true)
		if err != nil || failed != -1 {
			t.Fatalf("submit: launch %d: %v", failed, err)
		}
		held := 0
		for i, e := range evs {
			if (e != nil) != keep[i] {
				t.Errorf("launch %d: event handed back %v, kept %v", i, e != nil, keep[i])
			}
			if e != nil {
				held++
			}
		}
		if got := LiveObjects() - before; got != int64(held) {
			t.Errorf("%d live objects after the submission, want the %d kept events", got, held)
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
				t.Fatalf("profiling %v: out[%d] = %v, want %v", profiling, i, v, 54*a[i])
			}
		}
		if profiling {
			var prevEnd uint64
			for i, e := range evs {
				_, start, end, err := e.Profile()
				if err != nil {
					t.Fatal(err)
				}
				if start < prevEnd {
					t.Errorf("launch %d started at %d, before launch %d ended at %d", i, start, i-1, prevEnd)
				}
				prevEnd = end
			}
		}
		for _, e := range evs {
			e.Release()
		}
		if got := LiveObjects(); got != before {
			t.Errorf("live objects %d after releasing the events, want %d", got, before)
		}
		if err := q.Finish(); err != nil {
			t.Fatal(err)
		}
		q.Release()
	}
}

// TestChainInOrderWithoutEvents: on an in-order queue a chain makes no events at all.
func TestChainInOrderWithoutEvents(t *testing.T) {
	ctx := newTestContext(t)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	const n = 256
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i)
	}
	add, scale, c := chainKernels(t, ctx, n, a)
	chain, err := NewChain([]ChainLaunch{{Kernel: add, Global: []int{n}}, {Kernel: scale, Global: []int{n}, Wait: []int{0}}}, []bool{false, true})
	if err != nil {
		t.Fatal(err)
	}
	before := LiveObjects()
	evs, _, err := q.SubmitChain(chain, false)
	if err != nil || evs != nil {
		t.Fatalf("submit without events: %v, events %v", err, evs)
	}
	if got := LiveObjects(); got != before {
		t.Errorf("%d live objects, want %d", got, before)
	}
	out := make([]byte, 4*n)
	if err := q.Read(c, 0, out, nil); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesToFloats(out) {
		if v != 6*a[i] {
			t.Fatalf("out[%d] = %v, want %v", i, v, 6*a[i])
		}
	}
}

// TestChainErrors: NewChain refuses waits on later launches and mismatched keep flags;
// a launch the driver refuses is named, and the events still held come back.
func TestChainErrors(t *testing.T) {
	ctx := newTestContext(t)
	add, scale, _ := chainKernels(t, ctx, 64, make([]float32, 64))
	if _, err := NewChain([]ChainLaunch{{Kernel: add, Global: []int{64}, Wait: []int{1}}, {Kernel: scale, Global: []int{64}}}, []bool{false, false}); err == nil || !strings.Contains(err.Error(), "not an earlier one") {
		t.Errorf("wait on a later launch: %v", err)
	}
	if _, err := NewChain([]ChainLaunch{{Kernel: add, Global: []int{64}}}, nil); err == nil {
		t.Error("keep flags of the wrong length accepted")
	}
	if _, err := NewChain([]ChainLaunch{{Kernel: add, Global: []int{1, 2, 3, 4}}}, []bool{false}); err == nil {
		t.Error("four work dimensions accepted")
	}

	prog, err := ctx.BuildProgram(vecSrc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Release()
	unset, _ := prog.Kernel("scale") // arguments never set: the enqueue fails
	defer unset.Release()
	q, err := ctx.NewQueue(QueueOptions{OutOfOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	chain, err := NewChain([]ChainLaunch{{Kernel: add, Global: []int{64}}, {Kernel: unset, Global: []int{64}, Wait: []int{0}}}, []bool{false, true})
	if err != nil {
		t.Fatal(err)
	}
	evs, failed, err := q.SubmitChain(chain, true)
	if err == nil || failed != 1 || !strings.Contains(err.Error(), `"scale"`) {
		t.Fatalf("failing launch: index %d, error %v", failed, err)
	}
	if evs[0] == nil {
		t.Error("launch 0's event, which only the failed launch would have released, did not come back")
	}
	for _, e := range evs {
		e.Release()
	}
	if err := q.Finish(); err != nil {
		t.Fatal(err)
	}
}

// TestChainReleaseSchedule: an event not kept is released exactly once, right after the
// last launch that waits on it (or its own, when none does); a kept one never is.
func TestChainReleaseSchedule(t *testing.T) {
	chain := waitChain(t, [][]int{nil, {0}, {0}, {1, 2}, nil}, []bool{false, false, false, true, false})
	want := [][]int{{}, {}, {0}, {1, 2}, {4}}
	for i, w := range want {
		var got []int
		for r := chain.relStart[i]; r < chain.relStart[i+1]; r++ {
			got = append(got, int(chain.relIdx[r]))
		}
		if fmt.Sprint(got) != fmt.Sprint(w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("after launch %d releases %v, want %v", i, got, w)
		}
	}
}

// TestChainReducesWaits: a wait that another wait of the same launch already implies,
// directly or through a longer path, is dropped, as are repeats; independent waits stay,
// in their order; and the release schedule follows the reduced lists (an event whose
// only waiter dropped it is released after its last remaining waiter).
func TestChainReducesWaits(t *testing.T) {
	chain := waitChain(t, [][]int{
		nil,
		{0},
		{1},
		{0, 2},    // 0 before 2 through 1
		{1, 3, 1}, // 1 before 3
		nil,
		{5, 4, 0}, // 0 before 4; 5 is independent
	}, []bool{false, false, false, false, false, false, true})
	want := [][]int{nil, {0}, {1}, {2}, {3}, nil, {5, 4}}
	for i, w := range want {
		if got := chain.Waits(i); fmt.Sprint(got) != fmt.Sprint(w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("launch %d waits on %v, want %v", i, got, w)
		}
	}
	// 0 is now waited on by 1 alone.
	for r := chain.relStart[1]; r < chain.relStart[2]; r++ {
		if chain.relIdx[r] == 0 {
			return
		}
	}
	t.Error("launch 0's event is not released right after launch 1")
}

// waitChain is a chain of one small kernel, launch i waiting on waits[i], for tests of
// the chain's bookkeeping.
func waitChain(t *testing.T, waits [][]int, keep []bool) *Chain {
	t.Helper()
	add, _, _ := chainKernels(t, newTestContext(t), 64, make([]float32, 64))
	var launches []ChainLaunch
	for _, w := range waits {
		launches = append(launches, ChainLaunch{Kernel: add, Global: []int{64}, Wait: w})
	}
	chain, err := NewChain(launches, keep)
	if err != nil {
		t.Fatal(err)
	}
	return chain
}
