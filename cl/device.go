package cl

/*
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// discoverMu serialises platform and device discovery.
var discoverMu sync.Mutex

// Platform is an OpenCL platform (an installed driver, such as PoCL or NVIDIA's).
type Platform struct {
	id      C.cl_platform_id
	Name    string
	Vendor  string
	Version string
}

// DeviceType is a bit set of CL_DEVICE_TYPE_* values.
type DeviceType uint64

// Device types.
const (
	DeviceTypeCPU         DeviceType = C.CL_DEVICE_TYPE_CPU
	DeviceTypeGPU         DeviceType = C.CL_DEVICE_TYPE_GPU
	DeviceTypeAccelerator DeviceType = C.CL_DEVICE_TYPE_ACCELERATOR
	DeviceTypeAll         DeviceType = C.CL_DEVICE_TYPE_ALL
)

func (t DeviceType) String() string {
	var parts []string
	if t&DeviceTypeCPU != 0 {
		parts = append(parts, "CPU")
	}
	if t&DeviceTypeGPU != 0 {
		parts = append(parts, "GPU")
	}
	if t&DeviceTypeAccelerator != 0 {
		parts = append(parts, "ACCELERATOR")
	}
	if len(parts) == 0 {
		return "OTHER"
	}
	return strings.Join(parts, "|")
}

// Device is one OpenCL device with the facts clhost needs about it.
type Device struct {
	id       C.cl_device_id
	Platform *Platform
	Index    int // position in AllDevices, the index `clhost devices` prints

	Type             DeviceType
	Name             string
	Vendor           string
	DriverVersion    string
	Version          string // CL_DEVICE_VERSION
	OpenCLCVersion   string
	ComputeUnits     int
	ClockMHz         int
	GlobalMemBytes   int64
	LocalMemBytes    int64
	MaxAllocBytes    int64
	MaxWorkGroupSize int
	MaxWorkItemSizes []int
	Extensions       string
	FP16             bool
	FP64             bool
	OutOfOrder       bool // the device accepts out-of-order queues
	Profiling        bool
	// TimerResolutionNs is the resolution of profiling timestamps.
	TimerResolutionNs int
	// BaseAlignBytes is the alignment a sub-buffer's offset needs.
	BaseAlignBytes int
	// FloatVectorWidth is the device's native float vector width (16 on AVX-512 CPUs).
	FloatVectorWidth int
}

// Platforms lists the installed OpenCL platforms. With no platform at all it returns an
// error that names the packages to install.
func Platforms() ([]*Platform, error) {
	// Some ICD loaders initialise their vendor list lazily and crash when several
	// threads query it for the first time at once; one lookup at a time is cheap.
	discoverMu.Lock()
	defer discoverMu.Unlock()
	var n C.cl_uint
	st := C.clGetPlatformIDs(0, nil, &n)
	if st == -1001 /* CL_PLATFORM_NOT_FOUND_KHR, from cl_ext.h */ || (st == C.CL_SUCCESS && n == 0) {
		return nil, ErrNoPlatform
	}
	if err := check("clGetPlatformIDs", st); err != nil {
		return nil, err
	}
	ids := make([]C.cl_platform_id, n)
	if err := check("clGetPlatformIDs", C.clGetPlatformIDs(n, &ids[0], nil)); err != nil {
		return nil, err
	}
	out := make([]*Platform, 0, n)
	for _, id := range ids {
		p := &Platform{id: id}
		p.Name = platformString(id, C.CL_PLATFORM_NAME)
		p.Vendor = platformString(id, C.CL_PLATFORM_VENDOR)
		p.Version = platformString(id, C.CL_PLATFORM_VERSION)
		out = append(out, p)
	}
	return out, nil
}

// ErrNoPlatform says that the OpenCL loader found no driver at all.
var ErrNoPlatform = fmt.Errorf("no OpenCL platform found: install an OpenCL driver, e.g. " +
	"`apt-get install pocl-opencl-icd ocl-icd-opencl-dev` for the CPU, or your GPU vendor's " +
	"OpenCL ICD, and check that /etc/OpenCL/vendors lists it")

func platformString(id C.cl_platform_id, param C.cl_platform_info) string {
	var size C.size_t
	if C.clGetPlatformInfo(id, param, 0, nil, &size) != C.CL_SUCCESS || size == 0 {
		return ""
	}
	buf := make([]byte, size)
	if C.clGetPlatformInfo(id, param, size, unsafe.Pointer(&buf[0]), nil) != C.CL_SUCCESS {
		return ""
	}
	return cString(buf)
}

// Devices lists the platform's devices of the given types.
func (p *Platform) Devices(t DeviceType) ([]*Device, error) {
	discoverMu.Lock()
	defer discoverMu.Unlock()
	var n C.cl_uint
	st := C.clGetDeviceIDs(p.id, C.cl_device_type(t), 0, nil, &n)
	if st == C.CL_DEVICE_NOT_FOUND || (st == C.CL_SUCCESS && n == 0) {
		return nil, nil
	}
	if err := check("clGetDeviceIDs", st); err != nil {
		return nil, err
	}
	ids := make([]C.cl_device_id, n)
	if err := check("clGetDeviceIDs", C.clGetDeviceIDs(p.id, C.cl_device_type(t), n, &ids[0], nil)); err != nil {
		return nil, err
	}
	out := make([]*Device, 0, n)
	for _, id := range ids {
		out = append(out, newDevice(id, p))
	}
	return out, nil
}

