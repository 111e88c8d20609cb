package graph

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/clhost/clhost/host/model"
)

// Attributes of a layer with fused work, as the built-in Conv and Gemm read them
// (builtin_kernels/fused.go): the layer computes y = act(op(x, w) + bias + residual).
const (
	FusedActivationAttr = "clhost_activation" // "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSwish"
	FusedAlphaAttr      = "clhost_alpha"      // LeakyRelu's slope
	FusedMinAttr        = "clhost_min"        // Clip's bounds
	FusedMaxAttr        = "clhost_max"
)

// The depthwise activation of a PointwiseDepthwiseType layer that took its projection
// (the usual fused attributes then hold the projection's).
const (
	DepthwiseActivationAttr = "clhost_dw_activation"
	DepthwiseAlphaAttr      = "clhost_dw_alpha"
	DepthwiseMinAttr        = "clhost_dw_min"
	DepthwiseMaxAttr        = "clhost_dw_max"
)

// PointwiseDepthwiseType is the layer a 1×1 Conv and the depthwise Conv that alone reads
// it become (builtin_kernels' PointwiseDepthwiseType): inputs X, the 1×1 W and B, the
// depthwise W and B (either B the empty name when absent); the depthwise Conv's
// attributes, the 1×1 Conv's fused activation renamed to the Pointwise* attributes.
// A stem Conv (see maxStemTaps) takes the 1×1 Conv's place, its window under
// PointwiseWindowPrefix.
const PointwiseDepthwiseType = "clhost.PointwiseDepthwise"

// PointwiseWindowPrefix carries the pads, strides and kernel_shape of a
// PointwiseDepthwiseType layer's expansion where it is a stem Conv rather than 1×1
// (builtin_kernels' PointwiseWindowPrefix).
const PointwiseWindowPrefix = "clhost_pw_window_"

// maxStemTaps bounds the input channels × window of a Conv that a PointwiseDepthwiseType
// layer takes as its expansion: a network's stem (MobileNetV2's 3×3 stride-2 Conv of the
// image's 3 channels, 27), whose output (26 MB at batch 16) then never goes to memory
// and whose launch is saved. The fused kernel recomputes the stem rows its bands share,
// which only few taps per output keep cheap.
const maxStemTaps = 32

// The 1×1 half's fused activation in a PointwiseDepthwiseType layer.
const (
	PointwiseActivationAttr = "clhost_pw_activation"
	PointwiseAlphaAttr      = "clhost_pw_alpha"
	PointwiseMinAttr        = "clhost_pw_min"
	PointwiseMaxAttr        = "clhost_pw_max"
)

// FusedGlobalAveragePoolAttr (int, 1) on a Conv stands for a GlobalAveragePool after it
// (builtin_kernels' FusedGlobalAveragePoolAttr): the Conv's output is each plane's mean,
// of shape (N, M, 1, 1).
const FusedGlobalAveragePoolAttr = "clhost_global_avgpool"

// FusedMaxPoolPrefix marks a MaxPool's attributes carried by the Conv before it
// (builtin_kernels' FusedMaxPoolPrefix): the pool's own attributes under this prefix.
// The Conv's output is the pooled one.
const FusedMaxPoolPrefix = "clhost_maxpool_"

// FireType is the layer a fire module becomes (builtin_kernels' FireType): a 1×1 squeeze
// Conv whose output only a 1×1 and a 3×3 expansion Conv read, and the channel Concat that
// alone reads theirs. Inputs X, the squeeze W and B, the 1×1 W and B, the 3×3 W and B
// (each B the empty name when absent); the 3×3 Conv's attributes, the squeeze's and the
// 1×1 expansion's fused activations renamed to the Squeeze* and Expand1* attributes.
const FireType = "clhost.Fire"

// The squeeze's and the 1×1 expansion's fused activations in a FireType layer.
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

// maxPooledConvTaps bounds the products per output (input channels × window) of a Conv
// that takes its MaxPool: builtin_kernels' conv2d_maxpool saves the write and read of
// the conv's output, which pays where the conv does little per output value: it did on
// SqueezeNet's stem (27 products), not on ResNet-18's 7×7 one (147)
// (docs/kernels/conv-cpu.md#maxpooledconvtaps).
const maxPooledConvTaps = 64

// maxPooledWinoChannels bounds the input channels of a 3×3 Conv that takes its MaxPool
// however many products it does per output: below it builtin_kernels runs the layer with
// conv_cpu.cl's direct tiles either way (Winograd takes 32 channels or more,
// winoPreferred), and conv2d_maxpool computes the same tiles; a Winograd layer fused
// measured slower (docs/kernels/conv-cpu.md#maxpooledwinochannels).
const maxPooledWinoChannels = 32

// minPooledChannels is the least number of output channels of a Conv that takes its
// GlobalAveragePool: the kernel runs one tile of output channels over a whole plane per
// work-item, so a batch-1 layer needs this many channels (32 tiles of 8) to spread over
// the cores. Networks' classifier heads have 1000 (SqueezeNet) and 1280 (MobileNetV2).
const minPooledChannels = 256

