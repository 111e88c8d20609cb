package serve

import (
	"strconv"
	"strings"

	"github.com/clhost/clhost/cl"
)

// AllDevices lists every device of every OpenCL platform, numbered as SelectDevices'
// indices count them: the list SelectDevices and DefaultDevices choose from.
func AllDevices() ([]*cl.Device, error) { return cl.AllDevices() }

// DefaultDevices is the device list to serve on when none is given, as a spec for
// SelectDevices: every GPU ("gpu:0,gpu:1"), or the first CPU ("cpu") when there is none.
func DefaultDevices(all []*cl.Device) string {
	var gpus []string
	for _, d := range all {
		if d.IsGPU() {
			gpus = append(gpus, "gpu:"+strconv.Itoa(len(gpus)))
		}
	}
	if len(gpus) == 0 {
		return "cpu"
	}
	return strings.Join(gpus, ",")
}
