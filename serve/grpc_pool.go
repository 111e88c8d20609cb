package serve

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"google.golang.org/grpc/mem"
)

// budgetPool is the gRPC transport's buffer pool, counting the buffers it hands out
// against the server's budget of bytes in flight until they come back: the frames of
// messages being received above all, which gRPC holds until a message is whole. It
// cannot refuse a buffer (the transport has read the frame by then); once what it
// counts takes the budget past its overdraft, over cancels the calls still receiving.
//
// The transport drops some buffers without putting them back (the frames queued for
// a call it ends): those give their bytes back when the collector frees them.
type budgetPool struct {
	inner mem.BufferPool
	b     *budget
	// overdraft is how far past its limit the budget may go before over is called.
	overdraft int64
	over      func()
	// held maps each buffer handed out (weakly, so that a dropped one can be freed)
	// to what it counted.
	held sync.Map // weak.Pointer[[]byte] → *heldBuffer
}

// heldBuffer is what one buffer handed out counts, given back once: when it is put
// back, or when the collector frees it.
type heldBuffer struct {
	size    int64
	back    atomic.Bool
	cleanup runtime.Cleanup
}

func (h *heldBuffer) giveBack(b *budget) {
	if h.back.CompareAndSwap(false, true) {
		b.used.Add(-h.size)
	}
}

// lostBuffer is the cleanup's argument: it must not refer to the buffer itself.
type lostBuffer struct {
	key weak.Pointer[[]byte]
	h   *heldBuffer
}

func (p *budgetPool) Get(n int) *[]byte {
	buf := p.inner.Get(n)
	h := &heldBuffer{size: int64(cap(*buf))}
	key := weak.Make(buf)
	p.held.Store(key, h)
	h.cleanup = runtime.AddCleanup(buf, p.lost, lostBuffer{key: key, h: h})
	if p.b.used.Add(h.size) > p.b.limit+p.overdraft && p.over != nil {
		p.over()
	}
	return buf
}

func (p *budgetPool) Put(buf *[]byte) {
	if v, ok := p.held.LoadAndDelete(weak.Make(buf)); ok {
		h := v.(*heldBuffer)
		h.cleanup.Stop()
		h.giveBack(p.b)
	}
	p.inner.Put(buf)
}

// lost gives back what a buffer never put back counted.
func (p *budgetPool) lost(l lostBuffer) {
	p.held.CompareAndDelete(l.key, l.h)
	l.h.giveBack(p.b)
}

// grpcOverdraft is how far gRPC messages still arriving may take the budget past its
// limit before they are cancelled: calls that arrive while it is nearly spent get
// RESOURCE_EXHAUSTED once in, as REST's get 429, rather than being cut.
func grpcOverdraft(limit int64) int64 { return limit / 2 }