// fusedActs are the activation layer types a Conv or Gemm can absorb.
var fusedActs = []string{"Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSwish"}

// FuseStats counts what Fuse folded.
type FuseStats struct {
	ConvActivation     int // activations folded into a Conv (after its residual Add, if any)
	ConvResidual       int // Adds folded into a Conv as its residual input
	GemmActivation     int // activations folded into a Gemm
	PointwiseDepthwise int // depthwise Convs folded into the 1×1 Conv before them
	Projection         int // 1×1 Convs folded into the PointwiseDepthwiseType layer before them
	ConvGlobalPool     int // GlobalAveragePools folded into the 1×1 Conv before them
	ConvMaxPool        int // MaxPools folded into the Conv before them
	ConcatMaxPool      int // MaxPools of a Concat folded into the Convs that feed it
	Fire               int // fire modules (a squeeze, two expansions and their Concat) made one layer
}

// Layers is the number of layers Fuse removed.
func (s FuseStats) Layers() int {
	return s.ConvActivation + s.ConvResidual + s.GemmActivation + s.PointwiseDepthwise + s.Projection + s.ConvGlobalPool + s.ConvMaxPool + s.ConcatMaxPool + 3*s.Fire
}

func (s FuseStats) String() string {
	out := fmt.Sprintf("%d Conv+activation, %d Conv+Add, %d Gemm+activation", s.ConvActivation, s.ConvResidual, s.GemmActivation)
	if s.PointwiseDepthwise > 0 {
		out += fmt.Sprintf(", %d 1×1+depthwise Conv", s.PointwiseDepthwise)
	}
	if s.Projection > 0 {
		out += fmt.Sprintf(", %d of them with their projection", s.Projection)
	}
	if s.ConvGlobalPool > 0 {
		out += fmt.Sprintf(", %d 1×1 Conv+GlobalAveragePool", s.ConvGlobalPool)
	}
	if s.ConvMaxPool > 0 {
		out += fmt.Sprintf(", %d Conv+MaxPool", s.ConvMaxPool)
	}
	if s.ConcatMaxPool > 0 {
		out += fmt.Sprintf(", %d MaxPool of a Concat into its Convs", s.ConcatMaxPool)
	}
	if s.Fire > 0 {
		out += fmt.Sprintf(", %d fire modules", s.Fire)
	}
	return out
}

// FuseOptions tune Fuse.
type FuseOptions struct {
	// Keep reports layer types that must take no part in fusion, neither absorbing nor
	// absorbed: the types a custom-layer configuration implements, whose kernels know
	// nothing of the fused attributes. Nil keeps none.
	Keep func(layerType string) bool
	// PointwiseDepthwise folds a 1×1 Conv and the depthwise Conv that alone reads it into
	// one PointwiseDepthwiseType layer (MobileNet's expansion and depthwise layers), which
	// CPU devices run faster than the two.
	PointwiseDepthwise bool
	// ProjectionMinRows, where above 0, folds the plain 1×1 Conv that alone reads a small
	// PointwiseDepthwiseType layer's output (MobileNet's projection, and then its residual
	// Add) into it, a whole inverted residual block in one layer, where that output has
	// at least this many rows over the batch (N × height): the block kernel runs a row of
	// every channel per work-item, so fewer rows than compute units leave units idle.
	ProjectionMinRows int
	// ProjectionTallRows, where above 0, also folds the projection of a block of any size
	// into it where its output rows over the batch (N × height) are at least this many
	// and the rolling kernel's buffers fit (maxRollBuffer): builtin_kernels' pwdwr then
	// runs tall bands of rows per work-item, expanding each input row of a band once; the
	// expanded and depthwise tensors, tens of MB at batch 16, never reach memory, and a
	// launch is saved.
	ProjectionTallRows int
	// GlobalAveragePool folds a GlobalAveragePool into the plain 1×1 Conv of at least
	// minPooledChannels output channels whose output it alone reads (a classifier head):
	// only CPU devices' kernels run the pair as one (builtin_kernels'
	// FusedGlobalAveragePoolAttr); elsewhere the Conv's plan runs them as two launches.
	GlobalAveragePool bool
	// MaxPool folds a MaxPool into the Conv whose output it alone reads, where the Conv
	// has few products per output (at most maxPooledConvTaps: a stem) or is a 3×3 window
	// over few channels (maxPooledWinoChannels), and no residual; CPU devices'
	// conv2d_maxpool runs the pair (builtin_kernels' FusedMaxPoolPrefix). A MaxPool of a
	// channel Concat whose every input such a Conv alone writes goes into each of them.
	MaxPool bool
	// Fire folds each fire module (SqueezeNet's: a 1×1 squeeze Conv, a 1×1 and a 3×3
	// expansion of its output, and the channel Concat of theirs) into one FireType
	// layer, whose CPU kernel squeezes a band of rows into private memory and expands it
	// there: one launch instead of three, and the squeezed tensor never reaches memory.
	// Only modules of fewer than maxFireSqueeze squeezed channels fold; one whose
	// expansions carry a MaxPool (opts.MaxPool) stays as it is.
	Fire bool
}

