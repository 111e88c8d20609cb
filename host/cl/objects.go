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
#cgo noescape clEnqueueWriteBuffer
#cgo noescape clEnqueueReadBuffer
#cgo noescape clWaitForEvents
#cgo nocallback clWaitForEvents
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// released is embedded in every object: Release runs the C release once, whatever the
// number of calls, and from the finalizer only if the owner forgot.
type released struct{ done atomic.Bool }

// once reports true the first time it is called.
func (r *released) once() bool { return !r.done.Swap(true) }

// Released reports whether Release has been called.
func (r *released) Released() bool { return r.done.Load() }

// ---------------------------------------------------------------- Context

// Context is an OpenCL context on one device.
type Context struct {
	released
	id     C.cl_context
	Device *Device
	// serialBuilds holds clBuildProgram to one call at a time on platforms whose
	// compiler is not thread-safe (oclgrind corrupts its heap on concurrent builds),
	// where the host builds programs in parallel everywhere else.
	serialBuilds bool
}

// serialBuildMu is the one build at a time of serialBuilds contexts.
var serialBuildMu sync.Mutex

// NewContext creates a context for the device.
func NewContext(dev *Device) (*Context, error) {
	var st C.cl_int
	id := C.clCreateContext(nil, 1, &dev.id, nil, nil, &st)
	if err := check("clCreateContext", st); err != nil {
		return nil, fmt.Errorf("device %q: %w", dev.Name, err)
	}
	live.Add(1)
	c := &Context{id: id, Device: dev}
	c.serialBuilds = dev.Platform != nil && strings.Contains(strings.ToLower(dev.Platform.Name), "oclgrind")
	runtime.SetFinalizer(c, (*Context).Release)
	return c, nil
}

// Release frees the context. Safe to call more than once.
func (c *Context) Release() {
	if c == nil || !c.once() {
		return
	}
	runtime.SetFinalizer(c, nil)
	C.clReleaseContext(c.id)
	live.Add(-1)
}

// ---------------------------------------------------------------- Queue

// QueueOptions chooses the properties of a command queue.
type QueueOptions struct {
	// OutOfOrder lets independent commands overlap; ordering then comes only from
	// event wait lists. Ignored (in-order queue) when the device lacks support.
	OutOfOrder bool
	Profiling  bool
}

// Queue is a command queue.
type Queue struct {
	released
	id         C.cl_command_queue
	ctx        *Context
	OutOfOrder bool // true when the queue really is out of order
	Profiling  bool
}

// NewQueue creates a command queue on the context's device.
func (c *Context) NewQueue(o QueueOptions) (*Queue, error) {
	var props C.cl_command_queue_properties
	ooo := o.OutOfOrder && c.Device.OutOfOrder
	if ooo {
		props |= C.CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE
	}
	if o.Profiling {
		props |= C.CL_QUEUE_PROFILING_ENABLE
	}
	var st C.cl_int
	id := C.clCreateCommandQueue(c.id, c.Device.id, props, &st)
	if err := check("clCreateCommandQueue", st); err != nil {
		return nil, err
	}
	live.Add(1)
	q := &Queue{id: id, ctx: c, OutOfOrder: ooo, Profiling: o.Profiling}
	runtime.SetFinalizer(q, (*Queue).Release)
	return q, nil
}

// Release frees the queue. Safe to call more than once.
func (q *Queue) Release() {
	if q == nil || !q.once() {
		return
	}
	runtime.SetFinalizer(q, nil)
	C.clReleaseCommandQueue(q.id)
	live.Add(-1)
}

// Flush submits queued commands to the device without waiting for them.
func (q *Queue) Flush() error { return check("clFlush", C.clFlush(q.id)) }

// Finish blocks until every queued command has completed.
func (q *Queue) Finish() error { return check("clFinish", C.clFinish(q.id)) }

// ---------------------------------------------------------------- Buffer

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

// waitList converts events to the C array the enqueue calls take. Nil events are
// skipped so callers can pass "no producer" as nil.
func waitList(events []*Event, buf []C.cl_event) []C.cl_event {
	out := buf[:0]
	for _, e := range events {
		if e != nil && !e.Released() {
			out = append(out, e.id)
		}
	}
	return out
}

