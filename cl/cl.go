// Package cl is a thin binding over the OpenCL 1.2 C API: platforms, devices, contexts,
// queues, buffers, programs, kernels and events. It is the only package of clhost that
// uses cgo. Every failing status becomes an *Error naming the call and the CL constant;
// every object has an explicit Release that is safe to call twice, with a finalizer as a
// fallback for objects a caller forgets.
package cl

/*
#cgo LDFLAGS: -lOpenCL
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Error is a failing OpenCL status, with the call that returned it.
type Error struct {
	Call string // e.g. "clEnqueueNDRangeKernel"
	Code int32  // the CL status, e.g. -52
}

// Name is the CL constant of the status, e.g. "CL_INVALID_KERNEL_ARGS".
func (e *Error) Name() string {
	if n, ok := errorNames[e.Code]; ok {
		return n
	}
	return fmt.Sprintf("CL_UNKNOWN_ERROR(%d)", e.Code)
}

func (e *Error) Error() string { return e.Call + ": " + e.Name() }

// Is lets errors.Is match on the status alone: errors.Is(err, &cl.Error{Code: -52}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Call == "" || t.Call == e.Call)
}

// Status codes callers test for.
const (
	CodeBuildProgramFailure   = -11
	CodeOutOfResources        = -5
	CodeMemAllocationFailure  = -4
	CodeInvalidKernelArgs     = -52
	CodeInvalidBufferSize     = -61
	CodeInvalidWorkGroupSize  = -54
	CodeInvalidKernelName     = -46
	CodePlatformNotFoundKHR   = -1001
	CodeDeviceNotFound        = -1
	CodeInvalidValue          = -30
	CodeInvalidGlobalWorkSize = -63
)

// check turns a status into an error, or nil for CL_SUCCESS.
func check(call string, status C.cl_int) error {
	if status == C.CL_SUCCESS {
		return nil
	}
	return &Error{Call: call, Code: int32(status)}
}

// BuildError is a program that failed to compile; Log holds the compiler's full output.
type BuildError struct {
	Err     error  // the status of clBuildProgram
	Device  string // the device it was built for
	Options string
	Log     string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%v (device %q, options %q); build log:\n%s", e.Err, e.Device, e.Options, e.Log)
}

func (e *BuildError) Unwrap() error { return e.Err }

// ErrReleased is returned when an object is used after Release.
var ErrReleased = errors.New("cl: object already released")

// live counts OpenCL objects created by this package and not yet released, so tests
// can prove that a long run leaks nothing.
var live atomic.Int64

// LiveObjects is the number of OpenCL objects created through this package and not yet
// released (contexts, queues, buffers, programs, kernels, events).
func LiveObjects() int64 { return live.Load() }