// Fuse is FuseWith with no types kept.
func Fuse(m *model.Model) (FuseStats, error) { return FuseWith(m, FuseOptions{}) }

// FuseWith rewrites a valid model in place so that fewer layers do the same work, and
// returns what it folded. Run it after shape inference (InferShapes) and after folding
// BatchNormalization into Conv (host/onnx FoldBatchNorm, which must not see fused
// layers). Each rule needs the intermediate tensor it removes to be read by exactly one
// layer and not to be a graph output:
//
//   - Conv → Add(conv_out, other): the Add becomes the Conv's residual input 3 (input 2,
//     the bias, becomes the empty name if the Conv had none) when other has exactly the
//     Conv output's shape (no broadcasting) and is a graph input, a constant, or produced
//     earlier in execution order than the Conv (so the fused Conv never waits for a
//     branch that used to run after it). This is a ResNet block's tail.
//   - Conv (with or without a residual) or Gemm → Relu, LeakyRelu, Clip (one input; its
//     min/max attributes), Sigmoid or HardSwish: the activation becomes the layer's
//     FusedActivationAttr, with FusedAlphaAttr or FusedMinAttr/FusedMaxAttr.
//   - With opts.PointwiseDepthwise, a plain 1×1 Conv (with or without an activation; no
//     residual, unit strides, no padding) → a depthwise Conv (2-D, group = channels = W's
//     first dimension, undilated, its window rows within what the kernel's buffer
//     holds): one PointwiseDepthwiseType layer, which then takes an activation as a Conv
//     does (MobileNet's expansion and depthwise layers). A stem Conv (group 1,
//     undilated, explicit pads, a window wider than 1×1 and at most maxStemTaps taps per
//     output) joins its depthwise Conv the same way, its window under
//     PointwiseWindowPrefix.
//   - With opts.ProjectionMinRows, a PointwiseDepthwiseType layer of at most
//     maxBlockMACs multiply-adds (with the projection) and at least that many output rows
//     over the batch, or with opts.ProjectionTallRows, one of at least that many output
//     rows over the batch whose rolling buffers fit → a plain 1×1 Conv: the layer
//     takes the projection's W and B as inputs 5 and 6, its depthwise activation moves to
//     the Depthwise* attributes, and it then takes a residual (input 7) and an
//     activation as a Conv does.
//   - With opts.GlobalAveragePool, a plain 1×1 Conv (with or without its residual and
//     activation; group 1 or more, 4-D, at least minPooledChannels output channels, no
//     batch stride) → GlobalAveragePool: the Conv takes FusedGlobalAveragePoolAttr and
//     the pool's output, and nothing more fuses into it.
//   - With opts.MaxPool, a 2-D Conv of group 1 with at most maxPooledConvTaps products
//     per output, or a 3×3 window over fewer than maxPooledWinoChannels channels (with
//     or without its activation; no residual, no batch stride) → a 2-D MaxPool without
//     the Indices output: the Conv takes the pool's attributes under FusedMaxPoolPrefix
//     and its output, and nothing more fuses into it.
//   - With opts.MaxPool, such Convs → a channel Concat of their outputs alone → such a
//     MaxPool: each Conv takes the pool's attributes and writes its pooled planes, which
//     the Concat joins into the pool's output (the Concat's inputs take their pooled
//     shapes); the pool and the full-size Concat output go.
//   - With opts.Fire, a plain 1×1 Conv of group 1 and fewer than maxFireSqueeze output
//     channels (with or without its activation; no residual, pool or batch stride) whose output only a plain 1×1 Conv and a 3×3 Conv
//     (stride 1, one pixel of padding each side, undilated, group 1; each with or without
//     its activation and nothing more) read, whose outputs only a channel Concat of the
//     two, the 1×1 one's first, reads: one FireType layer in the Concat's place, which
//     takes the Concat's output. Nothing more fuses into it.
//
// The fused layer keeps its name, takes the last absorbed layer's output and its place in
// m.Layers; the removed layers' intermediate tensors leave m.Tensors. Layers with a
// "domain" attribute (custom operators) are never touched. On error the model is left
// unchanged.
func FuseWith(m *model.Model, opts FuseOptions) (FuseStats, error) {
	var stats FuseStats
	g, err := Build(m)
	if err != nil {
		return stats, err
	}
	keep := func(l *model.Layer) bool {
		return l.Has("domain") || opts.Keep != nil && opts.Keep(l.Type)
	}
	f := &fuser{
		layers:  slices.Clone(m.Layers),
		readers: map[string][]int{},
		output:  map[string]bool{},
		tensor:  map[string]*model.Tensor{},
		removed: map[int]int{},
	}
	for i := range m.Tensors {
		f.tensor[m.Tensors[i].Name] = &m.Tensors[i]
	}
	for _, o := range m.Outputs {
		f.output[o] = true
	}
	for i := range f.layers {
		for _, in := range f.layers[i].Inputs {
			if in != "" {
				f.readers[in] = append(f.readers[in], i)
			}
		}
	}
	// step is the original execution position of a tensor's producer, -1 for graph
	// inputs and constants.
	step := func(name string) int {
		if p := g.Producer(name); p >= 0 {
			return g.Step(p)
		}
		return -1
	}

	dead := map[string]bool{}
	for _, i := range g.Order() {
		if _, gone := f.removed[i]; gone {
			continue // a 1×1 Conv a depthwise one absorbed
		}
		host := &f.layers[i]
		if host.Type != "Conv" && host.Type != "Gemm" || keep(host) || len(host.Outputs) != 1 {
			continue
		}
		for {
			if host.Int(FusedGlobalAveragePoolAttr, 0) != 0 || host.Has(FusedMaxPoolPrefix+"kernel_shape") {
				break // what follows reads the pooled values, not the Conv's outputs
			}
			out := host.Outputs[0]
			j, ok := f.soleReader(out)
			if !ok || keep(&f.layers[j]) || len(f.layers[j].Outputs) != 1 {
				break
			}
			next := &f.layers[j]
			if slot := residualSlot(host); slot > 0 && next.Type == "Add" && !fused(host) {
				other, ok := f.residual(out, next)
				if !ok || step(other) >= g.Step(i) {
					break
				}
				f.take(i, j)
				in := slices.Clone(host.Inputs)
				for len(in) < slot {
					in = append(in, "") // no bias
				}
				host.Inputs = append(in[:slot], other)
				f.readers[other] = append(f.readers[other], i)
				stats.ConvResidual++
			} else if opts.PointwiseDepthwise && f.pointwiseDepthwise(host, next) {
				f.take(i, j)
				f.appendWeights(i, next.Inputs, 3)
				host.Type = PointwiseDepthwiseType
				w := f.tensor[host.Inputs[1]].Shape // [M, C, KH, KW] (pointwiseDepthwise checked)
				if w[2] == 1 && w[3] == 1 && plain1x1(host) {
					host.Attrs = append(slices.Clone(next.Attrs), renameAttrs(host.Attrs, pointwiseNames, true)...)
				} else {
					// A stem: its window, the kernel_shape taken from W where the Conv leaves
					// it out, moves under PointwiseWindowPrefix.
					stem := append(renameAttrs(host.Attrs, stemNames, true), model.IntsAttr(PointwiseWindowPrefix+"kernel_shape", int64(w[2]), int64(w[3])))
					host.Attrs = append(slices.Clone(next.Attrs), stem...)
				}
				stats.PointwiseDepthwise++
			} else if (opts.ProjectionMinRows > 0 || opts.ProjectionTallRows > 0) && f.projection(host, next, opts) {
				f.take(i, j)
				f.appendWeights(i, next.Inputs, 5)
				host.Attrs = renameAttrs(host.Attrs, depthwiseNames, false)
				stats.Projection++
			} else if opts.GlobalAveragePool && f.globalPool(host, next) {
				f.take(i, j)
				host.Attrs = append(slices.Clone(host.Attrs), model.IntAttr(FusedGlobalAveragePoolAttr, 1))
				stats.ConvGlobalPool++
			} else if opts.MaxPool && f.maxPool(host, next) {
				f.take(i, j)
				host.Attrs = slices.Clone(host.Attrs)
				for _, a := range next.Attrs {
					a.Name = FusedMaxPoolPrefix + a.Name
					host.Attrs = append(host.Attrs, a)
				}
				stats.ConvMaxPool++
			} else if attrs, ok := activation(next); ok && host.String(FusedActivationAttr, "") == "" {
				f.take(i, j)
				host.Attrs = setAttrs(host.Attrs, attrs)
				if host.Type == "Gemm" {
					stats.GemmActivation++
				} else {
					stats.ConvActivation++
				}
			} else {
				break
			}
			dead[out] = true
		}
	}
	shapes := map[string][]int{} // tensors whose shape a rewrite changed
	if opts.MaxPool {
		stats.ConcatMaxPool = f.concatMaxPools(keep, shapes, dead)
	}
	if opts.Fire {
		stats.Fire = f.fires(keep, dead)
	}
	if stats.Layers() == 0 {
		return stats, nil
	}

	// The fused layer takes the place of the last layer it absorbed, so a list that was
	// in execution order stays so (the residual's producer comes before the Add).
	place := map[int]int{} // position in m.Layers → fused layer now there
	moved := map[int]bool{}
	for j, i := range f.removed {
		if _, gone := f.removed[i]; gone {
			continue // itself absorbed later (a fire module's expansion)
		}
		if f.layers[i].Outputs[0] == f.layers[j].Outputs[0] {
			place[j], moved[i] = i, true
		}
	}
	layers := make([]model.Layer, 0, len(f.layers)-len(f.removed))
	for k := range f.layers {
		if i, ok := place[k]; ok {
			layers = append(layers, f.layers[i])
		} else if _, gone := f.removed[k]; !gone && !moved[k] {
			layers = append(layers, f.layers[k])
		}
	}
	tensors := make([]model.Tensor, 0, len(m.Tensors))
	for _, t := range m.Tensors {
		if shape, ok := shapes[t.Name]; ok {
			t.Shape = shape
		}
		if !dead[t.Name] {
			tensors = append(tensors, t)
		}
	}
	out := *m
	out.Layers, out.Tensors = layers, tensors
	if err := model.Validate(&out); err != nil {
		return FuseStats{}, fmt.Errorf("model %q after fusion (%s): %w", m.Name, stats, err)
	}
	m.Layers, m.Tensors = layers, tensors
	return stats, nil
}

