package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"unsafe"
)

// Programs: building from source or a cached binary, the build log, kernel names.

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
	p.Log = strings.TrimSpace(dropTallies(p.buildLog()))
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

// tally matches clang's closing "1 warning generated." or "2 warnings and 1 error
// generated.", which PoCL leaves in its logs: it names no file or line, and the
// messages it counts are in the log already.
var tally = regexp.MustCompile(`^\d+ (warning|error)s?( and \d+ errors?)? generated\.$`)

// IsCompilerTally says whether line (without its newline) is one of clang's closing
// tallies, "1 warning generated." and the like.
func IsCompilerTally(line string) bool { return tally.MatchString(line) }

// dropTallies removes clang's tally lines from a build log.
func dropTallies(log string) string {
	lines := strings.Split(log, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !tally.MatchString(strings.TrimSpace(l)) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}
