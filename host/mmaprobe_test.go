package host

import (
	"bytes"
	"strings"
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
)

// TestMMAProbe: on the test device the probe's verdict reaches DeviceInfo.MMA; on an
// NVIDIA GPU it must pass (the device script runs this test there); anywhere else it
// does not run, and engines log nothing of it.
func TestMMAProbe(t *testing.T) {
	d, _, err := cl.Select(testDeviceSpec())
	if err != nil {
		t.Fatal(err)
	}
	if builtinkernels.NVIDIAGPU(d) {
		if err := runMMAProbe(d); err != nil {
			t.Fatalf("the probe failed on %s: %v", d.Name, err)
		}
		if !builtinkernels.DeviceInfoOf(d).MMA {
			t.Fatal("the probe passed, but DeviceInfo.MMA is false")
		}
		return
	}
	var log bytes.Buffer
	e, err := NewEngine(Options{Device: testDeviceSpec(), Log: &log, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.mmaAvailable() {
		t.Error("tensor cores available on a device that is no NVIDIA GPU")
	}
	if strings.Contains(log.String(), "mma") {
		t.Errorf("the log mentions the probe on a device that is no NVIDIA GPU:\n%s", log.String())
	}
}
