package graph

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// FuseStats counts what Fuse folded.
type FuseStats struct {
	ConvActivation   int // activations folded into a Conv (after its residual Add, if any)
	ConvResidual     int // Adds folded into a Conv as its residual input
	GemmActivation   int // activations folded into a Gemm
	InvertedResidual int // depthwise Convs folded into the 1×1 Conv before them
	Projection       int // 1×1 Convs folded into the opspec.InvertedResidualType layer before them
	ConvGlobalPool   int // GlobalAveragePools folded into the 1×1 Conv before them
	ConvMaxPool      int // MaxPools folded into the Conv before them
	ConcatMaxPool    int // MaxPools of a Concat folded into the Convs that feed it
	Fire             int // fire modules (a squeeze, two expansions and their Concat) made one layer
	MatMulBias       int // Adds of a constant bias folded into the MatMul before them
	Gelu             int // GELUs written out as Div, Erf, Add, Mul, Mul made one Gelu layer
	MatMulScale      int // Muls of a MatMul's operand by a scalar constant folded into it
}

// Layers is the number of layers Fuse removed.
func (s FuseStats) Layers() int {
	return s.ConvActivation + s.ConvResidual + s.GemmActivation + s.InvertedResidual + s.Projection + s.ConvGlobalPool + s.ConvMaxPool + s.ConcatMaxPool + 3*s.Fire + s.MatMulBias + 4*s.Gelu + s.MatMulScale
}

