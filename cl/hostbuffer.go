package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// HostBuffer is host memory the device copies from and to without an intermediate
// copy: a CL_MEM_ALLOC_HOST_PTR buffer (pinned memory on discrete GPUs) mapped once for
// its whole life, the pattern NVIDIA's OpenCL guide gives for fast transfers. Copies
// from ordinary (pageable) Go memory go through the driver's own staging buffers in
// small pieces, one after the other; from a HostBuffer they run at the bus's speed and
// can be enqueued without blocking, because the memory is C memory that does not move.
type HostBuffer struct {
	released
	buf *Buffer
	q   *Queue
	ptr unsafe.Pointer
	// Bytes is the mapped memory. Write into it before enqueueing a WriteFrom, and
	// read it only after the ReadInto that fills it has completed.
	Bytes []byte
}

// NewHostBuffer allocates and maps size bytes of host memory for transfers on q.
func (q *Queue) NewHostBuffer(size int) (*HostBuffer, error) {
	b, err := q.ctx.NewBuffer(MemReadWrite|MemAllocHostPtr, size)
	if err != nil {
		return nil, err
	}
	var st C.cl_int
	ptr := C.clEnqueueMapBuffer(q.id, b.id, C.CL_TRUE, C.CL_MAP_READ|C.CL_MAP_WRITE, 0, C.size_t(size), 0, nil, nil, &st)
	if err := check("clEnqueueMapBuffer", st); err != nil {
		b.Release()
		return nil, fmt.Errorf("%w (size %d bytes)", err, size)
	}
	live.Add(1)
	h := &HostBuffer{buf: b, q: q, ptr: ptr, Bytes: unsafe.Slice((*byte)(ptr), size)}
	runtime.SetFinalizer(h, (*HostBuffer).Release)
	return h, nil
}

// Release unmaps and frees the memory; Bytes must not be used afterwards. Safe to call
// more than once. The queue it was made on must still be alive.
func (h *HostBuffer) Release() {
	if h == nil || !h.once() {
		return
	}
	runtime.SetFinalizer(h, nil)
	h.Bytes = nil
	if !h.q.Released() {
		C.clEnqueueUnmapMemObject(h.q.id, h.buf.id, h.ptr, 0, nil, nil)
		C.clFinish(h.q.id)
	}
	h.buf.Release()
	live.Add(-1)
}

func (h *HostBuffer) region(what string, off, size int) error {
	if off < 0 || size < 0 || off+size > len(h.Bytes) {
		return fmt.Errorf("%w: %s of %d bytes at %d of a %d-byte host buffer", &Error{Call: what, Code: CodeInvalidValue}, what, size, off, len(h.Bytes))
	}
	return nil
}

// WriteFrom enqueues a copy of size bytes from h at hostOffset into dst at offset and
// returns without waiting: h.Bytes in that range must stay unchanged until the copy
// completes (Finish, or a later command that waits on it).
func (q *Queue) WriteFrom(dst *Buffer, offset int, h *HostBuffer, hostOffset, size int, wait []*Event) error {
	if size == 0 {
		return nil
	}
	if err := h.region("clEnqueueWriteBuffer", hostOffset, size); err != nil {
		return err
	}
	if offset < 0 || offset+size > dst.size {
		return fmt.Errorf("%w: write of %d bytes at %d into a %d-byte buffer", &Error{Call: "clEnqueueWriteBuffer", Code: CodeInvalidValue}, size, offset, dst.size)
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	st := C.clEnqueueWriteBuffer(q.id, dst.id, C.CL_FALSE, C.size_t(offset), C.size_t(size), unsafe.Add(h.ptr, hostOffset), C.cl_uint(len(wl)), listPtr(wl), nil)
	return check("clEnqueueWriteBuffer", st)
}

// ReadInto enqueues a copy of size bytes from src at offset into h at hostOffset and
// returns without waiting; h.Bytes holds the data once the copy completes.
func (q *Queue) ReadInto(h *HostBuffer, hostOffset int, src *Buffer, offset, size int, wait []*Event) error {
	if size == 0 {
		return nil
	}
	if err := h.region("clEnqueueReadBuffer", hostOffset, size); err != nil {
		return err
	}
	if offset < 0 || offset+size > src.size {
		return fmt.Errorf("%w: read of %d bytes at %d from a %d-byte buffer", &Error{Call: "clEnqueueReadBuffer", Code: CodeInvalidValue}, size, offset, src.size)
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	st := C.clEnqueueReadBuffer(q.id, src.id, C.CL_FALSE, C.size_t(offset), C.size_t(size), unsafe.Add(h.ptr, hostOffset), C.cl_uint(len(wl)), listPtr(wl), nil)
	return check("clEnqueueReadBuffer", st)
}

// Barrier makes every command enqueued after it wait for every command enqueued
// before it; on an in-order queue that holds already.
func (q *Queue) Barrier() error {
	return check("clEnqueueBarrierWithWaitList", C.clEnqueueBarrierWithWaitList(q.id, 0, nil, nil))
}
