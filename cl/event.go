package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#cgo noescape clWaitForEvents
#cgo nocallback clWaitForEvents
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Events: wait lists, waiting, status and profiling timestamps.

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

// Marker enqueues a marker: its event completes once every command enqueued before it
// has (clEnqueueMarkerWithWaitList with an empty list).
func (q *Queue) Marker() (*Event, error) {
	var ev C.cl_event
	if err := check("clEnqueueMarkerWithWaitList", C.clEnqueueMarkerWithWaitList(q.id, 0, nil, &ev)); err != nil {
		return nil, err
	}
	return newEvent(ev), nil
}
