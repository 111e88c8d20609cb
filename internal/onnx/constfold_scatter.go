package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/model"
)

// ScatterND on constant values. Exporters write a slice assignment of a tensor built in
// the model (Swin's shifted-window attention mask, x[a:b, c:d] = k) as ConstantOfShape
// followed by ScatterND, so the mask folds only if ScatterND does.

// scatterND writes updates into a copy of data at the index tuples of indices: each tuple
// of its last axis's length k names a slice data[i0, ..., ik-1, ...], and reduction
// (opset 16 on) says how a written value combines with the one there.
func scatterND(l *model.Layer, in []*cval) (*cval, error) {
	if len(in) != 3 || in[1] == nil || in[2] == nil {
		return nil, errNoFold
	}
	data, idx, upd := in[0], in[1], in[2]
	if !idx.isInt() {
		return nil, fmt.Errorf("indices are %s, not an integer type", idx.typ)
	}
	if len(idx.shape) == 0 {
		return nil, fmt.Errorf("indices are a scalar; they need at least one axis")
	}
	k := idx.shape[len(idx.shape)-1]
	r := len(data.shape)
	if k > r {
		return nil, fmt.Errorf("index tuples of %d values for data of rank %d", k, r)
	}
	lead := idx.shape[:len(idx.shape)-1]
	want := append(slices.Clone(lead), data.shape[k:]...)
	if !slices.Equal(upd.shape, want) {
		return nil, fmt.Errorf("updates have shape %v, want %v for data %v and indices %v", upd.shape, want, data.shape, idx.shape)
	}
	if upd.isInt() != data.isInt() {
		return nil, fmt.Errorf("updates are %s, data %s", upd.typ, data.typ)
	}
	red := l.String("reduction", "none")
	if red != "none" && red != "add" && red != "mul" && red != "max" && red != "min" {
		return nil, fmt.Errorf("reduction %q is not one of none, add, mul, max, min", red)
	}
	out := newVal(data.typ, data.shape)
	copy(out.ints, data.ints)
	copy(out.fls, data.fls)
	st := stridesOf(data.shape)
	inner := elementsOf(data.shape[k:])
	for t := range elementsOf(lead) {
		base := 0
		for j := range k {
			v := idx.ints[t*k+j]
			if v < 0 {
				v += int64(data.shape[j])
			}
			if v < 0 || v >= int64(data.shape[j]) {
				return nil, fmt.Errorf("index %d is out of range for axis %d of size %d", idx.ints[t*k+j], j, data.shape[j])
			}
			base += int(v) * st[j]
		}
		for q := range inner {
			d, u := base+q, t*inner+q
			if out.isInt() {
				out.ints[d] = combineInt(red, out.ints[d], upd.ints[u])
			} else {
				out.fls[d] = combineFloat(red, out.fls[d], upd.fls[u])
			}
		}
	}
	return out, nil
}

func combineInt(red string, old, v int64) int64 {
	switch red {
	case "add":
		return old + v
	case "mul":
		return old * v
	case "max":
		return max(old, v)
	case "min":
		return min(old, v)
	}
	return v
}

func combineFloat(red string, old, v float64) float64 {
	switch red {
	case "add":
		return old + v
	case "mul":
		return old * v
	case "max":
		return math.Max(old, v)
	case "min":
		return math.Min(old, v)
	}
	return v
}
