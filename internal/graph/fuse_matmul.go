package graph

import (
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// A Linear layer as PyTorch exports it: MatMul(x, W) then Add of a constant bias over
// the last axis. builtin_kernels' MatMul takes the bias as its input 2 and adds it as it
// writes each output, saving a launch and a trip of the whole output through memory.

// matmulBiases folds into each MatMul the Add of a constant bias that alone reads its
// output (see FuseWith) and returns how many it folded.
func (f *fuser) matmulBiases(keep func(*model.Layer) bool, dead map[string]bool) int {
	folded := 0
	for i := range f.layers {
		mm := &f.layers[i]
		if _, gone := f.removed[i]; gone || mm.Type != "MatMul" || keep(mm) || len(mm.Inputs) != 2 || len(mm.Outputs) != 1 {
			continue
		}
		b, y := f.tensor[mm.Inputs[1]], f.tensor[mm.Outputs[0]]
		if b == nil || y == nil || len(b.Shape) < 2 || len(y.Shape) == 0 {
			continue
		}
		j, ok := f.soleReader(mm.Outputs[0])
		add := &f.layers[j]
		if !ok || add.Type != "Add" || keep(add) || len(add.Inputs) != 2 || len(add.Outputs) != 1 {
			continue
		}
		bias := add.Inputs[0]
		if bias == mm.Outputs[0] {
			bias = add.Inputs[1]
		}
		bt, sum := f.tensor[bias], f.tensor[add.Outputs[0]]
		// The bias must be [N], N the output's last axis, so that the Add keeps the
		// MatMul's shape.
		if bt == nil || !bt.IsConst() || bt.Type != model.Float32 || len(bt.Shape) != 1 || bt.Shape[0] != y.Shape[len(y.Shape)-1] ||
			sum == nil || !slices.Equal(sum.Shape, y.Shape) {
			continue
		}
		out := mm.Outputs[0]
		f.take(i, j)
		mm.Inputs = append(slices.Clone(mm.Inputs), bias)
		f.readers[bias] = append(f.readers[bias], i)
		dead[out] = true
		folded++
	}
	return folded
}

// Attention as PyTorch exports it scales queries and keys before their product:
// MatMul(Mul(q, s), Mul(kᵀ, s)), two launches and two trips of each operand through
// memory per block, where the product can scale what it writes.

// matmulScales folds into each MatMul the Muls of its operands by a scalar constant that
// alone read into it, multiplying their constants into opspec.MatMulScaleAttr, and
// returns how many Muls it folded.
func (f *fuser) matmulScales(keep func(*model.Layer) bool, dead map[string]bool) int {
	producer := f.producers()
	folded := 0
	for i := range f.layers {
		mm := &f.layers[i]
		if _, gone := f.removed[i]; gone || mm.Type != "MatMul" || keep(mm) || len(mm.Inputs) < 2 || len(mm.Outputs) != 1 {
			continue
		}
		for k := 0; k < 2; k++ {
			j, ok := producer[mm.Inputs[k]]
			if !ok {
				continue
			}
			mul := &f.layers[j]
			if _, gone := f.removed[j]; gone || mul.Type != "Mul" || keep(mul) || len(mul.Inputs) != 2 || len(mul.Outputs) != 1 {
				continue
			}
			if r, sole := f.soleReader(mul.Outputs[0]); !sole || r != i || f.output[mul.Outputs[0]] {
				continue
			}
			x, s := mul.Inputs[0], mul.Inputs[1]
			if _, ok := f.scalarValue(x); ok {
				x, s = s, x
			}
			v, ok := f.scalarValue(s)
			xt, yt := f.tensor[x], f.tensor[mul.Outputs[0]]
			if !ok || xt == nil || yt == nil || xt.Type != model.Float32 || !slices.Equal(xt.Shape, yt.Shape) {
				continue
			}
			out := mul.Outputs[0]
			mm.Inputs = slices.Clone(mm.Inputs)
			mm.Inputs[k] = x
			mm.Attrs = setAttrs(mm.Attrs, []model.Attr{model.FloatAttr(opspec.MatMulScaleAttr, float32(float64(mm.Float(opspec.MatMulScaleAttr, 1))*v))})
			f.readers[x] = replaceReader(f.readers[x], j, i)
			f.readers[s] = replaceReader(f.readers[s], j, -1)
			delete(f.readers, out)
			if len(f.readers[s]) == 0 && !f.output[s] {
				dead[s] = true
			}
			f.removed[j] = i
			dead[out] = true
			folded++
		}
	}
	return folded
}

// scalarValue is the value of a one-element float32 constant.
func (f *fuser) scalarValue(name string) (float64, bool) {
	t := f.tensor[name]
	if t == nil || !t.IsConst() || t.Type != model.Float32 || t.Elements() != 1 {
		return 0, false
	}
	d, err := t.Float32s()
	if err != nil {
		return 0, false
	}
	return float64(d[0]), true
}

// replaceReader replaces reader from by to (removes it where to is -1) in a readers list.
func replaceReader(r []int, from, to int) []int {
	k := slices.Index(r, from)
	if k < 0 {
		return r
	}
	r = slices.Clone(r)
	if to < 0 {
		return slices.Delete(r, k, k+1)
	}
	r[k] = to
	return r
}
