package cl

import (
	"fmt"
	"strconv"
	"strings"
)

// Select picks a device by a user's spec: "" (the first GPU, else the first CPU), "cpu",
// "gpu", an index as printed by `clhost devices`, or a case-insensitive substring of the
// device or platform name. The note says which device was picked and why, for stderr.
func Select(spec string) (dev *Device, note string, err error) {
	all, err := AllDevices()
	if err != nil {
		return nil, "", err
	}
	if len(all) == 0 {
		return nil, "", fmt.Errorf("the OpenCL platforms list no device: %w", ErrNoPlatform)
	}
	return SelectFrom(all, spec)
}

// SelectFrom is Select over a given device list.
func SelectFrom(all []*Device, spec string) (*Device, string, error) {
	s := strings.TrimSpace(spec)
	firstOf := func(t DeviceType) *Device {
		for _, d := range all {
			if d.Type&t != 0 {
				return d
			}
		}
		return nil
	}
	switch strings.ToLower(s) {
	case "":
		if d := firstOf(DeviceTypeGPU); d != nil {
			return d, fmt.Sprintf("using device %s: the first GPU (choose another with -d)", d), nil
		}
		if d := firstOf(DeviceTypeCPU); d != nil {
			return d, fmt.Sprintf("using device %s: no GPU found, the first CPU (choose another with -d)", d), nil
		}
		return all[0], fmt.Sprintf("using device %s: no GPU or CPU found, the first device", all[0]), nil
	case "gpu", "cpu":
		t := DeviceTypeGPU
		if strings.EqualFold(s, "cpu") {
			t = DeviceTypeCPU
		}
		if d := firstOf(t); d != nil {
			return d, fmt.Sprintf("using device %s", d), nil
		}
		return nil, "", fmt.Errorf("device %q: no %s device among %s", spec, strings.ToUpper(s), listNames(all))
	}
	// "gpu:N" and "cpu:N" are the N-th device of that type, as serve's device lists
	// name them, so one spelling works for every command.
	if typ, num, found := strings.Cut(strings.ToLower(s), ":"); found && (typ == "cpu" || typ == "gpu") {
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("device %q: want %s:N with N a number from 0", spec, typ)
		}
		t := DeviceTypeGPU
		if typ == "cpu" {
			t = DeviceTypeCPU
		}
		var of []*Device
		for _, d := range all {
			if d.Type&t != 0 {
				of = append(of, d)
			}
		}
		if n >= len(of) {
			return nil, "", fmt.Errorf("device %q: there are %d %s devices among %s", spec, len(of), strings.ToUpper(typ), listNames(all))
		}
		return of[n], fmt.Sprintf("using device %s", of[n]), nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n >= len(all) {
			return nil, "", fmt.Errorf("device %q: index out of range, there are %d devices (0..%d): %s", spec, len(all), len(all)-1, listNames(all))
		}
		return all[n], fmt.Sprintf("using device %s", all[n]), nil
	}
	var matches []*Device
	for _, d := range all {
		if strings.Contains(strings.ToLower(d.Name), strings.ToLower(s)) ||
			strings.Contains(strings.ToLower(d.Platform.Name), strings.ToLower(s)) {
			matches = append(matches, d)
		}
	}
	if len(matches) == 0 {
		return nil, "", fmt.Errorf("device %q: no device name contains it; devices: %s", spec, listNames(all))
	}
	note := fmt.Sprintf("using device %s", matches[0])
	if len(matches) > 1 {
		note += fmt.Sprintf(" (first of %d matching %q)", len(matches), spec)
	}
	return matches[0], note, nil
}

func listNames(all []*Device) string {
	parts := make([]string, len(all))
	for i, d := range all {
		parts[i] = fmt.Sprintf("%d=%q", d.Index, d.Name)
	}
	return strings.Join(parts, ", ")
}
