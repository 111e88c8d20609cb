package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdlib.h>

static void CL_CALLBACK free_host(cl_mem m, void *p) { free(p); }

// new_shared allocates page-aligned host memory and a buffer over it; the memory is
// freed when the driver destroys the buffer (after its sub-buffers), not before.
static cl_mem new_shared(cl_context ctx, cl_mem_flags flags, size_t size, void **out, cl_int *st) {
	void *p = NULL;
	if (posix_memalign(&p, 4096, size) != 0) {
		*st = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	cl_mem m = clCreateBuffer(ctx, flags | CL_MEM_USE_HOST_PTR, size, p, st);
	if (*st != CL_SUCCESS) {
		free(p);
		return NULL;
	}
	*st = clSetMemObjectDestructorCallback(m, free_host, p);
	if (*st != CL_SUCCESS) {
		clReleaseMemObject(m);
		return NULL;
	}
	*out = p;
	return m;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// NewSharedBuffer makes a buffer over host memory of its own (CL_MEM_USE_HOST_PTR) and
// returns that memory too. A CPU device's kernels (PoCL's) compute in it where it lies,
// so once the queue has finished the host reads what they wrote without a copy; a
// driver that keeps a copy of its own makes the bytes stale, which a caller can detect
// by a Fill it then does not see. The bytes are valid until the buffer and every view of
// it are released; the memory is freed then.
func (c *Context) NewSharedBuffer(flags MemFlags, size int) (*Buffer, []byte, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("%w (size %d bytes)", &Error{Call: "clCreateBuffer", Code: CodeInvalidBufferSize}, size)
	}
	var st C.cl_int
	var p unsafe.Pointer
	id := C.new_shared(c.id, C.cl_mem_flags(flags), C.size_t(size), &p, &st)
	if err := check("clCreateBuffer", st); err != nil {
		return nil, nil, fmt.Errorf("%w (size %d bytes of shared host memory)", err, size)
	}
	live.Add(1)
	b := &Buffer{id: id, size: size}
	runtime.SetFinalizer(b, (*Buffer).Release)
	return b, unsafe.Slice((*byte)(p), size), nil
}