// AllDevices lists every device of every platform, numbered in that order.
func AllDevices() ([]*Device, error) {
	ps, err := Platforms()
	if err != nil {
		return nil, err
	}
	var all []*Device
	for _, p := range ps {
		ds, err := p.Devices(DeviceTypeAll)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", p.Name, err)
		}
		for _, d := range ds {
			d.Index = len(all)
			all = append(all, d)
		}
	}
	return all, nil
}

func newDevice(id C.cl_device_id, p *Platform) *Device {
	d := &Device{id: id, Platform: p}
	d.Type = DeviceType(deviceUint64(id, C.CL_DEVICE_TYPE))
	d.Name = strings.TrimSpace(deviceString(id, C.CL_DEVICE_NAME))
	d.Vendor = deviceString(id, C.CL_DEVICE_VENDOR)
	d.DriverVersion = deviceString(id, C.CL_DRIVER_VERSION)
	d.Version = deviceString(id, C.CL_DEVICE_VERSION)
	d.OpenCLCVersion = deviceString(id, C.CL_DEVICE_OPENCL_C_VERSION)
	d.ComputeUnits = int(deviceUint32(id, C.CL_DEVICE_MAX_COMPUTE_UNITS))
	d.ClockMHz = int(deviceUint32(id, C.CL_DEVICE_MAX_CLOCK_FREQUENCY))
	d.GlobalMemBytes = int64(deviceUint64(id, C.CL_DEVICE_GLOBAL_MEM_SIZE))
	d.LocalMemBytes = int64(deviceUint64(id, C.CL_DEVICE_LOCAL_MEM_SIZE))
	d.MaxAllocBytes = int64(deviceUint64(id, C.CL_DEVICE_MAX_MEM_ALLOC_SIZE))
	d.MaxWorkGroupSize = int(deviceSize(id, C.CL_DEVICE_MAX_WORK_GROUP_SIZE))
	d.FloatVectorWidth = int(deviceUint32(id, C.CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT))
	dims := int(deviceUint32(id, C.CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS))
	if dims > 0 && dims <= 16 {
		sizes := make([]C.size_t, dims)
		if C.clGetDeviceInfo(id, C.CL_DEVICE_MAX_WORK_ITEM_SIZES, C.size_t(dims)*C.size_t(unsafe.Sizeof(sizes[0])), unsafe.Pointer(&sizes[0]), nil) == C.CL_SUCCESS {
			for _, s := range sizes {
				d.MaxWorkItemSizes = append(d.MaxWorkItemSizes, int(s))
			}
		}
	}
	d.Extensions = deviceString(id, C.CL_DEVICE_EXTENSIONS)
	d.FP16 = strings.Contains(d.Extensions, "cl_khr_fp16")
	d.FP64 = strings.Contains(d.Extensions, "cl_khr_fp64") || deviceUint64(id, C.CL_DEVICE_DOUBLE_FP_CONFIG) != 0
	props := deviceUint64(id, C.CL_DEVICE_QUEUE_PROPERTIES)
	d.OutOfOrder = props&C.CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0
	d.Profiling = props&C.CL_QUEUE_PROFILING_ENABLE != 0
	d.TimerResolutionNs = int(deviceSize(id, C.CL_DEVICE_PROFILING_TIMER_RESOLUTION))
	d.BaseAlignBytes = int(deviceUint32(id, C.CL_DEVICE_MEM_BASE_ADDR_ALIGN)) / 8
	return d
}

// IsGPU and IsCPU tell the device's kind.
func (d *Device) IsGPU() bool { return d.Type&DeviceTypeGPU != 0 }

// IsCPU reports whether the device is a CPU.
func (d *Device) IsCPU() bool { return d.Type&DeviceTypeCPU != 0 }

func (d *Device) String() string {
	return fmt.Sprintf("#%d %s %q (%s)", d.Index, d.Type, d.Name, d.Platform.Name)
}

func deviceString(id C.cl_device_id, param C.cl_device_info) string {
	var size C.size_t
	if C.clGetDeviceInfo(id, param, 0, nil, &size) != C.CL_SUCCESS || size == 0 {
		return ""
	}
	buf := make([]byte, size)
	if C.clGetDeviceInfo(id, param, size, unsafe.Pointer(&buf[0]), nil) != C.CL_SUCCESS {
		return ""
	}
	return cString(buf)
}

func deviceUint32(id C.cl_device_id, param C.cl_device_info) uint32 {
	var v C.cl_uint
	if C.clGetDeviceInfo(id, param, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil) != C.CL_SUCCESS {
		return 0
	}
	return uint32(v)
}

func deviceUint64(id C.cl_device_id, param C.cl_device_info) uint64 {
	var v C.cl_ulong
	if C.clGetDeviceInfo(id, param, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil) != C.CL_SUCCESS {
		return 0
	}
	return uint64(v)
}

func deviceSize(id C.cl_device_id, param C.cl_device_info) uint64 {
	var v C.size_t
	if C.clGetDeviceInfo(id, param, C.size_t(unsafe.Sizeof(v)), unsafe.Pointer(&v), nil) != C.CL_SUCCESS {
		return 0
	}
	return uint64(v)
}

// cString trims a C string buffer at its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
