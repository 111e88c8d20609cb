package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#cgo noescape clEnqueueWriteBuffer
#cgo noescape clEnqueueReadBuffer
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Buffers: device memory, sub-buffers, and the queue's reads, writes, copies and fills.

// MemFlags are CL_MEM_* flags.
type MemFlags uint64

// Memory flags.
const (
	MemReadWrite    MemFlags = C.CL_MEM_READ_WRITE
	MemReadOnly     MemFlags = C.CL_MEM_READ_ONLY
	MemWriteOnly    MemFlags = C.CL_MEM_WRITE_ONLY
	MemAllocHostPtr MemFlags = C.CL_MEM_ALLOC_HOST_PTR
	memUseHostPtr   MemFlags = C.CL_MEM_USE_HOST_PTR
)

// Buffer is a device memory object.
type Buffer struct {
	released
	id   C.cl_mem
	size int
	// parent is the buffer a sub-buffer views, retained for as long as the sub-buffer
	// lives: some drivers (NVIDIA's) crash when a parent is released before its
	// sub-buffers, so the order of Release calls and finalizers must not matter.
	parent C.cl_mem
}

// NewBuffer allocates size bytes of device memory.
func (c *Context) NewBuffer(flags MemFlags, size int) (*Buffer, error) {
	return c.newBuffer(flags, size, nil)
}

// NewBufferFrom allocates a buffer holding a copy of data.
func (c *Context) NewBufferFrom(flags MemFlags, data []byte) (*Buffer, error) {
	if len(data) == 0 {
		return nil, &Error{Call: "clCreateBuffer", Code: CodeInvalidBufferSize}
	}
	return c.newBuffer(flags|C.CL_MEM_COPY_HOST_PTR, len(data), unsafe.Pointer(&data[0]))
}

func (c *Context) newBuffer(flags MemFlags, size int, host unsafe.Pointer) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w (size %d bytes)", &Error{Call: "clCreateBuffer", Code: CodeInvalidBufferSize}, size)
	}
	var st C.cl_int
	id := C.clCreateBuffer(c.id, C.cl_mem_flags(flags), C.size_t(size), host, &st)
	if err := check("clCreateBuffer", st); err != nil {
		return nil, fmt.Errorf("%w (size %d bytes)", err, size)
	}
	live.Add(1)
	b := &Buffer{id: id, size: size}
	runtime.SetFinalizer(b, (*Buffer).Release)
	return b, nil
}

// NewBufferOver makes a buffer whose storage is data itself (CL_MEM_USE_HOST_PTR), so a
// CPU device's kernels read the caller's memory where it lies, with no copy: PoCL's
// CPU devices use such memory directly. Other drivers may keep a copy of it, which the
// OpenCL contract makes them fill from data at creation. data is pinned with p, since
// the driver keeps its address past this call; until every command using the buffer
// has completed and the buffer is released, data must not change and p must stay
// pinned.
func (c *Context) NewBufferOver(flags MemFlags, data []byte, p *runtime.Pinner) (*Buffer, error) {
	if len(data) == 0 {
		return nil, &Error{Call: "clCreateBuffer", Code: CodeInvalidBufferSize}
	}
	p.Pin(&data[0])
	return c.newBuffer(flags|memUseHostPtr, len(data), unsafe.Pointer(&data[0]))
}

// Size is the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Sub returns a buffer that views size bytes of b from offset, which must be a multiple
// of the device's Device.BaseAlignBytes. The view keeps b alive; release both.
func (b *Buffer) Sub(flags MemFlags, offset, size int) (*Buffer, error) {
	if offset < 0 || size <= 0 || offset+size > b.size {
		return nil, fmt.Errorf("%w: region of %d bytes at %d in a %d-byte buffer", &Error{Call: "clCreateSubBuffer", Code: CodeInvalidValue}, size, offset, b.size)
	}
	region := C.cl_buffer_region{origin: C.size_t(offset), size: C.size_t(size)}
	var st C.cl_int
	id := C.clCreateSubBuffer(b.id, C.cl_mem_flags(flags), C.CL_BUFFER_CREATE_TYPE_REGION, unsafe.Pointer(&region), &st)
	if err := check("clCreateSubBuffer", st); err != nil {
		return nil, fmt.Errorf("%w (region of %d bytes at %d)", err, size, offset)
	}
	live.Add(1)
	C.clRetainMemObject(b.id)
	sub := &Buffer{id: id, size: size, parent: b.id}
	runtime.SetFinalizer(sub, (*Buffer).Release)
	return sub, nil
}

