package graph

import (
	"maps"
	"slices"

	"github.com/clhost/clhost/builtin_kernels/opspec"
	"github.com/clhost/clhost/host/model"
)

// MobileNet's rules: a 1×1 (or stem) Conv and the depthwise Conv after it made one
// layer, which then may take the 1×1 projection after it: an inverted residual block.

// maxStemTaps bounds the input channels × window of a Conv that a PointwiseDepthwiseType
// layer takes as its expansion: a network's stem (MobileNetV2's 3×3 stride-2 Conv of the
// image's 3 channels, 27), whose output (26 MB at batch 16) then never goes to memory
// and whose launch is saved. The fused kernel recomputes the stem rows its bands share,
// which only few taps per output keep cheap.
const maxStemTaps = 32

// maxPointwiseDepthwiseRow bounds a PointwiseDepthwiseType layer's window rows: kernel
// height × (input width + kernel width) values must stay within 1536, the 96 KB buffer
// of builtin_kernels' pwdw at 16 lanes; wider layers would run its slow two-launch path.
const maxPointwiseDepthwiseRow = 1536

// pointwiseDepthwise says whether Conv host is a plain 1×1 convolution (unit strides, no
// padding, no residual, no batch stride) and Conv next, its output's sole reader, a
// depthwise convolution that the PointwiseDepthwise kernel takes, carrying no fused work.
func (f *fuser) pointwiseDepthwise(host, next *model.Layer) bool {
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
		ones(next.Ints("dilations", nil)) && dw[2]*(mid[3]+dw[3]) <= maxPointwiseDepthwiseRow
}

// maxBlockMACs bounds the work of a PointwiseDepthwiseType layer that takes its
// projection by ProjectionMinRows. builtin_kernels' block kernels run a band of output
// rows with every channel per work-item, recomputing the expanded rows that bands share,
// so short bands only pay where the launch they save costs more than that: MobileNetV2's
// blocks at batch 1 (at most 29M multiply-adds). Tall blocks (ProjectionTallRows) have
// bands long enough for that not to matter.
const maxBlockMACs = 64 << 20

// maxBlockBuffer bounds the floats of pwdwp's buffers with one output row per band: the
// band's depthwise results of every channel (rows rounded up to 16) and the window's
// expanded rows of 32 channels; pwdwp keeps them within 96 KB.
const maxBlockBuffer = 24 << 10

// projection says whether host is a PointwiseDepthwiseType layer without a projection,
// small enough for one and of at least minRows output rows over the batch, and next, its
// output's sole reader, a plain 1×1 convolution of it (unit strides, no padding, no
// fused work).
func (f *fuser) projection(host, next *model.Layer, opts FuseOptions) bool {
	if host.Type != opspec.PointwiseDepthwiseType || len(host.Inputs) > 5 || next.Type != "Conv" || len(next.Inputs) > 3 ||
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
	if k := host.Ints(opspec.PointwiseWindowPrefix+"kernel_shape", nil); len(k) == 2 {
		s, p := host.Ints(opspec.PointwiseWindowPrefix+"strides", []int64{1, 1}), host.Ints(opspec.PointwiseWindowPrefix+"pads", []int64{0, 0, 0, 0})
		if len(s) != 2 || len(p) != 4 || s[0] < 1 || s[1] < 1 {
			return false
		}
		eh = int((int64(x[2])+p[0]+p[2]-k[0])/s[0] + 1)
		ewid = int((int64(x[3])+p[1]+p[3]-k[1])/s[1] + 1)
	}
	n, m, oh, ow := float64(mid[0]), float64(mid[1]), float64(mid[2]), float64(mid[3])
	macs := n*float64(eh)*float64(ewid)*float64(ew[1]*ew[2]*ew[3])*m + n*oh*ow*m*float64(dw[2]*dw[3]+pw[0])
	// An expanded row, padding included, and the window's rows of them.
	window := dw[2] * (ewid + dw[3])
	buffer := mid[1]*(mid[3]+15)/16*16 + window*32
	if opts.ProjectionMinRows > 0 && macs <= maxBlockMACs && buffer <= maxBlockBuffer && mid[0]*mid[2] >= opts.ProjectionMinRows {
		return true
	}
	// pwdwr's ring of the window's expanded rows and one output row's depthwise results,
	// every channel (rounded up to 32) of each, with a vector of 16 lanes to spare.
	ring := 4 * ((mid[1] + 31) / 32 * 32) * (window + mid[3] + 16)
	return opts.ProjectionTallRows > 0 && mid[0]*mid[2] >= opts.ProjectionTallRows && ring <= maxRollBuffer
}

// maxRollBuffer is builtin_kernels' bound (bytes) on pwdwr's buffers.
const maxRollBuffer = 384 << 10

// depthwiseNames and pointwiseNames rename a Conv's fused activation to the attributes
// of the depthwise or the 1×1 part of a PointwiseDepthwiseType layer.
var (
	depthwiseNames = map[string]string{opspec.FusedActivationAttr: opspec.DepthwiseActivationAttr, opspec.FusedAlphaAttr: opspec.DepthwiseAlphaAttr,
		opspec.FusedMinAttr: opspec.DepthwiseMinAttr, opspec.FusedMaxAttr: opspec.DepthwiseMaxAttr}
	pointwiseNames = map[string]string{opspec.FusedActivationAttr: opspec.PointwiseActivationAttr, opspec.FusedAlphaAttr: opspec.PointwiseAlphaAttr,
		opspec.FusedMinAttr: opspec.PointwiseMinAttr, opspec.FusedMaxAttr: opspec.PointwiseMaxAttr}
)

// stemNames rename a stem's fused activation as pointwiseNames do, and its window to
// the PointwiseWindowPrefix attributes (the kernel_shape is added from W).
var stemNames = func() map[string]string {
	names := maps.Clone(pointwiseNames)
	names["pads"] = opspec.PointwiseWindowPrefix + "pads"
	names["strides"] = opspec.PointwiseWindowPrefix + "strides"
	return names
}()