func listPtr(l []C.cl_event) *C.cl_event {
	if len(l) == 0 {
		return nil
	}
	return &l[0]
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

// ---------------------------------------------------------------- Program

// Program is a built OpenCL program.
type Program struct {
	released
	id      C.cl_program
	ctx     *Context
	Options string
	Log     string // the build log, also on success (warnings)
}

// BuildProgram compiles source for the context's device. A compile error returns a
// *BuildError carrying the compiler's full log.
func (c *Context) BuildProgram(source, options string) (*Program, error) {
	if source == "" {
		return nil, fmt.Errorf("%w: empty program source", &Error{Call: "clCreateProgramWithSource", Code: CodeInvalidValue})
	}
	src := C.CString(source)
	defer C.free(unsafe.Pointer(src))
	length := C.size_t(len(source))
	var st C.cl_int
	id := C.clCreateProgramWithSource(c.id, 1, &src, &length, &st)
	if err := check("clCreateProgramWithSource", st); err != nil {
		return nil, err
	}
	live.Add(1)
	p := &Program{id: id, ctx: c, Options: options}
	runtime.SetFinalizer(p, (*Program).Release)
	if err := p.build(); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// ProgramFromBinary loads a program binary previously taken from Binary on the same
// device and driver, and builds it.
func (c *Context) ProgramFromBinary(binary []byte, options string) (*Program, error) {
	if len(binary) == 0 {
		return nil, &Error{Call: "clCreateProgramWithBinary", Code: -42}
	}
	// The binary is copied into C memory: C receives a pointer to a pointer, and cgo
	// forbids Go memory that holds Go pointers.
	cbin := (*C.uchar)(C.CBytes(binary))
	defer C.free(unsafe.Pointer(cbin))
	length := C.size_t(len(binary))
	var st, binStatus C.cl_int
	id := C.clCreateProgramWithBinary(c.id, 1, &c.Device.id, &length, &cbin, &binStatus, &st)
	if err := check("clCreateProgramWithBinary", st); err != nil {
		return nil, err
	}
	live.Add(1)
	p := &Program{id: id, ctx: c, Options: options}
	runtime.SetFinalizer(p, (*Program).Release)
	if err := check("clCreateProgramWithBinary", binStatus); err != nil {
		p.Release()
		return nil, err
	}
	if err := p.build(); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

func (p *Program) build() error {
	if p.ctx.serialBuilds {
		serialBuildMu.Lock()
		defer serialBuildMu.Unlock()
	}
	opts := C.CString(p.Options)
	defer C.free(unsafe.Pointer(opts))
	st := C.clBuildProgram(p.id, 1, &p.ctx.Device.id, opts, nil, nil)
	p.Log = strings.TrimSpace(p.buildLog())
	if err := check("clBuildProgram", st); err != nil {
		return &BuildError{Err: err, Device: p.ctx.Device.Name, Options: p.Options, Log: p.Log}
	}
	return nil
}

func (p *Program) buildLog() string {
	var size C.size_t
	if C.clGetProgramBuildInfo(p.id, p.ctx.Device.id, C.CL_PROGRAM_BUILD_LOG, 0, nil, &size) != C.CL_SUCCESS || size == 0 {
		return ""
	}
	buf := make([]byte, size)
	if C.clGetProgramBuildInfo(p.id, p.ctx.Device.id, C.CL_PROGRAM_BUILD_LOG, size, unsafe.Pointer(&buf[0]), nil) != C.CL_SUCCESS {
		return ""
	}
	return cString(buf)
}

// KernelNames lists the __kernel functions of the program.
func (p *Program) KernelNames() ([]string, error) {
	var size C.size_t
	if err := check("clGetProgramInfo", C.clGetProgramInfo(p.id, C.CL_PROGRAM_KERNEL_NAMES, 0, nil, &size)); err != nil {
		return nil, err
	}
	if size <= 1 {
		return nil, nil
	}
	buf := make([]byte, size)
	if err := check("clGetProgramInfo", C.clGetProgramInfo(p.id, C.CL_PROGRAM_KERNEL_NAMES, size, unsafe.Pointer(&buf[0]), nil)); err != nil {
		return nil, err
	}
	s := cString(buf)
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, ";"), nil
}

// Binary returns the program's device binary, for an on-disk cache.
func (p *Program) Binary() ([]byte, error) {
	var size C.size_t
	if err := check("clGetProgramInfo", C.clGetProgramInfo(p.id, C.CL_PROGRAM_BINARY_SIZES, C.size_t(unsafe.Sizeof(size)), unsafe.Pointer(&size), nil)); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("clGetProgramInfo: the driver gave an empty program binary")
	}
	// The pointer array handed to C must live in C memory (it holds a pointer).
	mem := C.malloc(size)
	defer C.free(mem)
	ptrs := (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(ptrs))
	*ptrs = mem
	if err := check("clGetProgramInfo", C.clGetProgramInfo(p.id, C.CL_PROGRAM_BINARIES, C.size_t(unsafe.Sizeof(uintptr(0))), unsafe.Pointer(ptrs), nil)); err != nil {
		return nil, err
	}
	return C.GoBytes(mem, C.int(size)), nil
}

// Release frees the program. Safe to call more than once.
func (p *Program) Release() {
	if p == nil || !p.once() {
		return
	}
	runtime.SetFinalizer(p, nil)
	C.clReleaseProgram(p.id)
	live.Add(-1)
}

// ---------------------------------------------------------------- Kernel

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

// ---------------------------------------------------------------- Event

// Event tracks one enqueued command.
type Event struct {
	released
	id      C.cl_event
	cleanup runtime.Cleanup
}

// newEvent wraps an event. Events are made on every enqueue, so their fallback release is
// a runtime.AddCleanup, cheaper than a finalizer on this hot path.
func newEvent(id C.cl_event) *Event {
	live.Add(1)
	e := &Event{id: id}
	e.cleanup = runtime.AddCleanup(e, releaseEventID, id)
	return e
}

func releaseEventID(id C.cl_event) {
	C.clReleaseEvent(id)
	live.Add(-1)
}

// EventStatus is a command's execution status.
type EventStatus int

// Command statuses; a negative status is the error the command ended with.
const (
	Complete  EventStatus = C.CL_COMPLETE
	Running   EventStatus = C.CL_RUNNING
	Submitted EventStatus = C.CL_SUBMITTED
	Queued    EventStatus = C.CL_QUEUED
)

// Wait blocks until the command completes.
func (e *Event) Wait() error {
	if e.Released() {
		return ErrReleased
	}
	return check("clWaitForEvents", C.clWaitForEvents(1, &e.id))
}

// WaitForEvents blocks until every given command completes (nil events are skipped).
func WaitForEvents(events ...*Event) error {
	var buf [8]C.cl_event
	wl := waitList(events, buf[:])
	if len(wl) == 0 {
		return nil
	}
	return check("clWaitForEvents", C.clWaitForEvents(C.cl_uint(len(wl)), &wl[0]))
}

// Status returns the command's status; a failed command's status is returned as error.
func (e *Event) Status() (EventStatus, error) {
	if e.Released() {
		return 0, ErrReleased
	}
	var v C.cl_int
	if err := check("clGetEventInfo", C.clGetEventInfo(e.id, C.CL_EVENT_COMMAND_EXECUTION_STATUS, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil)); err != nil {
		return 0, err
	}
	if v < 0 {
		return EventStatus(v), &Error{Call: "command execution", Code: int32(v)}
	}
	return EventStatus(v), nil
}

func (e *Event) profile(param C.cl_profiling_info) (uint64, error) {
	if e.Released() {
		return 0, ErrReleased
	}
	var v C.cl_ulong
	err := check("clGetEventProfilingInfo", C.clGetEventProfilingInfo(e.id, param, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil))
	return uint64(v), err
}

// Profile returns the device timestamps (ns) of when the command was queued, started and
// ended. The queue must have been created with Profiling.
func (e *Event) Profile() (queued, start, end uint64, err error) {
	if queued, err = e.profile(C.CL_PROFILING_COMMAND_QUEUED); err != nil {
		return
	}
	if start, err = e.profile(C.CL_PROFILING_COMMAND_START); err != nil {
		return
	}
	end, err = e.profile(C.CL_PROFILING_COMMAND_END)
	return
}

// Release frees the event. Safe to call more than once.
func (e *Event) Release() {
	if e == nil || !e.once() {
		return
	}
	e.cleanup.Stop()
	releaseEventID(e.id)
}