// fuser is FuseWith's working state. Layers are copies whose slices are cloned before
// any change, so the caller's model stays intact until the result is committed.
type fuser struct {
	layers  []model.Layer
	readers map[string][]int // tensor → reading layers, once per input slot
	output  map[string]bool  // graph outputs
	tensor  map[string]*model.Tensor
	removed map[int]int // absorbed layer → the layer that absorbed it
}

// soleReader returns the one layer reading a tensor through one input slot, when the
// tensor is not a graph output either.
func (f *fuser) soleReader(name string) (int, bool) {
	r := f.readers[name]
	if len(r) != 1 || f.output[name] {
		return 0, false
	}
	_, gone := f.removed[r[0]]
	return r[0], !gone
}

// take makes layer i absorb layer j: i writes j's output from now on.
func (f *fuser) take(i, j int) {
	host, next := &f.layers[i], &f.layers[j]
	delete(f.readers, host.Outputs[0])
	for _, in := range next.Inputs {
		if r := f.readers[in]; in != "" {
			if k := slices.Index(r, j); k >= 0 {
				f.readers[in] = slices.Delete(slices.Clone(r), k, k+1)
			}
		}
	}
	host.Outputs = slices.Clone(next.Outputs)
	f.removed[j] = i
}

// appendWeights makes layer i's inputs its first n (empty names where it had fewer)
// followed by an absorbed Conv's W and B (inputs 1 and 2 of from; B the empty name when
// absent), which layer i now reads.
func (f *fuser) appendWeights(i int, from []string, n int) {
	host := &f.layers[i]
	in := slices.Clone(host.Inputs)
	for len(in) < n {
		in = append(in, "")
	}
	w := slices.Clone(from)
	for len(w) < 3 {
		w = append(w, "")
	}
	host.Inputs = append(in[:n], w[1], w[2])
	for _, t := range w[1:3] {
		if t != "" {
			f.readers[t] = append(f.readers[t], i)
		}
	}
}

