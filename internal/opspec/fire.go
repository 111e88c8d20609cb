package opspec

// FireType is the layer type of a SqueezeNet fire module as one layer (internal/graph's
// fusion pass makes it on CPU devices): a 1×1 squeeze convolution, then a 1×1 and a 3×3
// expansion of its output (the 3×3 at stride 1 with one pixel of padding each side),
// whose outputs a channel Concat joins, e1's first. Inputs: X, the squeeze W and [B], the
// 1×1 expansion's W and [B], the 3×3 expansion's W and [B] (an absent B the empty name).
// The 3×3 expansion's window attributes are a Conv's (pads, strides, ...), its activation
// in the usual fused attributes; the squeeze's and the 1×1 expansion's activations are in
// the Squeeze* and Expand1* attributes below. The output, (N, E1 + E3, H, W), takes an
// output batch stride as Conv.
const FireType = "clhost.Fire"

// Attributes of the squeeze's and the 1×1 expansion's fused activations (as
// FusedActivationAttr and its parameters for a Conv).
const (
	SqueezeActivationAttr = "clhost_sq_activation"
	SqueezeAlphaAttr      = "clhost_sq_alpha"
	SqueezeMinAttr        = "clhost_sq_min"
	SqueezeMaxAttr        = "clhost_sq_max"
	Expand1ActivationAttr = "clhost_e1_activation"
	Expand1AlphaAttr      = "clhost_e1_alpha"
	Expand1MinAttr        = "clhost_e1_min"
	Expand1MaxAttr        = "clhost_e1_max"
)
