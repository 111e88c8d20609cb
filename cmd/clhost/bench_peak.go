package main

import (
	"strings"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host"
)

// devicePeak is a GPU's dense peak arithmetic rate, in TFLOP/s, at each precision
// bench reports: FP32 on the CUDA cores, TF32 and FP16 (fp32 accumulation) on the
// tensor cores, without 2:4 sparsity.
type devicePeak struct {
	match            string // a part of the OpenCL device name
	label            string
	fp32, tf32, fp16 float64
}

// devicePeaks, most specific name first. Sources: NVIDIA's H100 datasheet (SXM5, PCIe
// and NVL columns; its tensor figures are with sparsity, and are halved here) and the
// H200 product page (H200 SXM the same rates as H100 SXM, H200 NVL as H100 NVL); the
// SXM5 dense figures (66.9, 494.7, 989.4) as tabulated at
// glennklockwood.com/garden/processors/h100.
var devicePeaks = []devicePeak{
	{"H100 PCIe", "H100 PCIe", 51.2, 378, 756},
	{"H100 NVL", "H100 NVL", 60, 417.5, 835.5},
	{"H200 NVL", "H200 NVL", 60, 417.5, 835.5},
	{"H100", "H100 SXM", 66.9, 494.7, 989.4},
	{"H200", "H200 SXM", 66.9, 494.7, 989.4},
}

// peakFor is the device's dense peak at a precision, or 0 for a device not in the table.
func peakFor(device string, prec builtinkernels.Precision) (float64, string) {
	for _, p := range devicePeaks {
		if !strings.Contains(device, p.match) {
			continue
		}
		switch prec {
		case builtinkernels.PrecisionTF32:
			return p.tf32, p.label
		case builtinkernels.PrecisionFP16:
			return p.fp16, p.label
		default:
			return p.fp32, p.label
		}
	}
	return 0, ""
}

// benchLayer is one layer of `bench --json`: its profile, and for the layers whose
// arithmetic is counted (Conv, Gemm, MatMul) the rate it reached beside the device's
// peak at the run's precision.
type benchLayer struct {
	host.LayerTime
	TFLOPS     float64 `json:"tflops,omitempty"`
	PeakTFLOPS float64 `json:"peak_tflops,omitempty"`
	// PeakShare is TFLOPS / PeakTFLOPS.
	PeakShare float64 `json:"peak_share,omitempty"`
}

// benchLayers adds the rates to a profile; peak 0 (a device not in the table) leaves
// the peak out.
func benchLayers(prof []host.LayerTime, peak float64) []benchLayer {
	out := make([]benchLayer, len(prof))
	for i, p := range prof {
		out[i] = benchLayer{LayerTime: p}
		if p.Flops > 0 && p.DeviceNs > 0 {
			out[i].TFLOPS = p.Flops / float64(p.DeviceNs) / 1e3
			if peak > 0 {
				out[i].PeakTFLOPS = peak
				out[i].PeakShare = out[i].TFLOPS / peak
			}
		}
	}
	return out
}

// layerTimes is the profile part of benchLayers, for printProfile.
func layerTimes(ls []benchLayer) []host.LayerTime {
	out := make([]host.LayerTime, len(ls))
	for i, l := range ls {
		out[i] = l.LayerTime
	}
	return out
}