// residual returns the operand of an Add other than the Conv's output out, when it can
// be the Conv's residual: a float32 tensor of exactly out's shape.
func (f *fuser) residual(out string, add *model.Layer) (string, bool) {
	if len(add.Inputs) != 2 {
		return "", false
	}
	other := add.Inputs[0]
	if other == out {
		other = add.Inputs[1]
	}
	if other == out || other == "" || add.Inputs[0] != out && add.Inputs[1] != out {
		return "", false
	}
	a, b := f.tensor[out], f.tensor[other]
	if a == nil || b == nil || a.Shape == nil || a.Type != model.Float32 || b.Type != model.Float32 ||
		!slices.Equal(a.Shape, b.Shape) {
		return "", false
	}
	return other, true
}

// residualSlot is the input a layer takes a residual at: 3 for a Conv, 7 for a
// PointwiseDepthwiseType layer with its projection, 0 for others.
func residualSlot(l *model.Layer) int {
	switch l.Type {
	case "Conv":
		return 3
	case PointwiseDepthwiseType:
		if len(l.Inputs) > 5 {
			return 7
		}
	}
	return 0
}

// fused reports whether a Conv (or a PointwiseDepthwiseType block) already carries a
// residual or an activation: an Add after it can no longer move inside.
func fused(l *model.Layer) bool {
	slot := residualSlot(l)
	return len(l.Inputs) > slot && l.Inputs[slot] != "" || l.String(FusedActivationAttr, "") != ""
}

// maxPointwiseDepthwiseRow bounds a PointwiseDepthwiseType layer's window rows: kernel
// height × (input width + kernel width) values must stay within 1536, the 96 KB buffer
// of builtin_kernels' pwdw at 16 lanes; wider layers would run its slow two-launch path.
const maxPointwiseDepthwiseRow = 1536

