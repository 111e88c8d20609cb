package opspec

// InvertedResidualType is the layer type of a 1×1 convolution fused with the depthwise
// convolution that alone reads its output: MobileNet's expansion and the depthwise layer
// after it (internal/graph's fusion pass makes it on CPU devices), and optionally the 1×1
// projection that alone reads the depthwise output, with its residual: a whole inverted
// residual block. Inputs: X, the 1×1 W and [B], the depthwise W and [B], then for the
// block [projection W, [B], [residual]] (an absent B the empty name). The depthwise
// window's attributes are a Conv's (pads, strides, dilations, kernel_shape, auto_pad,
// group = the expanded channel count); the 1×1 convolution's activation is in the
// Expansion* attributes below; the depthwise activation is in the usual fused attributes,
// or for a block in the Depthwise* attributes below, the projection's then in the usual
// ones. Output batch stride as Conv.
const InvertedResidualType = "clhost.PointwiseDepthwise"

// Attributes of the 1×1 half's fused activation (as FusedActivationAttr and its
// parameters for a Conv).
const (
	ExpansionActivationAttr = "clhost_pw_activation"
	ExpansionAlphaAttr      = "clhost_pw_alpha"
	ExpansionMinAttr        = "clhost_pw_min"
	ExpansionMaxAttr        = "clhost_pw_max"
)

// Attributes of a block's depthwise activation (as FusedActivationAttr and its
// parameters for a Conv), where the usual ones hold the projection's.
const (
	DepthwiseActivationAttr = "clhost_dw_activation"
	DepthwiseAlphaAttr      = "clhost_dw_alpha"
	DepthwiseMinAttr        = "clhost_dw_min"
	DepthwiseMaxAttr        = "clhost_dw_max"
)

// ExpansionWindowPrefix carries the expansion's window where it is not 1×1: a network's
// stem Conv (group 1, undilated) whose output only the first depthwise layer reads, as
// MobileNetV2's 3×3 stride-2 Conv of the image. Its pads, strides and kernel_shape are
// the attributes of those names under this prefix; without them the expansion is 1×1.
const ExpansionWindowPrefix = "clhost_pw_window_"

// Private buffers of the InvertedResidualType kernels (bytes), which must stay in a
// core's caches: pwdw's rows of expanded values and pwdwp's band (chosen by measurement,
// docs/kernels/invres.md#invresbuffer), and pwdwr's ring of expanded rows with a group's
// depthwise results, next to the weights in the L2 cache of a core (1–2 MB on the Xeons
// this runs on).
const (
	InvResBuffer        = 96 << 10
	InvResRollingBuffer = 384 << 10
)

// The bounds below are what Fuse asks before it makes a layer: the kernels' buffers at
// their widest vectors (16 lanes, two vectors for a block), so that every CPU runs the
// layer it makes on the tiled kernels. The kernels size their buffers exactly for the
// device (builtin_kernels' invres_tile.go).

// InvResWindowFits says whether pwdw's buffer holds the window rows of one vector of
// expanded channels: kh rows of the expanded width plus the window's kw columns. A layer
// beyond it would run the slow two-launch path.
func InvResWindowFits(kh, kw, width int) bool {
	return 4*16*kh*(width+kw) <= InvResBuffer
}

// InvResBlockFits says whether pwdwp's buffers hold a band of one output row: the row's
// depthwise results of every one of m channels (about outWidth rounded up to 16 each)
// and the window's expanded rows (kh × (width + kw)) of 32 channels.
func InvResBlockFits(m, kh, kw, width, outWidth int) bool {
	return 4*(m*(outWidth+15)/16*16+32*kh*(width+kw)) <= InvResBuffer
}

// InvResRollingFits says whether pwdwr's ring holds the window's expanded rows
// (kh × (width + kw)) and one output row's depthwise results, every one of m channels
// (rounded up to 32) of each, with a vector of 16 lanes to spare.
func InvResRollingFits(m, kh, kw, width, outWidth int) bool {
	return 4*roundUp(m, 32)*(kh*(width+kw)+outWidth+16) <= InvResRollingBuffer
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }
