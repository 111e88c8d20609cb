package serve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clhost/clhost/cl"
)

// SelectDevices resolves a device list: "all" (every device of every platform), or
// specs separated by commas, each "cpu", "gpu", "cpu:N" or "gpu:N" (the N-th device of
// that type, from 0), an index as `clhost devices` prints it, or part of a device's
// name. It returns the devices with a label for each ("gpu:0", "cpu:0"); a device listed
// twice gets two labels ("cpu:0", "cpu:0/2") and runs two engines.
func SelectDevices(all []*cl.Device, spec string) ([]*cl.Device, []string, error) {
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("the OpenCL platforms list no device: %w", cl.ErrNoPlatform)
	}
	var devs []*cl.Device
	if strings.EqualFold(strings.TrimSpace(spec), "all") {
		devs = append(devs, all...)
	} else {
		for _, part := range strings.Split(spec, ",") {
			d, err := selectOne(all, strings.TrimSpace(part))
			if err != nil {
				return nil, nil, err
			}
			devs = append(devs, d)
		}
	}
	labels := make([]string, len(devs))
	seen := map[string]int{}
	for i, d := range devs {
		l := deviceLabel(all, d)
		seen[l]++
		if seen[l] > 1 {
			l += "/" + strconv.Itoa(seen[l])
		}
		labels[i] = l
	}
	return devs, labels, nil
}

func selectOne(all []*cl.Device, spec string) (*cl.Device, error) {
	if spec == "" {
		return nil, fmt.Errorf("empty device in the list (want cpu, gpu, gpu:N, an index or a name)")
	}
	d, _, err := cl.SelectFrom(all, spec)
	return d, err
}

func kindOfDevice(d *cl.Device) string {
	switch {
	case d.Type&cl.DeviceTypeGPU != 0:
		return "gpu"
	case d.Type&cl.DeviceTypeCPU != 0:
		return "cpu"
	}
	return "acc"
}

// deviceLabel is "<type>:<ordinal among devices of that type>".
func deviceLabel(all []*cl.Device, d *cl.Device) string {
	k := kindOfDevice(d)
	n := 0
	for _, x := range all {
		if x == d {
			break
		}
		if kindOfDevice(x) == k {
			n++
		}
	}
	return fmt.Sprintf("%s:%d", k, n)
}
