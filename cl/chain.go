package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

// submit_chain enqueues launches [0, n) in order. Launch i runs kernels[i] over dims[i]
// dimensions of global[3i..] (local[3i..] when has_local[i]), after the events of the
// launches wait_idx[wait_start[i] .. wait_start[i+1]). With evs NULL nothing waits and no
// event is made (an in-order queue). Otherwise evs[i] receives launch i's event, and the
// events of launches rel_idx[rel_start[i] .. rel_start[i+1]) are released once launch i
// is enqueued and set to NULL, so that only a few events are alive at a time. On failure
// it stores the failing launch in *failed and returns the status; the events still held
// stay in evs for the caller to release. With kept_only (an in-order queue whose caller
// wants some events), only the launches it flags make an event and nothing waits.
static cl_int submit_chain(cl_command_queue q, int n, cl_kernel *kernels, const cl_uint *dims,
                           const size_t *global, const size_t *local, const int *has_local,
                           const int *wait_start, const int *wait_idx,
                           const int *rel_start, const int *rel_idx,
                           cl_event *evs, const int *kept_only, int *failed) {
	cl_event wait[64];
	for (int i = 0; i < n; i++) {
		if (kept_only) {
			cl_int st = clEnqueueNDRangeKernel(q, kernels[i], dims[i], NULL, global + 3 * i,
			                                   has_local[i] ? local + 3 * i : NULL, 0, NULL,
			                                   kept_only[i] ? &evs[i] : NULL);
			if (st != CL_SUCCESS) {
				*failed = i;
				return st;
			}
			continue;
		}
		cl_uint nw = 0;
		if (evs) {
			for (int w = wait_start[i]; w < wait_start[i + 1] && nw < 64; w++) {
				if (evs[wait_idx[w]]) wait[nw++] = evs[wait_idx[w]];
			}
		}
		cl_int st = clEnqueueNDRangeKernel(q, kernels[i], dims[i], NULL, global + 3 * i,
		                                   has_local[i] ? local + 3 * i : NULL, nw, nw ? wait : NULL,
		                                   evs ? &evs[i] : NULL);
		if (st != CL_SUCCESS) {
			*failed = i;
			return st;
		}
		if (evs) {
			for (int r = rel_start[i]; r < rel_start[i + 1]; r++) {
				if (evs[rel_idx[r]]) {
					clReleaseEvent(evs[rel_idx[r]]);
					evs[rel_idx[r]] = NULL;
				}
			}
		}
	}
	return CL_SUCCESS;
}
*/
import "C"

import (
	"fmt"
	"slices"
)

// maxChainWaits is the most events one launch of a Chain waits on (submit_chain's stack
// list).
const maxChainWaits = 64

// ChainLaunch is one launch of a Chain: a kernel with its arguments set, its work sizes,
// and the earlier launches (indexes into the chain) it runs after.
type ChainLaunch struct {
	Kernel        *Kernel
	Global, Local []int
	Wait          []int
}

// Chain is a fixed list of kernel launches that a queue enqueues in one cgo call, as a
// network's inference does every time. Per launch, a Go enqueue costs a cgo call, an
// event object and its cleanup, and a release call; PoCL's enqueue is cheap enough that
// these showed as much more host time per layer than the same loop in C
// (docs/runtime.md#launch-chain). The chain keeps its launches' C arrays built once, and
// decides in advance which events are released when.
type Chain struct {
	kernels   []*Kernel // kept alive while the chain is
	ids       []C.cl_kernel
	dims      []C.cl_uint
	global    []C.size_t
	local     []C.size_t
	hasLocal  []C.int
	waitStart []C.int
	waitIdx   []C.int
	relStart  []C.int
	relIdx    []C.int
	keep      []bool
	keepC     []C.int // keep, for submit_chain's kept_only
	// evs and out are SubmitChain's event lists, reused from one submission to the next.
	evs []C.cl_event
	out []*Event
}

// NewChain prepares launches for SubmitChain. keep says, per launch, whether its event
// is handed back (for the caller to wait on, profile or check); every other event is
// released once the last launch that waits on it is enqueued, or at once if none does.
// A wait already implied by another (a launch that one of the others waits on, however
// indirectly) is dropped: a network's reuse of memory makes a launch wait on every
// earlier user of its memory, and PoCL's cost per enqueue on 16 cores grows with the
// length of the wait list.
func NewChain(launches []ChainLaunch, keep []bool) (*Chain, error) {
	if len(keep) != len(launches) {
		return nil, fmt.Errorf("NewChain: %d keep flags for %d launches", len(keep), len(launches))
	}
	n := len(launches)
	c := &Chain{
		kernels: make([]*Kernel, n), ids: make([]C.cl_kernel, n), dims: make([]C.cl_uint, n),
		global: make([]C.size_t, 3*n), local: make([]C.size_t, 3*n), hasLocal: make([]C.int, n),
		waitStart: make([]C.int, n+1), relStart: make([]C.int, n+1), keep: append([]bool(nil), keep...),
		evs: make([]C.cl_event, n), out: make([]*Event, n),
	}
	before := newOrder(n)
	lastWaiter := make([]int, n)
	for i := range lastWaiter {
		lastWaiter[i] = i // unwaited: released right after its own enqueue
	}
	for i, l := range launches {
		if l.Kernel == nil {
			return nil, fmt.Errorf("NewChain: launch %d has no kernel", i)
		}
		dims, g, lo, err := ndrange(l.Global, l.Local)
		if err != nil {
			return nil, fmt.Errorf("NewChain: launch %d (%s): %w", i, l.Kernel.Name, err)
		}
		c.kernels[i], c.ids[i], c.dims[i] = l.Kernel, l.Kernel.id, dims
		copy(c.global[3*i:], g[:])
		copy(c.local[3*i:], lo[:])
		if len(l.Local) != 0 {
			c.hasLocal[i] = 1
		}
		for _, w := range l.Wait {
			if w < 0 || w >= i {
				return nil, fmt.Errorf("NewChain: launch %d waits on launch %d, which is not an earlier one", i, w)
			}
		}
		waits := reduceWaits(l.Wait, before, i)
		if len(waits) > maxChainWaits {
			return nil, fmt.Errorf("NewChain: launch %d (%s) waits on %d launches, at most %d", i, l.Kernel.Name, len(waits), maxChainWaits)
		}
		for _, w := range waits {
			c.waitIdx = append(c.waitIdx, C.int(w))
			lastWaiter[w] = max(lastWaiter[w], i)
		}
		c.waitStart[i+1] = C.int(len(c.waitIdx))
	}
	releasedAt := make([][]int, n)
	for j, at := range lastWaiter {
		if !keep[j] {
			releasedAt[at] = append(releasedAt[at], j)
		}
	}
	for i := range n {
		for _, j := range releasedAt[i] {
			c.relIdx = append(c.relIdx, C.int(j))
		}
		c.relStart[i+1] = C.int(len(c.relIdx))
	}
	c.keepC = make([]C.int, n)
	for i, k := range keep {
		if k {
			c.keepC[i] = 1
		}
	}
	return c, nil
}

