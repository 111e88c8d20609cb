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
	"strings"
	"sync"
	"sync/atomic"
)

// The release-once base every OpenCL object embeds, the context and the command queue;
// buffer.go, program.go, kernel.go and event.go hold the other objects.

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