// Release frees the buffer. Safe to call more than once.
func (b *Buffer) Release() {
	if b == nil || !b.once() {
		return
	}
	runtime.SetFinalizer(b, nil)
	C.clReleaseMemObject(b.id)
	if b.parent != nil {
		C.clReleaseMemObject(b.parent)
	}
	live.Add(-1)
}

// Write copies src into the buffer at offset (bytes) and returns when the copy is done:
// Go memory may move, so the copy must finish before the call returns.
func (q *Queue) Write(b *Buffer, offset int, src []byte, wait []*Event) error {
	if len(src) == 0 {
		return nil
	}
	if offset < 0 || offset+len(src) > b.size {
		return fmt.Errorf("%w: write of %d bytes at %d into a %d-byte buffer", &Error{Call: "clEnqueueWriteBuffer", Code: CodeInvalidValue}, len(src), offset, b.size)
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	st := C.clEnqueueWriteBuffer(q.id, b.id, C.CL_TRUE, C.size_t(offset), C.size_t(len(src)), unsafe.Pointer(&src[0]), C.cl_uint(len(wl)), listPtr(wl), nil)
	return check("clEnqueueWriteBuffer", st)
}

// Read copies the buffer from offset (bytes) into dst and returns when the copy is done.
func (q *Queue) Read(b *Buffer, offset int, dst []byte, wait []*Event) error {
	if len(dst) == 0 {
		return nil
	}
	if offset < 0 || offset+len(dst) > b.size {
		return fmt.Errorf("%w: read of %d bytes at %d from a %d-byte buffer", &Error{Call: "clEnqueueReadBuffer", Code: CodeInvalidValue}, len(dst), offset, b.size)
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	st := C.clEnqueueReadBuffer(q.id, b.id, C.CL_TRUE, C.size_t(offset), C.size_t(len(dst)), unsafe.Pointer(&dst[0]), C.cl_uint(len(wl)), listPtr(wl), nil)
	return check("clEnqueueReadBuffer", st)
}

// Copy enqueues a device-side copy of size bytes and returns its event.
func (q *Queue) Copy(src, dst *Buffer, srcOffset, dstOffset, size int, wait []*Event) (*Event, error) {
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	var ev C.cl_event
	st := C.clEnqueueCopyBuffer(q.id, src.id, dst.id, C.size_t(srcOffset), C.size_t(dstOffset), C.size_t(size), C.cl_uint(len(wl)), listPtr(wl), &ev)
	if err := check("clEnqueueCopyBuffer", st); err != nil {
		return nil, err
	}
	return newEvent(ev), nil
}

// Fill enqueues filling size bytes at offset with a repeated pattern (1, 2, 4, ... 128
// bytes long; offset and size multiples of it).
func (q *Queue) Fill(b *Buffer, pattern []byte, offset, size int, wait []*Event) (*Event, error) {
	if len(pattern) == 0 {
		return nil, &Error{Call: "clEnqueueFillBuffer", Code: CodeInvalidValue}
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	var ev C.cl_event
	st := C.clEnqueueFillBuffer(q.id, b.id, unsafe.Pointer(&pattern[0]), C.size_t(len(pattern)), C.size_t(offset), C.size_t(size), C.cl_uint(len(wl)), listPtr(wl), &ev)
	if err := check("clEnqueueFillBuffer", st); err != nil {
		return nil, err
	}
	return newEvent(ev), nil
}
