package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Mapping is a region of a buffer mapped into host memory for writing. On a CPU device
// the buffer is host memory already and the map is the memory itself, so the host can
// fill it with as many threads as it likes; a blocking write is one copy on one of the
// driver's threads.
type Mapping struct {
	q   *Queue
	buf *Buffer
	ptr unsafe.Pointer
	// Bytes is the mapped region: write it, then Unmap before any kernel reads it.
	Bytes []byte
}

// MapWrite maps size bytes of b at offset for writing, discarding what they held
// (CL_MAP_WRITE_INVALIDATE_REGION), and waits for the map to complete.
func (q *Queue) MapWrite(b *Buffer, offset, size int) (*Mapping, error) {
	if offset < 0 || size <= 0 || offset+size > b.size {
		return nil, fmt.Errorf("%w: map of %d bytes at %d of a %d-byte buffer", &Error{Call: "clEnqueueMapBuffer", Code: CodeInvalidValue}, size, offset, b.size)
	}
	var st C.cl_int
	ptr := C.clEnqueueMapBuffer(q.id, b.id, C.CL_TRUE, C.CL_MAP_WRITE_INVALIDATE_REGION, C.size_t(offset), C.size_t(size), 0, nil, nil, &st)
	if err := check("clEnqueueMapBuffer", st); err != nil {
		return nil, fmt.Errorf("%w (%d bytes at %d)", err, size, offset)
	}
	return &Mapping{q: q, buf: b, ptr: ptr, Bytes: unsafe.Slice((*byte)(ptr), size)}, nil
}

// Unmap enqueues the unmap; commands enqueued after it on an in-order queue, or that
// wait for it, see the written data. Bytes must not be used afterwards.
func (m *Mapping) Unmap() error {
	m.Bytes = nil
	return check("clEnqueueUnmapMemObject", C.clEnqueueUnmapMemObject(m.q.id, m.buf.id, m.ptr, 0, nil, nil))
}
