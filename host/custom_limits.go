package host

import (
	"fmt"

	"github.com/clhost/clhost/cl"
)

// checkKernelLimits refuses a custom kernel that the device cannot run as configured,
// at compile time (and in clhost validate), so that the caller can name the layer: a driver may otherwise fail at enqueue with
// a bare status, or abort the process (PoCL asserts on __local memory it lacks).
func checkKernelLimits(k *cl.Kernel, dev *cl.Device, local []int) error {
	lm, err := k.LocalMemSize()
	if err != nil {
		return err
	}
	if dev.LocalMemBytes > 0 && lm > dev.LocalMemBytes {
		return fmt.Errorf("kernel %q uses %s bytes of __local memory per work-group, more than the device has, %s (CL_DEVICE_LOCAL_MEM_SIZE)", k.Name, thousands(int(lm)), thousands(int(dev.LocalMemBytes)))
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
		return err
	}
	if most > 0 && items > most {
		return fmt.Errorf("local work size %v is %d work-items per group, more than the kernel can run with on this device, %d (CL_KERNEL_WORK_GROUP_SIZE)", local, items, most)
	}
	for i, l := range local {
		if i < len(dev.MaxWorkItemSizes) && dev.MaxWorkItemSizes[i] > 0 && l > dev.MaxWorkItemSizes[i] {
			return fmt.Errorf("local work size %v: %d in dimension %d is more than the device allows there, %d (CL_DEVICE_MAX_WORK_ITEM_SIZES)", local, l, i, dev.MaxWorkItemSizes[i])
		}
	}
	return nil
}
