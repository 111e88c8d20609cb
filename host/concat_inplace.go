package host

import (
	"slices"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// partOf places a tensor inside another: the producers of a Concat's inputs write
// straight into the Concat's output, each at its element offset, and the Concat runs
// nothing (concatInPlace).
type partOf struct {
	whole string
	off   int // elements
}

// concatInPlace finds the Concats whose inputs can be written in place in the output
// and folds those inputs' memory into the output's: the output's lifetime starts at
// the first producer, and every producer is one of its writers. It returns the tensors
// left to plan and, per folded input, where it lies in the output.
//
// A Concat qualifies when every dimension before the axis is 1 (batch 1 along the
// channels, say), so that each input is one contiguous block of the output, or when
// only the batch is (axis 1) and every producer's plan writes its images the output's
// image apart (stridedConcatParts asked them to); each input must be written by a
// built-in layer with launches, read by this Concat alone, and be neither a graph input
// nor output nor an alias; the output is no graph output (the output reads wait on its
// producer's events). It saves a copy launch per input and the copy's memory traffic,
// twice per SqueezeNet fire module (docs/runtime.md#concat-in-place).
func (n *Network) concatInPlace(layers []*preparedLayer, ts []*memTensor, byName map[string]*memTensor, isAlias func(string) bool) ([]*memTensor, map[string]partOf) {
	parts := map[string]partOf{}
	n.inPlace = map[int]bool{}
	producer := map[string]int{}
	for si, p := range layers {
		for _, out := range p.l.Outputs {
			producer[out] = si
		}
	}
	graphOutput := func(name string) bool { return slices.Contains(n.Model.Outputs, name) }
	for si, p := range layers {
		l := p.l
		if l.Type != "Concat" || p.plan == nil || len(p.plan.Launches) == 0 || len(l.Outputs) != 1 || len(l.Inputs) < 1 {
			continue
		}
		out := byName[l.Outputs[0]]
		shape := n.Model.Tensor(l.Outputs[0]).Shape
		axis := int(l.Int("axis", 0))
		if axis < 0 {
			axis += len(shape)
		}
		if out == nil || graphOutput(out.name) || axis < 0 || axis >= len(shape) {
			continue
		}
		outer := 1
		for _, d := range shape[:axis] {
			outer *= d
		}
		image := out.bytes / n.elemBytes(out.name) / max(outer, 1)
		if outer != 1 && (axis != 1 || !producersStrided(layers, l.Inputs, producer, image)) {
			continue
		}
		ok := true
		seen := map[string]bool{}
		for _, in := range l.Inputs {
			t := byName[in]
			ps, produced := producer[in]
			if t == nil || seen[in] || isAlias(in) || graphOutput(in) || !produced || t.def != ps ||
				layers[ps].custom != nil || layers[ps].plan == nil || len(layers[ps].plan.Launches) == 0 ||
				n.inPlace[ps] || len(t.consumer) != 1 || t.consumer[0] != si || n.half[in] != n.half[out.name] {
				ok = false
				break
			}
			seen[in] = true
		}
		if !ok {
			continue
		}
		n.inPlace[si] = true
		off := 0
		for _, in := range l.Inputs {
			t := byName[in]
			parts[in] = partOf{whole: out.name, off: off}
			off += t.bytes / n.elemBytes(t.name) / outer
			out.def = min(out.def, t.def)
			out.writers = append(out.writers, t.def)
		}
		ts = slices.DeleteFunc(ts, func(t *memTensor) bool { _, folded := parts[t.name]; return folded })
	}
	return ts, parts
}

// producersStrided says whether every input of a Concat is written by a plan that puts
// its images image elements apart.
func producersStrided(layers []*preparedLayer, inputs []string, producer map[string]int, image int) bool {
	for _, in := range inputs {
		ps, ok := producer[in]
		if !ok || layers[ps].plan == nil || layers[ps].plan.OutputBatchStride != image {
			return false
		}
	}
	return true
}

// stridedConcatParts asks, before planning, the producers of each Concat along axis 1 at
// batch > 1 to write their output's images one Concat image apart
// (OutputBatchStrideAttr), so that concatInPlace can place them inside its output. It
// marks only Concats whose inputs are each the first output of a built-in layer, read by
// that Concat alone and no graph input or output, and whose output is no graph output;
// concatInPlace checks the rest. It returns, per marked Concat (by layer index), its
// producers' layer indexes.
func (n *Network) stridedConcatParts(m *model.Model) map[int][]int {
	producer := map[string]int{}
	readers := map[string]int{}
	for li := range m.Layers {
		l := &m.Layers[li]
		for oi, out := range l.Outputs {
			if oi == 0 {
				producer[out] = li
			} else {
				producer[out] = -1 // only output 0 can be asked for a stride
			}
		}
		for _, in := range l.Inputs {
			readers[in]++
		}
	}
	graphIO := map[string]bool{}
	for _, name := range append(slices.Clone(m.Inputs), m.Outputs...) {
		graphIO[name] = true
	}
	marked := map[int][]int{}
	for li := range m.Layers {
		l := &m.Layers[li]
		if l.Type != "Concat" || len(l.Outputs) != 1 || len(l.Inputs) < 2 || graphIO[l.Outputs[0]] {
			continue
		}
		t := m.Tensor(l.Outputs[0])
		if t == nil || len(t.Shape) < 2 || t.Shape[0] <= 1 {
			continue
		}
		axis := int(l.Int("axis", 0))
		if axis < 0 {
			axis += len(t.Shape)
		}
		if axis != 1 {
			continue
		}
		var ps []int
		seen := map[string]bool{}
		for _, in := range l.Inputs {
			p, ok := producer[in]
			if !ok || p < 0 || seen[in] || graphIO[in] || readers[in] != 1 {
				ps = nil
				break
			}
			if n.res.layer(&m.Layers[p]).custom != nil {
				ps = nil
				break
			}
			seen[in] = true
			ps = append(ps, p)
		}
		if ps == nil {
			continue
		}
		image := t.Elements() / t.Shape[0]
		// Only where every producer's own plan honours the stride: a tuner asked for
		// plans that cannot would time them for nothing.
		for _, p := range ps {
			if !n.honoursStride(m.Layers[p], image) {
				ps = nil
				break
			}
		}
		if ps == nil {
			continue
		}
		for _, p := range ps {
			setIntAttr(&m.Layers[p], opspec.OutputBatchStrideAttr, int64(image))
		}
		marked[li] = ps
	}
	return marked
}

// setIntAttr sets (or replaces) an integer attribute of a layer.
func setIntAttr(l *model.Layer, name string, v int64) {
	l.Attrs = slices.DeleteFunc(l.Attrs, func(a model.Attr) bool { return a.Name == name })
	l.Attrs = append(l.Attrs, model.IntAttr(name, v))
}

// honoursStride says whether a built-in layer's untuned plan writes its output's images
// image elements apart when asked to.
func (n *Network) honoursStride(l model.Layer, image int) bool {
	im := n.res.layer(&l)
	if !im.builtin() {
		return false
	}
	op := im.op
	l.Attrs = slices.Clone(l.Attrs)
	setIntAttr(&l, opspec.OutputBatchStrideAttr, int64(image))
	in, out, err := n.layerShapes(&l)
	if err != nil {
		return false
	}
	plan, err := op.Plan(&l, in, out, builtinkernels.DeviceInfoOf(n.engine.device))
	return err == nil && plan.OutputBatchStride == image
}

// replanDeclinedStrides handles the Concats that stridedConcatParts marked (by layer
// index, with their producers) whose producers, as planned (tuned, perhaps), do not all
// honour the stride: such a Concat is copied as usual, so its producers lose the
// attribute, and those whose plans spread their output are planned again, contiguous.
func (n *Network) replanDeclinedStrides(marked map[int][]int, prepared []*preparedLayer, stepOf map[int]int) error {
	m := n.Model
	for cat, producers := range marked {
		out := m.Tensor(m.Layers[cat].Outputs[0])
		image := out.Elements() / out.Shape[0]
		all := true
		for _, li := range producers {
			p := prepared[stepOf[li]]
			all = all && p.plan != nil && p.plan.OutputBatchStride == image
		}
		if all {
			continue
		}
		for _, li := range producers {
			l := &m.Layers[li]
			l.Attrs = slices.DeleteFunc(l.Attrs, func(a model.Attr) bool { return a.Name == opspec.OutputBatchStrideAttr })
			if p := prepared[stepOf[li]]; p.plan != nil && p.plan.OutputBatchStride != 0 {
				var err error
				if prepared[stepOf[li]], err = n.prepare(l); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
