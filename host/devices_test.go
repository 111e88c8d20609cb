package host

import "testing"

// TestDevices: the list is numbered in order, each device under a platform, PoCL's CPU
// among them.
func TestDevices(t *testing.T) {
	all, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	cpu := false
	for i, d := range all {
		if d.Index != i || d.Platform.Name == "" || d.Name == "" || d.ComputeUnits < 1 {
			t.Errorf("device %d: %+v", i, d)
		}
		cpu = cpu || d.Type == "CPU"
	}
	if !cpu {
		t.Errorf("no CPU device among %+v", all)
	}
}
