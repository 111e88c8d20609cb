package builtinkernels

import (
	"strings"
	"sync"

	"github.com/clhost/clhost/cl"
)

// NVIDIAGPU says whether a device is an NVIDIA GPU, the only kind whose OpenCL compiler
// takes the inline PTX of the tensor-core kernels.
func NVIDIAGPU(d *cl.Device) bool {
	if d == nil || !d.IsGPU() {
		return false
	}
	name := strings.ToUpper(d.Vendor)
	if d.Platform != nil {
		name += " " + strings.ToUpper(d.Platform.Name)
	}
	return strings.Contains(name, "NVIDIA")
}

var (
	// MMAProbe, where set (the host sets it), runs the tensor-core probe on a device and
	// says whether it passed; DeviceInfoOf asks it once per device and keeps the answer.
	MMAProbe func(d *cl.Device) bool

	mmaMu      sync.Mutex
	mmaResults = map[mmaKey]*mmaResult{}
)

// mmaKey names a device across the *cl.Device values that describe it.
type mmaKey struct {
	platform, name string
	index          int
}

type mmaResult struct {
	once sync.Once
	ok   bool
}

// mmaCapable is DeviceInfo.MMA for a device: the probe's verdict, asked once per
// device and process; false on every device but an NVIDIA GPU, and where no probe is set.
func mmaCapable(d *cl.Device) bool {
	probe := MMAProbe
	if probe == nil || !NVIDIAGPU(d) {
		return false
	}
	k := mmaKey{name: d.Name, index: d.Index}
	if d.Platform != nil {
		k.platform = d.Platform.Name
	}
	mmaMu.Lock()
	r := mmaResults[k]
	if r == nil {
		r = &mmaResult{}
		mmaResults[k] = r
	}
	mmaMu.Unlock()
	r.once.Do(func() { r.ok = probe(d) })
	return r.ok
}