// Len is the number of launches.
func (c *Chain) Len() int { return len(c.ids) }

// Waits lists the launches that launch i waits on, for tests and diagnostics.
func (c *Chain) Waits(i int) []int {
	var out []int
	for w := c.waitStart[i]; w < c.waitStart[i+1]; w++ {
		out = append(out, int(c.waitIdx[w]))
	}
	return out
}

// SubmitChain enqueues the chain's launches. With events it returns, per launch, the
// event of each kept launch (nil elsewhere); without (an in-order queue), it makes no
// events and returns nil. On failure it returns the index of the failing launch and the
// events made so far that are still held, for the caller to release. The returned list
// is the chain's own and is reused by the next submission: a chain is for one caller
// at a time.
func (q *Queue) SubmitChain(c *Chain, events bool) ([]*Event, int, error) {
	return q.submitChain(c, events, false)
}

// SubmitChainKept is SubmitChain with events for an in-order queue, whose order alone
// runs each launch after the one before: only the kept launches make an event, and no
// launch waits on any. An event and a wait list per launch cost a driver's enqueue far
// more than the launch itself on some (NVIDIA's, with ResNet-18's 60-odd launches).
func (q *Queue) SubmitChainKept(c *Chain) ([]*Event, int, error) {
	if q.OutOfOrder {
		return nil, -1, fmt.Errorf("SubmitChainKept on an out-of-order queue: its launches would not wait on each other")
	}
	return q.submitChain(c, true, true)
}

func (q *Queue) submitChain(c *Chain, events, keptOnly bool) ([]*Event, int, error) {
	n := len(c.ids)
	if n == 0 {
		return nil, -1, nil
	}
	evs := c.evs
	var evp *C.cl_event
	if events {
		clear(evs)
		evp = &evs[0]
	}
	var widx, ridx *C.int
	if len(c.waitIdx) > 0 {
		widx = &c.waitIdx[0]
	}
	if len(c.relIdx) > 0 {
		ridx = &c.relIdx[0]
	}
	var kept *C.int
	if keptOnly {
		kept = &c.keepC[0]
	}
	failed := C.int(-1)
	st := C.submit_chain(q.id, C.int(n), &c.ids[0], &c.dims[0], &c.global[0], &c.local[0], &c.hasLocal[0],
		&c.waitStart[0], widx, &c.relStart[0], ridx, evp, kept, &failed)
	var out []*Event
	if events {
		out = c.out
		clear(out)
		for i, e := range evs {
			if e != nil {
				out[i] = newEvent(e)
			}
		}
	}
	if err := check("clEnqueueNDRangeKernel", st); err != nil {
		i := int(failed)
		k := c.kernels[i]
		return out, i, fmt.Errorf("kernel %q global %v local %v: %w", k.Name, c.global[3*i:3*i+int(c.dims[i])], c.local[3*i:3*i+int(c.dims[i])], err)
	}
	return out, -1, nil
}

// order records, per launch, the set of launches it runs after, directly or not, as
// bitsets over launch indexes.
type order struct {
	words int
	after [][]uint64
}

func newOrder(n int) *order {
	return &order{words: (n + 63) / 64, after: make([][]uint64, n)}
}

// precedes says whether launch a runs before launch b by the waits recorded so far.
func (o *order) precedes(a, b int) bool {
	return o.after[b] != nil && o.after[b][a/64]&(1<<(a%64)) != 0
}

// reduceWaits returns the waits of launch i that no other of its waits already implies,
// without repeats and in their order, and records what launch i runs after.
func reduceWaits(waits []int, o *order, i int) []int {
	var out []int
	for k, w := range waits {
		implied := slices.Contains(waits[:k], w)
		for _, v := range waits {
			if implied {
				break
			}
			implied = v != w && o.precedes(w, v)
		}
		if !implied {
			out = append(out, w)
		}
	}
	set := make([]uint64, o.words)
	for _, w := range out {
		set[w/64] |= 1 << (w % 64)
		for j, bits := range o.after[w] {
			set[j] |= bits
		}
	}
	o.after[i] = set
	return out
}
