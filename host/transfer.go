package host

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/clhost/clhost/cl"
)

// Inputs and outputs cross to the device either directly from the caller's Go memory (a
// blocking write the driver stages through its own small pinned buffers, one piece
// after the other) or through pinned host buffers of the network's own: each input is
// copied into its pinned buffer by several goroutines at once, each enqueueing the
// device copy of a piece as soon as the piece is in, so the bus transfer overlaps the
// host copy; a pageable write is a large share of a GPU inference (docs/runtime.md#transfers).
// On a CPU device the "device" memory is
// host memory already, so kernels read the inputs from the caller's memory itself
// (borrowed_inputs.go); an input that is copied all the same (Options.CopyInputs, a graph
// output) is written in place: the buffer's region is mapped (no copy on such a device)
// and filled by the same goroutines. A blocking write there is one memcpy on one driver
// thread, several times slower than the mapped fill (BenchmarkInputWrite in cl).

// pinned resolves Options.Pinned for the engine's device: a CPU's device memory is host
// memory already, so pinned buffers would only add a copy.
func (e *Engine) pinned() bool {
	switch e.opts.Pinned {
	case On:
		return true
	case Off:
		return false
	}
	// A device that calls itself a CPU too (oclgrind claims every type) shares host
	// memory: its kernels read the caller's inputs in place instead.
	return e.device.IsGPU() && !e.device.IsCPU()
}

// pinnedPiece is the size of one enqueued device copy: large enough that the enqueue
// cost is small against the transfer, small enough that the first copy starts early.
const pinnedPiece = 512 << 10

// pinnedStaging allocates a pinned host buffer per graph input and output.
func (n *Network) pinnedStaging() error {
	q := n.engine.queue
	for _, t := range n.inputs {
		h, err := q.NewHostBuffer(4 * elements(t.shape))
		if err != nil {
			return fmt.Errorf("input %q: pinned host buffer: %w", t.name, err)
		}
		n.stageIn = append(n.stageIn, h)
	}
	for _, t := range n.outputs {
		h, err := q.NewHostBuffer(4 * elements(t.shape))
		if err != nil {
			return fmt.Errorf("output %q: pinned host buffer: %w", t.name, err)
		}
		n.stageOut = append(n.stageOut, h)
	}
	return nil
}

// writeInputs enqueues the copies of every input to the device. They are complete, or
// ordered before every later command, when it returns.
func (n *Network) writeInputs(q *cl.Queue, inputs map[string]*Tensor) error {
	written := false
	for i, t := range n.inputs {
		if n.borrowed[t.name] != nil {
			continue // read where the caller has it (borrowed_inputs.go)
		}
		written = true
		src := float32Bytes(inputs[t.name].Data)
		if n.stageIn == nil && n.engine.device.IsCPU() {
			if err := writeMapped(q, t.buf, t.byteOff(), src); err != nil {
				return fmt.Errorf("input %q: %w", t.name, err)
			}
			continue
		}
		if n.stageIn == nil {
			if err := q.Write(t.buf, t.byteOff(), src, nil); err != nil {
				return fmt.Errorf("input %q: %w", t.name, err)
			}
			continue
		}
		if err := writePinned(q, t.buf, t.byteOff(), n.stageIn[i], src); err != nil {
			return fmt.Errorf("input %q: %w", t.name, err)
		}
	}
	if written && (n.stageIn != nil || n.engine.device.IsCPU()) && q.OutOfOrder {
		// Out of order, the kernels would not wait for non-blocking writes or unmaps.
		return q.Barrier()
	}
	return nil
}

// writePinned copies src into h and enqueues h's copy to dst at byte offset at, piece by
// piece, from a few goroutines that each take a contiguous share. Data already in h
// (src is h's own memory, Network.InputStaging) is not copied.
func writePinned(q *cl.Queue, dst *cl.Buffer, at int, h *cl.HostBuffer, src []byte) error {
	inPlace := sameMemory(src, h.Bytes)
	return inShares(len(src), func(lo, hi int) error {
		for off := lo; off < hi; off += pinnedPiece {
			end := min(off+pinnedPiece, hi)
			if !inPlace {
				copy(h.Bytes[off:end], src[off:end])
			}
			if err := q.WriteFrom(dst, at+off, h, off, end-off, nil); err != nil {
				return err
			}
			if err := q.Flush(); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeMapped copies src into dst at byte offset at through a map of that region, from
// a few goroutines that each take a contiguous share, and enqueues the unmap.
func writeMapped(q *cl.Queue, dst *cl.Buffer, at int, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	m, err := q.MapWrite(dst, at, len(src))
	if err != nil {
		return err
	}
	_ = inShares(len(src), func(lo, hi int) error {
		copy(m.Bytes[lo:hi], src[lo:hi])
		return nil
	})
	return m.Unmap()
}

// inShares splits n bytes into copyShares contiguous shares and runs work on each, from a
// goroutine per share when there are several; it returns the first error.
func inShares(n int, work func(lo, hi int) error) error {
	shares := copyShares(n)
	if shares == 1 {
		return work(0, n)
	}
	errs := make([]error, shares)
	var wg sync.WaitGroup
	for s := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[s] = work(n*s/shares, n*(s+1)/shares)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// copyShares is how many goroutines copy n bytes: one per 1 MiB, at most one per core
// and 8 in all (memory bandwidth, not cores, bounds a copy beyond that).
func copyShares(n int) int {
	return max(1, min(n>>20, runtime.GOMAXPROCS(0), 8))
}

// readOutput enqueues the copy of output i from the device into data once wait has
// completed. Through a pinned buffer the copy into data waits for the caller's Finish
// (copyStagedOutput), so that several outputs take one round trip to the device.
func (n *Network) readOutput(q *cl.Queue, i int, data []float32, wait []*cl.Event) error {
	t := n.outputs[i]
	dst := float32Bytes(data)
	if n.stageOut == nil {
		return q.Read(t.buf, t.byteOff(), dst, wait)
	}
	return q.ReadInto(n.stageOut[i], 0, t.buf, t.byteOff(), len(dst), wait)
}

// copyStagedOutput copies output i from its pinned buffer into data, once the queue has
// finished the read readOutput enqueued.
func (n *Network) copyStagedOutput(i int, data []float32) {
	if n.stageOut != nil {
		copy(float32Bytes(data), n.stageOut[i].Bytes)
	}
}