// pointwiseDepthwise says whether Conv host is a plain 1×1 convolution (unit strides, no
// padding, no residual, no batch stride) and Conv next, its output's sole reader, a
// depthwise convolution that the PointwiseDepthwise kernel takes, carrying no fused work.
func (f *fuser) pointwiseDepthwise(host, next *model.Layer) bool {
	if host.Type != "Conv" || next.Type != "Conv" || len(host.Inputs) > 3 && host.Inputs[3] != "" ||
		host.Has("clhost_output_batch_stride") || len(next.Inputs) > 3 || next.String(FusedActivationAttr, "") != "" {
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
	if host.Type != PointwiseDepthwiseType || len(host.Inputs) > 5 || next.Type != "Conv" || len(next.Inputs) > 3 ||
		next.String(FusedActivationAttr, "") != "" || host.Has("clhost_output_batch_stride") {
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
	if k := host.Ints(PointwiseWindowPrefix+"kernel_shape", nil); len(k) == 2 {
		s, p := host.Ints(PointwiseWindowPrefix+"strides", []int64{1, 1}), host.Ints(PointwiseWindowPrefix+"pads", []int64{0, 0, 0, 0})
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

// globalPool says whether Conv host is a plain 4-D 1×1 convolution of at least
// minPooledChannels output channels, without a batch stride, and next, its output's sole
// reader, a GlobalAveragePool of it.
func (f *fuser) globalPool(host, next *model.Layer) bool {
	if host.Type != "Conv" || next.Type != "GlobalAveragePool" || len(next.Inputs) != 1 ||
		host.Has("clhost_output_batch_stride") || !plain1x1(host) {
		return false
	}
	w, mid := f.tensor[host.Inputs[1]], f.tensor[host.Outputs[0]]
	return w != nil && mid != nil && mid.Type == model.Float32 && len(w.Shape) == 4 && len(mid.Shape) == 4 &&
		w.Shape[2] == 1 && w.Shape[3] == 1 && w.Shape[0] >= minPooledChannels
}

// maxPool says whether Conv host is a 2-D convolution of group 1, of at most
// maxPooledConvTaps products per output or a 3×3 window over fewer than
// maxPooledWinoChannels channels, without a residual or a batch stride, and next, its
// output's sole reader, a 2-D MaxPool of it.
func (f *fuser) maxPool(host, next *model.Layer) bool {
	if host.Type != "Conv" || next.Type != "MaxPool" || len(next.Inputs) != 1 || len(host.Inputs) > 3 ||
		host.Has("clhost_output_batch_stride") || host.Int("group", 1) != 1 || len(next.Ints("kernel_shape", nil)) != 2 || next.Int("storage_order", 0) != 0 {
		return false
	}
	w, mid := f.tensor[host.Inputs[1]], f.tensor[host.Outputs[0]]
	if w == nil || mid == nil || mid.Type != model.Float32 || len(w.Shape) != 4 || len(mid.Shape) != 4 {
		return false
	}
	return w.Shape[1]*w.Shape[2]*w.Shape[3] <= maxPooledConvTaps ||
		w.Shape[2] == 3 && w.Shape[3] == 3 && w.Shape[1] < maxPooledWinoChannels
}

// concatMaxPools moves each 2-D MaxPool of a channel Concat into the Convs that feed the
// Concat, where every one of them takes it (maxPool): max pooling works plane by plane,
// so the pool of a Concat of planes is the Concat of their pools. Each Conv then writes
// its pooled planes, which the Concat joins into the pool's output, and the full-size
// planes (SqueezeNet's fire modules: 25–50 MB at batch 16) never reach memory. The
// changed Convs' outputs take their pooled shapes in shapes, the Concat's old output
// goes into dead; it returns how many pools moved.
func (f *fuser) concatMaxPools(keep func(*model.Layer) bool, shapes map[string][]int, dead map[string]bool) int {
	producer := map[string]int{}
	for i := range f.layers {
		if _, gone := f.removed[i]; !gone {
			for _, out := range f.layers[i].Outputs {
				producer[out] = i
			}
		}
	}
	moved := 0
	for j := range f.layers {
		pool := &f.layers[j]
		if _, gone := f.removed[j]; gone || pool.Type != "MaxPool" || keep(pool) || len(pool.Inputs) != 1 || len(pool.Outputs) != 1 {
			continue
		}
		k, ok := producer[pool.Inputs[0]]
		if !ok {
			continue
		}
		cat := &f.layers[k]
		if r, ok := f.soleReader(pool.Inputs[0]); !ok || r != j || cat.Type != "Concat" || keep(cat) || len(cat.Outputs) != 1 {
			continue
		}
		whole, pooled := f.tensor[cat.Outputs[0]], f.tensor[pool.Outputs[0]]
		if whole == nil || pooled == nil || len(whole.Shape) != 4 || len(pooled.Shape) != 4 {
			continue
		}
		if axis := cat.Int("axis", 0); axis != 1 && axis != -3 {
			continue
		}
		var convs []int
		for _, in := range cat.Inputs {
			i, ok := producer[in]
			if r, sole := f.soleReader(in); !ok || !sole || r != k || slices.Contains(convs, i) {
				convs = nil
				break
			}
			conv := &f.layers[i]
			if keep(conv) || len(conv.Outputs) != 1 || conv.Int(FusedGlobalAveragePoolAttr, 0) != 0 ||
				conv.Has(FusedMaxPoolPrefix+"kernel_shape") || !f.maxPool(conv, pool) {
				convs = nil
				break
			}
			convs = append(convs, i)
		}
		if len(convs) == 0 {
			continue
		}
		for _, i := range convs {
			conv := &f.layers[i]
			conv.Attrs = slices.Clone(conv.Attrs)
			for _, a := range pool.Attrs {
				a.Name = FusedMaxPoolPrefix + a.Name
				conv.Attrs = append(conv.Attrs, a)
			}
			out := f.tensor[conv.Outputs[0]].Shape
			shapes[conv.Outputs[0]] = []int{out[0], out[1], pooled.Shape[2], pooled.Shape[3]}
		}
		dead[cat.Outputs[0]] = true
		f.take(k, j)
		moved++
	}
	return moved
}

// maxFireSqueeze bounds the squeezed channels of a fire module that becomes a FireType
// layer. From 32 on, builtin_kernels runs a 3×3 expansion apart as Winograd's F(2×2,
// 3×3) (winoPreferred), which does 2.25× fewer multiply-adds than the fused kernel's
// direct window, and the fused layer measured slower, at small batches too
// (docs/kernels/fire.md#maxfiresqueeze).
const maxFireSqueeze = 32

// fires folds every fire module into one FireType layer (see FuseWith) and returns how
// many it folded. It runs after every other rule: the Convs it takes carry their
// activations by then.
func (f *fuser) fires(keep func(*model.Layer) bool, dead map[string]bool) int {
	producer := map[string]int{}
	for i := range f.layers {
		if _, gone := f.removed[i]; !gone {
			for _, out := range f.layers[i].Outputs {
				producer[out] = i
			}
		}
	}
	shape := func(name string) []int {
		if t := f.tensor[name]; t != nil && t.Type == model.Float32 {
			return t.Shape
		}
		return nil
	}
	// conv says whether layer i is a Conv of group 1 with its W and [B] as inputs, one
	// output and no fused work but an activation, its W 4-D with a window of kh × kw.
	conv := func(i, kh, kw int) bool {
		l := &f.layers[i]
		if l.Type != "Conv" || keep(l) || len(l.Inputs) < 2 || len(l.Inputs) > 3 || len(l.Outputs) != 1 {
			return false
		}
		w := shape(l.Inputs[1])
		return l.Int("group", 1) == 1 && l.Int(FusedGlobalAveragePoolAttr, 0) == 0 && !l.Has(FusedMaxPoolPrefix+"kernel_shape") &&
			!l.Has("clhost_output_batch_stride") && len(w) == 4 && w[2] == kh && w[3] == kw
	}
	folded := 0
	for k := range f.layers {
		cat := &f.layers[k]
		if _, gone := f.removed[k]; gone || cat.Type != "Concat" || keep(cat) || len(cat.Inputs) != 2 || len(cat.Outputs) != 1 {
			continue
		}
		if axis := cat.Int("axis", 0); axis != 1 && axis != -3 || len(shape(cat.Outputs[0])) != 4 {
			continue
		}
		i1, ok1 := producer[cat.Inputs[0]]
		i3, ok3 := producer[cat.Inputs[1]]
		r1, sole1 := f.soleReader(cat.Inputs[0])
		r3, sole3 := f.soleReader(cat.Inputs[1])
		if !ok1 || !ok3 || !sole1 || !sole3 || r1 != k || r3 != k || i1 == i3 || !conv(i1, 1, 1) || !conv(i3, 3, 3) {
			continue
		}
		e1, e3 := &f.layers[i1], &f.layers[i3]
		s := e1.Inputs[0]
		isq, ok := producer[s]
		if !ok || e3.Inputs[0] != s || f.output[s] || !plain1x1(e1) || !conv(isq, 1, 1) || !plain1x1(&f.layers[isq]) {
			continue
		}
		if r := f.readers[s]; len(r) != 2 || !slices.Contains(r, i1) || !slices.Contains(r, i3) {
			continue
		}
		sq := &f.layers[isq]
		if x, w := shape(sq.Inputs[0]), shape(sq.Inputs[1]); len(x) != 4 || w[0] >= maxFireSqueeze || !sameWindow3x3(e3) {
			continue
		}
		// The fused layer: the squeeze's X and weights, then each expansion's.
		in := []string{sq.Inputs[0]}
		for _, l := range []*model.Layer{sq, e1, e3} {
			w := append(slices.Clone(l.Inputs[1:]), "")
			in = append(in, w[0], w[1])
		}
		attrs := slices.Clone(e3.Attrs)
		attrs = append(attrs, renameAttrs(sq.Attrs, squeezeNames, true)...)
		attrs = append(attrs, renameAttrs(e1.Attrs, expand1Names, true)...)
		for _, t := range in[3:] {
			if t != "" {
				f.readers[t] = append(f.readers[t], isq)
			}
		}
		for _, gone := range []string{s, e1.Outputs[0], e3.Outputs[0]} {
			delete(f.readers, gone)
			dead[gone] = true
		}
		sq.Type, sq.Inputs, sq.Attrs, sq.Outputs = FireType, in, attrs, slices.Clone(cat.Outputs)
		for _, j := range []int{i1, i3, k} {
			f.removed[j] = isq
		}
		folded++
	}
	return folded
}

// sameWindow3x3 says whether a 3×3 Conv's window keeps the plane's size at stride 1: one
// pixel of padding each side (or SAME padding), unit strides and dilations.
func sameWindow3x3(l *model.Layer) bool {
	ones := func(v []int64) bool { return !slices.ContainsFunc(v, func(e int64) bool { return e != 1 }) }
	if !ones(l.Ints("strides", nil)) || !ones(l.Ints("dilations", nil)) {
		return false
	}
	switch l.String("auto_pad", "") {
	case "SAME_UPPER", "SAME_LOWER":
		return true
	case "", "NOTSET":
		return slices.Equal(l.Ints("pads", nil), []int64{1, 1, 1, 1})
	}
	return false
}

// MaxPoolOf is the MaxPool a Conv carries under FusedMaxPoolPrefix, as a layer of its
// own with the attributes' plain names, and whether it carries one.
func MaxPoolOf(l *model.Layer) (*model.Layer, bool) {
	if l.Type != "Conv" || !l.Has(FusedMaxPoolPrefix+"kernel_shape") {
		return nil, false
	}
	pool := &model.Layer{Name: l.Name, Type: "MaxPool"}
	for _, a := range l.Attrs {
		if name, ok := strings.CutPrefix(a.Name, FusedMaxPoolPrefix); ok {
			a.Name = name
			pool.Attrs = append(pool.Attrs, a)
		}
	}
	return pool, true
}

// plain1x1 says whether a Conv's window attributes are a 1×1 convolution's: unit
// strides and dilations, no padding.
func plain1x1(l *model.Layer) bool {
	ones := func(v []int64) bool { return !slices.ContainsFunc(v, func(e int64) bool { return e != 1 }) }
	zeros := func(v []int64) bool { return !slices.ContainsFunc(v, func(e int64) bool { return e != 0 }) }
	return ones(l.Ints("strides", nil)) && ones(l.Ints("dilations", nil)) && zeros(l.Ints("pads", nil)) &&
		slices.Contains([]string{"", "NOTSET", "VALID"}, l.String("auto_pad", ""))
}

// depthwiseNames and pointwiseNames rename a Conv's fused activation to the attributes
// of the depthwise or the 1×1 part of a PointwiseDepthwiseType layer.
var (
	depthwiseNames = map[string]string{FusedActivationAttr: DepthwiseActivationAttr, FusedAlphaAttr: DepthwiseAlphaAttr,
		FusedMinAttr: DepthwiseMinAttr, FusedMaxAttr: DepthwiseMaxAttr}
	pointwiseNames = map[string]string{FusedActivationAttr: PointwiseActivationAttr, FusedAlphaAttr: PointwiseAlphaAttr,
		FusedMinAttr: PointwiseMinAttr, FusedMaxAttr: PointwiseMaxAttr}
	squeezeNames = map[string]string{FusedActivationAttr: SqueezeActivationAttr, FusedAlphaAttr: SqueezeAlphaAttr,
		FusedMinAttr: SqueezeMinAttr, FusedMaxAttr: SqueezeMaxAttr}
	expand1Names = map[string]string{FusedActivationAttr: Expand1ActivationAttr, FusedAlphaAttr: Expand1AlphaAttr,
		FusedMinAttr: Expand1MinAttr, FusedMaxAttr: Expand1MaxAttr}
)

// stemNames rename a stem's fused activation as pointwiseNames do, and its window to
// the PointwiseWindowPrefix attributes (the kernel_shape is added from W).
var stemNames = func() map[string]string {
	names := maps.Clone(pointwiseNames)
	names["pads"] = PointwiseWindowPrefix + "pads"
	names["strides"] = PointwiseWindowPrefix + "strides"
	return names
}()

// renameAttrs returns a copy of attrs with those named in rename renamed; with only, the
// others are dropped.
func renameAttrs(attrs []model.Attr, rename map[string]string, only bool) []model.Attr {
	out := make([]model.Attr, 0, len(attrs))
	for _, a := range attrs {
		if to, ok := rename[a.Name]; ok {
			a.Name = to
		} else if only {
			continue
		}
		out = append(out, a)
	}
	return out
}

// activation returns the fused attributes that stand for an activation layer, and
// whether it is one Fuse folds.
func activation(l *model.Layer) ([]model.Attr, bool) {
	if !slices.Contains(fusedActs, l.Type) || len(l.Inputs) != 1 {
		return nil, false
	}
	attrs := []model.Attr{model.StringAttr(FusedActivationAttr, l.Type)}
	switch l.Type {
	case "LeakyRelu":
		attrs = append(attrs, model.FloatAttr(FusedAlphaAttr, l.Float("alpha", 0.01)))
	case "Clip":
		// The bounds the Clip layer itself uses, written out so the defaults of the two
		// forms never have to agree.
		attrs = append(attrs,
			model.FloatAttr(FusedMinAttr, l.Float("min", -math.MaxFloat32)),
			model.FloatAttr(FusedMaxAttr, l.Float("max", math.MaxFloat32)))
	}
	return attrs, true
}

// setAttrs returns a copy of attrs with set added, replacing attributes of the same names
// and dropping stale fused parameters (an empty FusedActivationAttr may carry some).
func setAttrs(attrs, set []model.Attr) []model.Attr {
	out := make([]model.Attr, 0, len(attrs)+len(set))
	for _, a := range attrs {
		switch a.Name {
		case FusedActivationAttr, FusedAlphaAttr, FusedMinAttr, FusedMaxAttr:
			continue
		}
		out = append(out, a)
	}
	return append(out, set...)
}
