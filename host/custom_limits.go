package host

import (
	"fmt"

	"github.com/clhost/clhost/cl"
)

// checkKernelLimits refuses a custom kernel that the device cannot run as configured,
// at compile time and with the layer named: a driver may otherwise fail at enqueue with
// a bare status, or abort the process (PoCL asserts on __local memory it lacks).
func checkKernelLimits(where string, k *cl.Kernel, dev *cl.Device, local []int) error {
	lm, err := k.LocalMemSize()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if dev.LocalMemBytes > 0 && lm > dev.LocalMemBytes {
		return fmt.Errorf("%s: kernel %q uses %s bytes of __local memory per work-group, more than the device has, %s (CL_DEVICE_LOCAL_MEM_SIZE)", where, k.Name, thousands(int(lm)), thousands(int(dev.LocalMemBytes)))
	}
	if len(local) == 0 {
		return nil
	}
	items := 1
	for _, l := range local {
		items *= l
	}
	most, err := k.WorkGroupSize()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if most > 0 && items > most {
		return fmt.Errorf("%s: local work size %v is %d work-items per group, more than the kernel can run with on this device, %d (CL_KERNEL_WORK_GROUP_SIZE)", where, local, items, most)
	}
	for i, l := range local {
		if i < len(dev.MaxWorkItemSizes) && dev.MaxWorkItemSizes[i] > 0 && l > dev.MaxWorkItemSizes[i] {
			return fmt.Errorf("%s: local work size %v: %d in dimension %d is more than the device allows there, %d (CL_DEVICE_MAX_WORK_ITEM_SIZES)", where, local, l, i, dev.MaxWorkItemSizes[i])
		}
	}
	return nil
}
