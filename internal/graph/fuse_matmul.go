package graph

import (
	"slices"

	"github.com/clhost/clhost/host/model"
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
