package host

import (
	"fmt"
	"strings"
	"sync"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
)

// The tensor-core kernels are inline PTX, which only NVIDIA's OpenCL compiler takes and
// only GPUs of compute capability 8.0 or later run; a driver may also lay out mma
// fragments otherwise than the PTX ISA says. So before any plan uses them, a probe
// builds one tf32 and one f16 mma and runs them on known data; plans see
// DeviceInfo.MMA only where both built and gave exactly the right values; an engine
// asked for tf32 logs why where they did not (precision.go).
func init() {
	builtinkernels.MMAProbe = probeMMADevice
	probeMMA = (*Engine).mmaAvailable
}

// mmaFailures holds, per device, why the probe failed, for each engine's log.
var mmaFailures sync.Map // *cl.Device name key → string

func mmaDeviceKey(d *cl.Device) string {
	platform := ""
	if d.Platform != nil {
		platform = d.Platform.Name
	}
	return fmt.Sprintf("%s/%s/%d", platform, d.Name, d.Index)
}

// probeMMADevice runs the probe in a context of its own (builtinkernels.DeviceInfoOf
// asks once per device and process).
func probeMMADevice(d *cl.Device) bool {
	if err := runMMAProbe(d); err != nil {
		mmaFailures.Store(mmaDeviceKey(d), err.Error())
		return false
	}
	return true
}

func runMMAProbe(d *cl.Device) error {
	ctx, err := cl.NewContext(d)
	if err != nil {
		return err
	}
	defer ctx.Release()
	q, err := ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		return err
	}
	defer q.Release()
	cases, err := builtinkernels.MMAProbeCases(true)
	if err != nil {
		return err
	}
	for _, c := range cases {
		out, err := builtinkernels.RunPlan(ctx, q, c.Plan, c.Inputs, c.Out)
		if err != nil {
			return fmt.Errorf("the %v mma: %s", c.Precision, firstLine(err.Error()))
		}
		if err := c.Check(out[0].Data); err != nil {
			return err
		}
	}
	return nil
}

// firstLine keeps a build error to its first line: the log that follows is the PTX
// assembler's, long and the same for every layer.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// mmaAvailable says whether the engine's plans may use tensor cores, and, on an NVIDIA
// GPU where the probe failed, says why in the log once per engine.
func (e *Engine) mmaAvailable() bool {
	if builtinkernels.DeviceInfoOf(e.device).MMA {
		return true
	}
	if why, failed := mmaFailures.Load(mmaDeviceKey(e.device)); failed {
		if _, seen := e.warned.LoadOrStore("mma probe", true); !seen {
			e.logf("tensor cores: the mma.sync probe failed on %s (%s); convolutions and GEMMs run the fp32 kernels", e.device.Name, why)
		}
	}
	return false
}
