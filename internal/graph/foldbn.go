package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// FoldBatchNorm folds every inference-mode BatchNormalization that directly follows a
// Conv into that Conv, and returns how many it folded. Per output channel m, with
// s = scale/sqrt(var+epsilon), the weights become W[m]·s and the bias (b[m]−mean)·s+beta
// (b = 0 when the Conv has none), which computes the same values with one layer and one
// pass over the data fewer. A pair is folded only when the Conv's output is read by the
// BatchNormalization alone and is not a graph output, and all weights and statistics are
// float32 constants of matching sizes; anything else is left as it is. Weights shared with
// another layer are copied rather than changed. The engine runs it on every model before
// Fuse, which it must precede: a Conv that carries a fused activation is left alone.
func FoldBatchNorm(m *model.Model) int {
	reads := map[string]int{}
	for _, l := range m.Layers {
		for _, in := range l.Inputs {
			reads[in]++
		}
	}
	for _, o := range m.Outputs {
		reads[o] += 2 // a graph output is never folded away, nor changed in place
	}
	producer := map[string]int{}
	for i, l := range m.Layers {
		for _, o := range l.Outputs {
			producer[o] = i
		}
	}
	tensors := map[string]int{}
	for i := range m.Tensors {
		tensors[m.Tensors[i].Name] = i
	}
	constF32 := func(name string) *model.Tensor {
		i, ok := tensors[name]
		if !ok || name == "" {
			return nil
		}
		t := &m.Tensors[i]
		if !t.IsConst() || t.Type != model.Float32 || len(t.Data) != 4*t.Elements() {
			return nil
		}
		return t
	}

	removed := map[int]bool{}
	var dropTensors []string
	folded := 0
	for bi := range m.Layers {
		bn := &m.Layers[bi]
		if bn.Type != "BatchNormalization" || bn.Has("domain") || len(bn.Inputs) != 5 || len(bn.Outputs) != 1 ||
			bn.Int("training_mode", 0) != 0 || bn.Int("spatial", 1) != 1 {
			continue
		}
		x := bn.Inputs[0]
		ci, ok := producer[x]
		if !ok || removed[ci] || reads[x] != 1 {
			continue
		}
		conv := &m.Layers[ci]
		if conv.Type != "Conv" || conv.Has("domain") || conv.Has(opspec.FusedActivationAttr) || len(conv.Outputs) != 1 || len(conv.Inputs) < 2 || len(conv.Inputs) > 3 {
			continue
		}
		w := constF32(conv.Inputs[1])
		if w == nil || len(w.Shape) < 3 || w.Shape[0] == 0 {
			continue
		}
		mch := w.Shape[0]
		var b *model.Tensor
		if len(conv.Inputs) == 3 && conv.Inputs[2] != "" {
			if b = constF32(conv.Inputs[2]); b == nil || b.Elements() != mch {
				continue
			}
		}
		var stats [4]*model.Tensor // scale, beta, mean, var
		ok = true
		for k := range stats {
			stats[k] = constF32(bn.Inputs[1+k])
			if stats[k] == nil || stats[k].Elements() != mch {
				ok = false
			}
		}
		if !ok {
			continue
		}

		eps := float64(bn.Float("epsilon", 1e-5))
		le := binary.LittleEndian
		at := func(t *model.Tensor, i int) float64 {
			return float64(math.Float32frombits(le.Uint32(t.Data[4*i:])))
		}
		per := len(w.Data) / 4 / mch
		newW := make([]byte, len(w.Data))
		newB := make([]byte, 4*mch)
		for c := 0; c < mch; c++ {
			s := at(stats[0], c) / math.Sqrt(at(stats[3], c)+eps)
			for j := c * per; j < (c+1)*per; j++ {
				le.PutUint32(newW[4*j:], math.Float32bits(float32(at(w, j)*s)))
			}
			bias := 0.0
			if b != nil {
				bias = at(b, c)
			}
			le.PutUint32(newB[4*c:], math.Float32bits(float32((bias-at(stats[2], c))*s+at(stats[1], c))))
		}

		// Weights read only by this Conv are replaced in place; shared ones are copied
		// under a new name so the other readers keep the originals. Tensors are reached
		// by index from here on: appending may move m.Tensors.
		wName, bName := w.Name, ""
		if b != nil {
			bName = b.Name
		}
		wShape := append([]int(nil), w.Shape...)
		if reads[wName] == 1 {
			m.Tensors[tensors[wName]].Data = newW
		} else {
			reads[wName]--
			wName = freeName(m, conv.Name+".weight_bn")
			reads[wName] = 1
			m.Tensors = append(m.Tensors, model.Tensor{Name: wName, Type: model.Float32, Shape: wShape, Data: newW})
			tensors[wName] = len(m.Tensors) - 1
		}
		if bName != "" && reads[bName] == 1 {
			m.Tensors[tensors[bName]].Data = newB
		} else {
			if bName != "" {
				reads[bName]--
			}
			bName = freeName(m, conv.Name+".bias_bn")
			reads[bName] = 1
			m.Tensors = append(m.Tensors, model.Tensor{Name: bName, Type: model.Float32, Shape: []int{mch}, Data: newB})
			tensors[bName] = len(m.Tensors) - 1
		}
		conv.Inputs = []string{conv.Inputs[0], wName, bName}
		conv.Outputs = []string{bn.Outputs[0]}
		producer[bn.Outputs[0]] = ci
		for _, in := range bn.Inputs[1:] {
			reads[in]--
		}
		removed[bi] = true
		dropTensors = append(dropTensors, x)
		folded++
	}
	if folded == 0 {
		return 0
	}
	layers := m.Layers[:0]
	for i, l := range m.Layers {
		if !removed[i] {
			layers = append(layers, l)
		}
	}
	m.Layers = layers
	// The Conv's old output is gone; so are statistics and weights nothing reads now.
	drop := map[string]bool{}
	for _, n := range dropTensors {
		drop[n] = true
	}
	out := m.Tensors[:0]
	for _, t := range m.Tensors {
		if drop[t.Name] || (t.IsConst() && reads[t.Name] <= 0 && wasRead(t.Name, reads)) {
			continue
		}
		out = append(out, t)
	}
	m.Tensors = out
	return folded
}

// wasRead reports whether name was counted as read at all: constants nothing ever read
// (present before folding) are not this pass's business to remove.
func wasRead(name string, reads map[string]int) bool {
	_, ok := reads[name]
	return ok
}

// freeName returns base, or base_2, base_3, ...: the first name that no tensor and no
// layer output of m has.
func freeName(m *model.Model, base string) string {
	taken := func(name string) bool {
		return m.Tensor(name) != nil || slices.ContainsFunc(m.Layers, func(l model.Layer) bool { return slices.Contains(l.Outputs, name) })
	}
	name := base
	for k := 2; taken(name); k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	return name
}
