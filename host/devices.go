package host

import (
	"fmt"

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
	var plat *cl.Platform
	pi := -1
	for i, d := range all {
		if d.Platform != plat {
			plat, pi = d.Platform, pi+1
		}
		out[i] = DeviceInfo{Index: d.Index,
			Platform: PlatformInfo{Index: pi, Name: plat.Name, Vendor: plat.Vendor, Version: plat.Version},
			Type:     d.Type.String(), Name: d.Name, Vendor: d.Vendor,
			DriverVersion: d.DriverVersion, Version: d.Version, OpenCLCVersion: d.OpenCLCVersion,
			ComputeUnits: d.ComputeUnits, ClockMHz: d.ClockMHz,
			GlobalMemBytes: d.GlobalMemBytes, LocalMemBytes: d.LocalMemBytes, MaxAllocBytes: d.MaxAllocBytes,
			MaxWorkGroupSize: d.MaxWorkGroupSize, MaxWorkItemSizes: d.MaxWorkItemSizes,
			Extensions: d.Extensions, FP16: d.FP16, FP64: d.FP64, OutOfOrder: d.OutOfOrder}
	}
	return out, nil
}
