package graph

import (
	"maps"
	"slices"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// MobileNet's rules: a 1×1 (or stem) Conv and the depthwise Conv after it made one
// layer, which then may take the 1×1 projection after it: an inverted residual block.

// maxStemTaps bounds the input channels × window of a Conv that a InvertedResidualType
// layer takes as its expansion: a network's stem (MobileNetV2's 3×3 stride-2 Conv of the
// image's 3 channels, 27), whose output (26 MB at batch 16) then never goes to memory
// and whose launch is saved. The fused kernel recomputes the stem rows its bands share,
// which only few taps per output keep cheap.
const maxStemTaps = 32

// invertedResidual says whether Conv host is a plain 1×1 convolution (unit strides, no
// padding, no residual, no batch stride) and Conv next, its output's sole reader, a
// depthwise convolution that the inverted residual kernels take, carrying no fused work.
func (f *fuser) invertedResidual(host, next *model.Layer) bool {
	if host.Type != "Conv" || next.Type != "Conv" || len(host.Inputs) > 3 && host.Inputs[3] != "" ||
		host.Has(opspec.OutputBatchStrideAttr) || len(next.Inputs) > 3 || next.String(opspec.FusedActivationAttr, "") != "" {
		return false
	}
	shape := func(name string) []int {
		if t := f.tensor[name]; t != nil && t.Type == model.Float32 {
			return t.Shape
		}
		return nil
	}
	ones := func(v []int64) bool {
		return !slices.ContainsFunc(v, func(e int64) bool { return e != 1 })
	}
	zeros := func(v []int64) bool {
		return !slices.ContainsFunc(v, func(e int64) bool { return e != 0 })
	}
	x, pw, mid, dw := shape(host.Inputs[0]), shape(host.Inputs[1]), shape(host.Outputs[0]), shape(next.Inputs[1])
	if len(x) != 4 || len(pw) != 4 || len(mid) != 4 || len(dw) != 4 {
		return false
	}
	m := pw[0]
	if pw[1] != x[1] || host.Int("group", 1) != 1 || !ones(host.Ints("dilations", nil)) {
		return false
	}
	plain := pw[2] == 1 && pw[3] == 1 && ones(host.Ints("strides", nil)) && zeros(host.Ints("pads", nil)) &&
		slices.Contains([]string{"", "NOTSET", "VALID"}, host.String("auto_pad", ""))
	// A stem: a window wider than 1×1, explicit pads (an auto_pad would need resolving
	// here), few taps.
	stem := (pw[2] > 1 || pw[3] > 1) && slices.Contains([]string{"", "NOTSET"}, host.String("auto_pad", "")) &&
		pw[1]*pw[2]*pw[3] <= maxStemTaps
	if !plain && !stem {
		return false
	}
	return dw[0] == m && dw[1] == 1 && mid[1] == m && next.Int("group", 1) == int64(m) &&
		ones(next.Ints("dilations", nil)) && opspec.InvResWindowFits(dw[2], dw[3], mid[3])
}

// maxBlockMACs bounds the work of a InvertedResidualType layer that takes its
// projection by ProjectionMinRows. builtin_kernels' block kernels run a band of output
// rows with every channel per work-item, recomputing the expanded rows that bands share,
// so short bands only pay where the launch they save costs more than that: MobileNetV2's
// blocks at batch 1 (at most 29M multiply-adds). Tall blocks (ProjectionTallRows) have
// bands long enough for that not to matter.
const maxBlockMACs = 64 << 20

// projection says whether host is a InvertedResidualType layer without a projection,
// small enough for one and of at least minRows output rows over the batch, and next, its
// output's sole reader, a plain 1×1 convolution of it (unit strides, no padding, no
// fused work).
func (f *fuser) projection(host, next *model.Layer, opts FuseOptions) bool {
	if host.Type != opspec.InvertedResidualType || len(host.Inputs) > 5 || next.Type != "Conv" || len(next.Inputs) > 3 ||
		next.String(opspec.FusedActivationAttr, "") != "" || host.Has(opspec.OutputBatchStrideAttr) {
		return false
	}
	shape := func(name string) []int {
		if t := f.tensor[name]; t != nil && t.Type == model.Float32 {
			return t.Shape
		}
		return nil
	}
	x, mid, pw := shape(host.Inputs[0]), shape(host.Outputs[0]), shape(next.Inputs[1])
	var ew, dw []int // the expansion's and the depthwise weights, [M, C, EKH, EKW] and [M, 1, KH, KW]
	if len(host.Inputs) > 3 {
		ew, dw = shape(host.Inputs[1]), shape(host.Inputs[3])
	}
	if len(x) != 4 || len(mid) != 4 || len(pw) != 4 || len(ew) != 4 || len(dw) != 4 || pw[1] != mid[1] || pw[2] != 1 || pw[3] != 1 ||
		next.Int("group", 1) != 1 || !plain1x1(next) {
		return false
	}
	// The expanded (depthwise input) plane: the input's, or a stem's output.
	eh, ewid := x[2], x[3]
	if prefix := opspec.ExpansionWindowPrefix; host.Has(prefix + "kernel_shape") {
		k, err := builtinkernels.IntsAttr(host, prefix+"kernel_shape", 2, 1, 1)
		if err != nil {
			return false
		}
		s, err := builtinkernels.IntsAttr(host, prefix+"strides", 2, 1, 1)
		if err != nil {
			return false
		}
		p, err := builtinkernels.IntsAttr(host, prefix+"pads", 4, 0, 0)
		if err != nil {
			return false
		}
		win, err := opspec.ResolveWindow(x[2:], k, s, []int{1, 1}, p, "", false)
		if err != nil {
			return false
		}
		eh, ewid = win.Out[0], win.Out[1]
	}
	n, m, oh, ow := float64(mid[0]), float64(mid[1]), float64(mid[2]), float64(mid[3])
	macs := n*float64(eh)*float64(ewid)*float64(ew[1]*ew[2]*ew[3])*m + n*oh*ow*m*float64(dw[2]*dw[3]+pw[0])
	if opts.ProjectionMinRows > 0 && macs <= maxBlockMACs && opspec.InvResBlockFits(mid[1], dw[2], dw[3], ewid, mid[3]) &&
		mid[0]*mid[2] >= opts.ProjectionMinRows {
		return true
	}
	return opts.ProjectionTallRows > 0 && mid[0]*mid[2] >= opts.ProjectionTallRows && opspec.InvResRollingFits(mid[1], dw[2], dw[3], ewid, mid[3])
}

// depthwiseNames and expansionNames rename a Conv's fused activation to the attributes
// of the depthwise or the 1×1 part of a InvertedResidualType layer.
var (
	depthwiseNames = map[string]string{opspec.FusedActivationAttr: opspec.DepthwiseActivationAttr, opspec.FusedAlphaAttr: opspec.DepthwiseAlphaAttr,
		opspec.FusedMinAttr: opspec.DepthwiseMinAttr, opspec.FusedMaxAttr: opspec.DepthwiseMaxAttr}
	expansionNames = map[string]string{opspec.FusedActivationAttr: opspec.ExpansionActivationAttr, opspec.FusedAlphaAttr: opspec.ExpansionAlphaAttr,
		opspec.FusedMinAttr: opspec.ExpansionMinAttr, opspec.FusedMaxAttr: opspec.ExpansionMaxAttr}
)

// stemNames rename a stem's fused activation as pointwiseNames do, and its window to
// the ExpansionWindowPrefix attributes (the kernel_shape is added from W).
var stemNames = func() map[string]string {
	names := maps.Clone(expansionNames)
	names["pads"] = opspec.ExpansionWindowPrefix + "pads"
	names["strides"] = opspec.ExpansionWindowPrefix + "strides"
	return names
}()
