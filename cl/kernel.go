package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdlib.h>
#cgo noescape clEnqueueNDRangeKernel
#cgo nocallback clEnqueueNDRangeKernel
#cgo noescape clSetKernelArg
#cgo nocallback clSetKernelArg
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Kernels: arguments, work-group queries, and enqueueing an NDRange.

// Kernel is one __kernel function of a program with its arguments. Setting arguments
// is not safe for concurrent use on one Kernel.
type Kernel struct {
	released
	id   C.cl_kernel
	Name string
	prog *Program
	// bufArgs is the buffer bound to each argument by SetArgBuffer (nil for others),
	// so a caller can find and rebind every argument that takes a given buffer.
	bufArgs []*Buffer
}

// Kernel creates the kernel of that name.
func (p *Program) Kernel(name string) (*Kernel, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var st C.cl_int
	id := C.clCreateKernel(p.id, cname, &st)
	if err := check("clCreateKernel", st); err != nil {
		return nil, fmt.Errorf("kernel %q: %w", name, err)
	}
	live.Add(1)
	k := &Kernel{id: id, Name: name, prog: p}
	runtime.SetFinalizer(k, (*Kernel).Release)
	return k, nil
}

// NumArgs is the number of arguments the kernel function declares.
func (k *Kernel) NumArgs() (int, error) {
	var n C.cl_uint
	if err := check("clGetKernelInfo", C.clGetKernelInfo(k.id, C.CL_KERNEL_NUM_ARGS, C.size_t(unsafe.Sizeof(n)), unsafe.Pointer(&n), nil)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// WorkGroupSize is the largest work-group the kernel can run with on its device.
func (k *Kernel) WorkGroupSize() (int, error) {
	var v C.size_t
	st := C.clGetKernelWorkGroupInfo(k.id, k.prog.ctx.Device.id, C.CL_KERNEL_WORK_GROUP_SIZE, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil)
	return int(v), check("clGetKernelWorkGroupInfo", st)
}

// LocalMemSize is the __local memory, in bytes, one work-group of the kernel uses on its
// device: its own __local variables and any __local arguments set.
func (k *Kernel) LocalMemSize() (int64, error) {
	var v C.cl_ulong
	st := C.clGetKernelWorkGroupInfo(k.id, k.prog.ctx.Device.id, C.CL_KERNEL_LOCAL_MEM_SIZE, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil)
	return int64(v), check("clGetKernelWorkGroupInfo", st)
}

// PreferredWorkGroupMultiple is the work-group size multiple the device runs best with.
func (k *Kernel) PreferredWorkGroupMultiple() (int, error) {
	var v C.size_t
	st := C.clGetKernelWorkGroupInfo(k.id, k.prog.ctx.Device.id, C.CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil)
	return int(v), check("clGetKernelWorkGroupInfo", st)
}

func (k *Kernel) setArg(i int, size uintptr, ptr unsafe.Pointer) error {
	if err := check("clSetKernelArg", C.clSetKernelArg(k.id, C.cl_uint(i), C.size_t(size), ptr)); err != nil {
		return fmt.Errorf("kernel %q argument %d: %w", k.Name, i, err)
	}
	if i < len(k.bufArgs) {
		k.bufArgs[i] = nil
	}
	return nil
}

// SetArgBuffer binds a buffer to argument i.
func (k *Kernel) SetArgBuffer(i int, b *Buffer) error {
	id := b.id
	if err := k.setArg(i, unsafe.Sizeof(id), unsafe.Pointer(&id)); err != nil {
		return err
	}
	if i >= len(k.bufArgs) {
		k.bufArgs = append(k.bufArgs, make([]*Buffer, i+1-len(k.bufArgs))...)
	}
	k.bufArgs[i] = b
	return nil
}

// ArgsBoundTo lists the arguments that SetArgBuffer last bound to b.
func (k *Kernel) ArgsBoundTo(b *Buffer) []int {
	var out []int
	for i, a := range k.bufArgs {
		if a == b {
			out = append(out, i)
		}
	}
	return out
}

// SetArgInt32 sets an int argument.
func (k *Kernel) SetArgInt32(i int, v int32) error {
	c := C.cl_int(v)
	return k.setArg(i, unsafe.Sizeof(c), unsafe.Pointer(&c))
}

// SetArgUint32 sets a uint argument.
func (k *Kernel) SetArgUint32(i int, v uint32) error {
	c := C.cl_uint(v)
	return k.setArg(i, unsafe.Sizeof(c), unsafe.Pointer(&c))
}

// SetArgInt64 sets a long argument.
func (k *Kernel) SetArgInt64(i int, v int64) error {
	c := C.cl_long(v)
	return k.setArg(i, unsafe.Sizeof(c), unsafe.Pointer(&c))
}

// SetArgFloat32 sets a float argument.
func (k *Kernel) SetArgFloat32(i int, v float32) error {
	c := C.cl_float(v)
	return k.setArg(i, unsafe.Sizeof(c), unsafe.Pointer(&c))
}

// SetArgLocal reserves size bytes of local memory for a __local pointer argument.
func (k *Kernel) SetArgLocal(i int, size int) error {
	return k.setArg(i, uintptr(size), nil)
}

// SetArgBytes sets an argument from raw bytes (a struct or vector passed by value).
func (k *Kernel) SetArgBytes(i int, b []byte) error {
	if len(b) == 0 {
		return k.setArg(i, 0, nil)
	}
	return k.setArg(i, uintptr(len(b)), unsafe.Pointer(&b[0]))
}

// Release frees the kernel. Safe to call more than once.
func (k *Kernel) Release() {
	if k == nil || !k.once() {
		return
	}
	runtime.SetFinalizer(k, nil)
	C.clReleaseKernel(k.id)
	live.Add(-1)
}

// ndrange fills the C work-size arrays; local may be nil (the driver chooses).
func ndrange(global, local []int) (dims C.cl_uint, g, l [3]C.size_t, err error) {
	if len(global) < 1 || len(global) > 3 {
		return 0, g, l, fmt.Errorf("%w: %d global work sizes (want 1 to 3)", &Error{Call: "clEnqueueNDRangeKernel", Code: -53}, len(global))
	}
	if len(local) != 0 && len(local) != len(global) {
		return 0, g, l, fmt.Errorf("%w: %d local sizes for %d global sizes", &Error{Call: "clEnqueueNDRangeKernel", Code: -54}, len(local), len(global))
	}
	for i, v := range global {
		g[i] = C.size_t(v)
	}
	for i, v := range local {
		l[i] = C.size_t(v)
	}
	return C.cl_uint(len(global)), g, l, nil
}

// EnqueueNDRange runs the kernel over global (1 to 3 sizes) with optional local sizes,
// after the events in wait, and returns the command's event. On failure it returns no
// event.
func (q *Queue) EnqueueNDRange(k *Kernel, global, local []int, wait []*Event) (*Event, error) {
	dims, g, l, err := ndrange(global, local)
	if err != nil {
		return nil, err
	}
	var lp *C.size_t
	if len(local) != 0 {
		lp = &l[0]
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	var ev C.cl_event
	st := C.clEnqueueNDRangeKernel(q.id, k.id, dims, nil, &g[0], lp, C.cl_uint(len(wl)), listPtr(wl), &ev)
	if err := check("clEnqueueNDRangeKernel", st); err != nil {
		return nil, fmt.Errorf("kernel %q global %v local %v: %w", k.Name, global, local, err)
	}
	return newEvent(ev), nil
}

// EnqueueNDRangeNoEvent is EnqueueNDRange for an in-order queue where nothing waits on
// the command: it saves creating and releasing an event.
func (q *Queue) EnqueueNDRangeNoEvent(k *Kernel, global, local []int, wait []*Event) error {
	dims, g, l, err := ndrange(global, local)
	if err != nil {
		return err
	}
	var lp *C.size_t
	if len(local) != 0 {
		lp = &l[0]
	}
	var buf [8]C.cl_event
	wl := waitList(wait, buf[:])
	st := C.clEnqueueNDRangeKernel(q.id, k.id, dims, nil, &g[0], lp, C.cl_uint(len(wl)), listPtr(wl), nil)
	if err := check("clEnqueueNDRangeKernel", st); err != nil {
		return fmt.Errorf("kernel %q global %v local %v: %w", k.Name, global, local, err)
	}
	return nil
}
