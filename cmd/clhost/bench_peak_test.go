package main

import (
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host"
)

// TestPeakFor: the OpenCL names of the GPUs in the table find their dense peaks, the
// more specific names first; other devices have none.
func TestPeakFor(t *testing.T) {
	cases := []struct {
		device string
		prec   builtinkernels.Precision
		want   float64
	}{
		{"NVIDIA H100 80GB HBM3", builtinkernels.PrecisionTF32, 494.7},
		{"NVIDIA H100 80GB HBM3", builtinkernels.PrecisionFP16, 989.4},
		{"NVIDIA H100 80GB HBM3", builtinkernels.PrecisionFP32, 66.9},
		{"NVIDIA H200", builtinkernels.PrecisionTF32, 494.7},
		{"NVIDIA H100 PCIe", builtinkernels.PrecisionFP16, 756},
		{"NVIDIA H200 NVL", builtinkernels.PrecisionTF32, 417.5},
		{"pthread-skylake-avx512-Intel(R) Xeon(R)", builtinkernels.PrecisionFP32, 0},
	}
	for _, c := range cases {
		if got, _ := peakFor(c.device, c.prec); got != c.want {
			t.Errorf("%s at %v: peak %v, want %v", c.device, c.prec, got, c.want)
		}
	}
	ls := benchLayers([]host.LayerTime{{Layer: "conv", Flops: 2e12, DeviceNs: 1e7}, {Layer: "relu", DeviceNs: 5}}, 494.7)
	if ls[0].TFLOPS != 200 || ls[0].PeakTFLOPS != 494.7 || ls[1].TFLOPS != 0 || ls[1].PeakTFLOPS != 0 {
		t.Errorf("rates %+v", ls)
	}
}
