package host

import (
	"fmt"
	"strings"

	"github.com/clhost/clhost/cl"
)

// PlatformInfo describes an OpenCL platform: an installed driver, such as PoCL or
// NVIDIA's.
type PlatformInfo struct {
	Index                 int // position among the platforms that have a device
	Name, Vendor, Version string
}

// DeviceInfo describes one OpenCL device, as `clhost devices` lists it.
type DeviceInfo struct {
	// Index is the device's position in the list, which a -d spec (Options.Device) may
	// give.
	Index    int
	Platform PlatformInfo
	Type     string // "CPU", "GPU", "ACCELERATOR", joined by | when several
	Name     string
	Vendor   string
	// DriverVersion, Version and OpenCLCVersion are the driver's, the device's OpenCL
	// version (CL_DEVICE_VERSION) and the OpenCL C version its compiler takes.
	DriverVersion, Version, OpenCLCVersion string
	ComputeUnits                           int
	ClockMHz                               int
	GlobalMemBytes, LocalMemBytes          int64
	MaxAllocBytes                          int64
	MaxWorkGroupSize                       int
	MaxWorkItemSizes                       []int
	Extensions                             string
	FP16, FP64                             bool
	OutOfOrder                             bool // the device accepts out-of-order queues
}

// IsCPU and IsGPU give the device's type; a simulator may call itself both.
func (d DeviceInfo) IsCPU() bool { return strings.Contains(d.Type, "CPU") }

// IsGPU: see IsCPU.
func (d DeviceInfo) IsGPU() bool { return strings.Contains(d.Type, "GPU") }

// Devices lists every device of every OpenCL platform, in the order an index in a -d
// spec counts them. No device at all is an error saying how to install a driver.
func Devices() ([]DeviceInfo, error) {
	all, err := cl.AllDevices()
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("the OpenCL platforms list no device: %w", cl.ErrNoPlatform)
	}
	out := make([]DeviceInfo, len(all))
	for i, d := range all {
		out[i] = deviceInfo(d, all)
	}
	return out, nil
}

// describeDevice is deviceInfo with the platform counted among every platform's.
func describeDevice(d *cl.Device) DeviceInfo {
	all, _ := cl.AllDevices()
	return deviceInfo(d, all)
}

// deviceInfo describes d; all, the list of every device, numbers its platform.
func deviceInfo(d *cl.Device, all []*cl.Device) DeviceInfo {
	pi := -1
	var plat *cl.Platform
	for _, o := range all {
		if o.Platform != plat {
			plat, pi = o.Platform, pi+1
		}
		if o.Platform == d.Platform || o.Platform != nil && d.Platform != nil && o.Platform.Name == d.Platform.Name {
			break
		}
	}
	info := DeviceInfo{Index: d.Index,
		Type: d.Type.String(), Name: d.Name, Vendor: d.Vendor,
		DriverVersion: d.DriverVersion, Version: d.Version, OpenCLCVersion: d.OpenCLCVersion,
		ComputeUnits: d.ComputeUnits, ClockMHz: d.ClockMHz,
		GlobalMemBytes: d.GlobalMemBytes, LocalMemBytes: d.LocalMemBytes, MaxAllocBytes: d.MaxAllocBytes,
		MaxWorkGroupSize: d.MaxWorkGroupSize, MaxWorkItemSizes: d.MaxWorkItemSizes,
		Extensions: d.Extensions, FP16: d.FP16, FP64: d.FP64, OutOfOrder: d.OutOfOrder}
	if d.Platform != nil {
		info.Platform = PlatformInfo{Index: pi, Name: d.Platform.Name, Vendor: d.Platform.Vendor, Version: d.Platform.Version}
	}
	return info
}
