package opspec

// PointwiseDepthwiseType is the layer type of a 1×1 convolution fused with the depthwise
// convolution that alone reads its output: MobileNet's expansion and the depthwise layer
// after it (host/graph's fusion pass makes it on CPU devices), and optionally the 1×1
// projection that alone reads the depthwise output, with its residual: a whole inverted
// residual block. Inputs: X, the 1×1 W and [B], the depthwise W and [B], then for the
// block [projection W, [B], [residual]] (an absent B the empty name). The depthwise
// window's attributes are a Conv's (pads, strides, dilations, kernel_shape, auto_pad,
// group = the expanded channel count); the 1×1 convolution's activation is in the
// Pointwise* attributes below; the depthwise activation is in the usual fused attributes,
// or for a block in the Depthwise* attributes below, the projection's then in the usual
// ones. Output batch stride as Conv.
const PointwiseDepthwiseType = "clhost.PointwiseDepthwise"

// Attributes of the 1×1 half's fused activation (as FusedActivationAttr and its
// parameters for a Conv).
const (
	PointwiseActivationAttr = "clhost_pw_activation"
	PointwiseAlphaAttr      = "clhost_pw_alpha"
	PointwiseMinAttr        = "clhost_pw_min"
	PointwiseMaxAttr        = "clhost_pw_max"
)

// Attributes of a block's depthwise activation (as FusedActivationAttr and its
// parameters for a Conv), where the usual ones hold the projection's.
const (
	DepthwiseActivationAttr = "clhost_dw_activation"
	DepthwiseAlphaAttr      = "clhost_dw_alpha"
	DepthwiseMinAttr        = "clhost_dw_min"
	DepthwiseMaxAttr        = "clhost_dw_max"
)

// PointwiseWindowPrefix carries the expansion's window where it is not 1×1: a network's
// stem Conv (group 1, undilated) whose output only the first depthwise layer reads, as
// MobileNetV2's 3×3 stride-2 Conv of the image. Its pads, strides and kernel_shape are
// the attributes of those names under this prefix; without them the expansion is 1×1.
const PointwiseWindowPrefix = "clhost_pw_window_"
