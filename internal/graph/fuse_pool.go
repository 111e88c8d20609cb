package graph

import (
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// The pooling rules: a GlobalAveragePool or a MaxPool folded into the Conv before it, and
// a MaxPool of a channel Concat into the Convs that feed it.

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

// globalPool says whether Conv host is a plain 4-D 1×1 convolution of at least
// minPooledChannels output channels, without a batch stride, and next, its output's sole
// reader, a GlobalAveragePool of it.
func (f *fuser) globalPool(host, next *model.Layer) bool {
	if host.Type != "Conv" || next.Type != "GlobalAveragePool" || len(next.Inputs) != 1 ||
		host.Has(opspec.OutputBatchStrideAttr) || !plain1x1(host) {
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
		host.Has(opspec.OutputBatchStrideAttr) || host.Int("group", 1) != 1 || len(next.Ints("kernel_shape", nil)) != 2 || next.Int("storage_order", 0) != 0 {
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
	producer := f.producers()
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
			if keep(conv) || len(conv.Outputs) != 1 || conv.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 ||
				conv.Has(opspec.FusedMaxPoolPrefix+"kernel_shape") || !f.maxPool(conv, pool) {
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
				a.Name = opspec.FusedMaxPoolPrefix + a.Name
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
