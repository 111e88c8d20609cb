package graph

import (
	"math"
	"slices"

	"github.com/clhost/clhost/model"
)

// GELU as PyTorch exports it before opset 20, which has no Gelu operator:
// Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5), five layers and four trips of the tensor
// through memory where builtin_kernels' Gelu is one (a transformer's MLP has one per
// block).

// gelus folds each such chain into one Gelu layer in the last Mul's place and returns
// how many it folded.
func (f *fuser) gelus(keep func(*model.Layer) bool, dead map[string]bool) int {
	folded := 0
	for i := range f.layers {
		div := &f.layers[i]
		if _, gone := f.removed[i]; gone || keep(div) || len(div.Inputs) != 2 || len(div.Outputs) != 1 {
			continue
		}
		x := div.Inputs[0]
		if !(div.Type == "Div" && f.scalar(div.Inputs[1], math.Sqrt2) || div.Type == "Mul" && f.scalar(div.Inputs[1], 1/math.Sqrt2)) {
			continue
		}
		chain := []int{i}
		// next is the sole reader of the chain's last output, of type typ, whose other
		// input (for a binary layer) passes ok.
		next := func(typ string, ok func(other string) bool) bool {
			last := &f.layers[chain[len(chain)-1]]
			j, sole := f.soleReader(last.Outputs[0])
			if !sole || keep(&f.layers[j]) || f.layers[j].Type != typ || len(f.layers[j].Outputs) != 1 {
				return false
			}
			l := &f.layers[j]
			switch {
			case ok == nil && len(l.Inputs) == 1:
			case ok != nil && len(l.Inputs) == 2 && l.Inputs[0] == last.Outputs[0] && ok(l.Inputs[1]):
			case ok != nil && len(l.Inputs) == 2 && l.Inputs[1] == last.Outputs[0] && ok(l.Inputs[0]):
			default:
				return false
			}
			chain = append(chain, j)
			return true
		}
		one := func(t string) bool { return f.scalar(t, 1) }
		half := func(t string) bool { return f.scalar(t, 0.5) }
		isX := func(t string) bool { return t == x }
		if !next("Erf", nil) || !next("Add", one) || !next("Mul", isX) || !next("Mul", half) {
			continue
		}
		if xt, yt := f.tensor[x], f.tensor[f.layers[chain[4]].Outputs[0]]; xt == nil || yt == nil || xt.Type != model.Float32 || !slices.Equal(xt.Shape, yt.Shape) {
			continue // a broadcast somewhere in the chain
		}
		consts := []string{div.Inputs[1]}
		for _, j := range chain[1:] {
			dead[f.layers[chain[0]].Outputs[0]] = true
			for _, in := range f.layers[j].Inputs {
				if t := f.tensor[in]; t != nil && t.IsConst() {
					consts = append(consts, in)
				}
			}
			f.take(i, j)
		}
		// The layer reads x alone now; constants no other layer reads go.
		if r := f.readers[div.Inputs[1]]; slices.Contains(r, i) {
			k := slices.Index(r, i)
			f.readers[div.Inputs[1]] = slices.Delete(slices.Clone(r), k, k+1)
		}
		div.Type, div.Inputs, div.Attrs = "Gelu", []string{x}, nil
		for _, c := range consts {
			if len(f.readers[c]) == 0 && !f.output[c] {
				dead[c] = true
			}
		}
		folded++
	}
	return folded
}

// scalar says whether a tensor is a float32 constant of one element within 1e-6
// (relative) of v.
func (f *fuser) scalar(name string, v float64) bool {
	d, ok := f.scalarValue(name)
	return ok && math.Abs(d-v) <= 1e-6*math.Abs(v)
}
