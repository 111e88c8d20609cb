package serve

import (
	"testing"

	"github.com/clhost/clhost/cl"
)

// TestDefaultDevices: every GPU, numbered by type, or the CPU when there is no GPU.
func TestDefaultDevices(t *testing.T) {
	p := &cl.Platform{Name: "Test"}
	cpu := &cl.Device{Index: 0, Type: cl.DeviceTypeCPU, Platform: p}
	gpu := &cl.Device{Index: 1, Type: cl.DeviceTypeGPU, Platform: p}
	for _, c := range []struct {
		all  []*cl.Device
		want string
	}{
		{[]*cl.Device{cpu, gpu, gpu}, "gpu:0,gpu:1"},
		{[]*cl.Device{cpu}, "cpu"},
	} {
		if got := DefaultDevices(c.all); got != c.want {
			t.Errorf("DefaultDevices(%d devices) = %q, want %q", len(c.all), got, c.want)
		}
	}
}
