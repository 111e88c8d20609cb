package serve

import (
	"fmt"
	"testing"

	"github.com/clhost/clhost/cl"
)

// TestSelectDevices: -d lists resolve by type and ordinal, index or name, "all" takes
// every device, and a device listed twice gets a label of its own.
func TestSelectDevices(t *testing.T) {
	p := &cl.Platform{Name: "Test"}
	all := []*cl.Device{
		{Index: 0, Type: cl.DeviceTypeCPU, Name: "cpu-a", Platform: p},
		{Index: 1, Type: cl.DeviceTypeGPU, Name: "gpu-a", Platform: p},
		{Index: 2, Type: cl.DeviceTypeGPU, Name: "gpu-b", Platform: p},
	}
	for spec, want := range map[string]string{
		"all":             "[cpu-a gpu-a gpu-b] [cpu:0 gpu:0 gpu:1]",
		"gpu:0,gpu:1,cpu": "[gpu-a gpu-b cpu-a] [gpu:0 gpu:1 cpu:0]",
		"gpu:1":           "[gpu-b] [gpu:1]",
		"2, gpu-a":        "[gpu-b gpu-a] [gpu:1 gpu:0]",
		"cpu,cpu":         "[cpu-a cpu-a] [cpu:0 cpu:0/2]",
		"GPU:0":           "[gpu-a] [gpu:0]",
	} {
		devs, labels, err := SelectDevices(all, spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		var names []string
		for _, d := range devs {
			names = append(names, d.Name)
		}
		if got := fmt.Sprint(names, " ", labels); got != want {
			t.Errorf("%q: %s, want %s", spec, got, want)
		}
	}
	for _, spec := range []string{"gpu:2", "cpu:x", "tpu", "gpu:0,", ""} {
		if _, _, err := SelectDevices(all, spec); err == nil {
			t.Errorf("%q: no error", spec)
		}
	}
}
