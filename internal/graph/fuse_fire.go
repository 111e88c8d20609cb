package graph

import (
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// SqueezeNet's rule: a fire module (a squeeze, two expansions and their Concat) made one
// layer.

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
		return l.Int("group", 1) == 1 && l.Int(opspec.FusedGlobalAveragePoolAttr, 0) == 0 && !l.Has(opspec.FusedMaxPoolPrefix+"kernel_shape") &&
			!l.Has(opspec.OutputBatchStrideAttr) && len(w) == 4 && w[2] == kh && w[3] == kw
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
		sq.Type, sq.Inputs, sq.Attrs, sq.Outputs = opspec.FireType, in, attrs, slices.Clone(cat.Outputs)
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

// squeezeNames and expand1Names rename a Conv's fused activation to the attributes of the
// squeeze or the 1×1 expansion of a FireType layer.
var (
	squeezeNames = map[string]string{opspec.FusedActivationAttr: opspec.SqueezeActivationAttr, opspec.FusedAlphaAttr: opspec.SqueezeAlphaAttr,
		opspec.FusedMinAttr: opspec.SqueezeMinAttr, opspec.FusedMaxAttr: opspec.SqueezeMaxAttr}
	expand1Names = map[string]string{opspec.FusedActivationAttr: opspec.Expand1ActivationAttr, opspec.FusedAlphaAttr: opspec.Expand1AlphaAttr,
		opspec.FusedMinAttr: opspec.Expand1MinAttr, opspec.FusedMaxAttr: opspec.Expand1MaxAttr}
)