func (s FuseStats) String() string {
	out := fmt.Sprintf("%d Conv+activation, %d Conv+Add, %d Gemm+activation", s.ConvActivation, s.ConvResidual, s.GemmActivation)
	if s.InvertedResidual > 0 {
		out += fmt.Sprintf(", %d 1×1+depthwise Conv", s.InvertedResidual)
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
	if s.MatMulBias > 0 {
		out += fmt.Sprintf(", %d MatMul+bias", s.MatMulBias)
	}
	if s.MatMulScale > 0 {
		out += fmt.Sprintf(", %d scalar Mul+MatMul", s.MatMulScale)
	}
	if s.Gelu > 0 {
		out += fmt.Sprintf(", %d GELU chains", s.Gelu)
	}
	return out
}

// FuseOptions tune Fuse.
type FuseOptions struct {
	// Keep reports layer types that must take no part in fusion, neither absorbing nor
	// absorbed: the types a custom-layer configuration implements, whose kernels know
	// nothing of the fused attributes. Nil keeps none.
	Keep func(layerType string) bool
	// InvertedResidual folds a 1×1 Conv and the depthwise Conv that alone reads it into
	// one InvertedResidualType layer (MobileNet's expansion and depthwise layers), which
	// CPU devices run faster than the two.
	InvertedResidual bool
	// ProjectionMinRows, where above 0, folds the plain 1×1 Conv that alone reads a small
	// InvertedResidualType layer's output (MobileNet's projection, and then its residual
	// Add) into it, a whole inverted residual block in one layer, where that output has
	// at least this many rows over the batch (N × height): the block kernel runs a row of
	// every channel per work-item, so fewer rows than compute units leave units idle.
	ProjectionMinRows int
	// ProjectionTallRows, where above 0, also folds the projection of a block of any size
	// into it where its output rows over the batch (N × height) are at least this many
	// and the rolling kernel's buffers fit (opspec.InvResRollingFits): builtin_kernels' pwdwr then
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
// BatchNormalization into Conv (FoldBatchNorm, which must not see fused
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
//   - With opts.InvertedResidual, a plain 1×1 Conv (with or without an activation; no
//     residual, unit strides, no padding) → a depthwise Conv (2-D, group = channels = W's
//     first dimension, undilated, its window rows within what the kernel's buffer
//     holds): one InvertedResidualType layer, which then takes an activation as a Conv
//     does (MobileNet's expansion and depthwise layers). A stem Conv (group 1,
//     undilated, explicit pads, a window wider than 1×1 and at most maxStemTaps taps per
//     output) joins its depthwise Conv the same way, its window under
//     ExpansionWindowPrefix.
//   - With opts.ProjectionMinRows, a InvertedResidualType layer of at most
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
//   - A MatMul whose B has rank 2 or more → Add of a constant float bias [N], N the
//     output's last axis (in either input slot): the bias becomes the MatMul's input 2.
//   - Div(x, √2) (or Mul by 1/√2) → Erf → Add 1 → Mul by x → Mul by 0.5, each a scalar
//     constant and each output read by the next alone: one Gelu layer of x (GELU as
//     exported before opset 20).
//   - Mul of a float tensor by a one-element float constant (either slot), whose output
//     only a MatMul reads, as either operand: the MatMul reads the Mul's tensor instead
//     and multiplies its product by the constant (opspec.MatMulScaleAttr); it stays in
//     its place, and the Mul goes.
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
			if host.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 || host.Has(opspec.FusedMaxPoolPrefix+"kernel_shape") {
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
			} else if opts.InvertedResidual && f.invertedResidual(host, next) {
				f.take(i, j)
				f.appendWeights(i, next.Inputs, 3)
				host.Type = opspec.InvertedResidualType
				w := f.tensor[host.Inputs[1]].Shape // [M, C, KH, KW] (pointwiseDepthwise checked)
				if w[2] == 1 && w[3] == 1 && plain1x1(host) {
					host.Attrs = append(slices.Clone(next.Attrs), renameAttrs(host.Attrs, expansionNames, true)...)
				} else {
					// A stem: its window, the kernel_shape taken from W where the Conv leaves
					// it out, moves under ExpansionWindowPrefix.
					stem := append(renameAttrs(host.Attrs, stemNames, true), model.IntsAttr(opspec.ExpansionWindowPrefix+"kernel_shape", int64(w[2]), int64(w[3])))
					host.Attrs = append(slices.Clone(next.Attrs), stem...)
				}
				stats.InvertedResidual++
			} else if (opts.ProjectionMinRows > 0 || opts.ProjectionTallRows > 0) && f.projection(host, next, opts) {
				f.take(i, j)
				f.appendWeights(i, next.Inputs, 5)
				host.Attrs = renameAttrs(host.Attrs, depthwiseNames, false)
				stats.Projection++
			} else if opts.GlobalAveragePool && f.globalPool(host, next) {
				f.take(i, j)
				host.Attrs = append(slices.Clone(host.Attrs), model.IntAttr(opspec.FusedGlobalAveragePoolAttr, 1))
				stats.ConvGlobalPool++
			} else if opts.MaxPool && f.maxPool(host, next) {
				f.take(i, j)
				host.Attrs = slices.Clone(host.Attrs)
				for _, a := range next.Attrs {
					a.Name = opspec.FusedMaxPoolPrefix + a.Name
					host.Attrs = append(host.Attrs, a)
				}
				stats.ConvMaxPool++
			} else if attrs, ok := activation(next); ok && host.String(opspec.FusedActivationAttr, "") == "" {
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
	stats.MatMulBias = f.matmulBiases(keep, dead)
	stats.Gelu = f.gelus(keep, dead)
	stats.MatMulScale = f.matmulScales(keep, dead)
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

// producers maps each output of the layers still there to its layer.
func (f *fuser) producers() map[string]int {
	producer := map[string]int{}
	for i := range f.layers {
		if _, gone := f.removed[i]; !gone {
			for _, out := range f.layers[i].Outputs {
				producer[out] = i
			}
		}
	}
	return producer
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

// plain1x1 says whether a Conv's window attributes are a 1×1 convolution's: unit
// strides and dilations, no padding.
func plain1x1(l *model.Layer) bool {
	ones := func(v []int64) bool { return !slices.ContainsFunc(v, func(e int64) bool { return e != 1 }) }
	zeros := func(v []int64) bool { return !slices.ContainsFunc(v, func(e int64) bool { return e != 0 }) }
	return ones(l.Ints("strides", nil)) && ones(l.Ints("dilations", nil)) && zeros(l.Ints("pads", nil)) &&
		slices.Contains([]string{"", "NOTSET", "VALID"}, l.String("auto_pad", ""))
}

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
