package opspec

// Fused work. internal/graph's Fuse folds an activation that follows a Conv or a Gemm into
// that layer, and for Conv also an Add of a tensor of the output's shape (a residual
// connection). The layer then computes
//
//	y = act(op(x, w) + bias + residual)
//
// with the activation named by string attribute FusedActivationAttr and its parameters in
// the float attributes below, and the residual as input 3 (input 2, the bias, is then
// present or the empty name).
const (
	FusedActivationAttr = "clhost_activation" // "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSwish"
	FusedAlphaAttr      = "clhost_alpha"      // LeakyRelu slope, default 0.01
	FusedMinAttr        = "clhost_min"        // Clip lower bound, default -inf
	FusedMaxAttr        = "clhost_max"        // Clip upper bound, default +inf
)

// Activation kinds a layer can carry fused: FusedActivationAttr's values, each the type
// of the activation layer it stands for (builtinkernels.FusedActivations lists them, from
// the element-wise table).
const (
	ActNone      = ""
	ActRelu      = "Relu"
	ActLeakyRelu = "LeakyRelu"
	ActClip      = "Clip"
	ActSigmoid   = "Sigmoid"
	ActHardSwish = "HardSwish"
)

// FusedGlobalAveragePoolAttr (int, 1) makes a Conv average each output plane, after its
// fused work, as a GlobalAveragePool after it would: the output is (N, M, 1, 1), the mean
// of act(conv(X, W) + B + R) over each plane. On a CPU device a plain 1×1 convolution
// (unit strides, no padding, 2-D) runs it in conv1x1, whose work-items then run whole
// planes and add up their values as they finish them, so the planes never reach memory
// (internal/graph folds the pair there with FuseOptions.GlobalAveragePool); elsewhere the
// Conv writes its planes to a scratch buffer and a second launch averages them.
const FusedGlobalAveragePoolAttr = "clhost_global_avgpool"

// FusedMaxPoolPrefix marks the attributes of a MaxPool after a Conv that the Conv runs:
// the pool's own attributes (kernel_shape, strides, pads, dilations, ceil_mode,
// auto_pad, storage_order) under this prefix, kernel_shape required. The output is the
// pooled act(conv(X, W) + B + R). On a CPU device conv_cpu.cl's conv2d_maxpool computes
// the conv rows each pooled row needs into a private row and pools them, so the conv's
// output never reaches memory (internal/graph folds a stem's Conv and MaxPool there with
// FuseOptions.MaxPool); elsewhere the Conv writes its output to a scratch buffer and a
// second launch pools it.
const FusedMaxPoolPrefix = "clhost_maxpool_"

// OutputBatchStrideAttr asks a layer to write output 0 with this many elements from one
// image (index of dimension 0) to the next, leaving the rest alone: the host sets it
// where the output lies inside a larger tensor, such as a Concat's output along the
// channels at batch > 1, which then needs no copy. A plan that honours it says so in
// builtin_kernels' Plan.OutputBatchStride; Conv's plans do, except the GPU's implicit
// GEMM. Fuse leaves a layer that carries it alone.
const OutputBatchStrideAttr = "clhost_output_batch_stride"

// MatMulScaleAttr (float) multiplies a MatMul's product: y = scale·(A·B) + bias.
// internal/graph folds into it the Muls of its operands by scalar constants, which is
// how PyTorch exports attention's scaling of queries and keys (two launches per block).
const MatMulScaleAttr = "clhost_scale"
