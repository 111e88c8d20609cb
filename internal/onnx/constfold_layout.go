package onnx

import (
	"fmt"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// Reshaping and slicing constant values: the shape Flatten, Reshape, Unsqueeze and Squeeze
// produce, and Slice.

// reshapeTarget is the output shape of the reshaping ops on constant inputs.
func reshapeTarget(l *model.Layer, in []*cval, opset int64) ([]int, error) {
	x := in[0]
	r := len(x.shape)
	axesOf := func() ([]int64, bool) {
		if len(in) > 1 && in[1] != nil {
			a := make([]int64, in[1].n())
			for i := range a {
				a[i] = in[1].i(i)
			}
			return a, true
		}
		return l.Ints("axes", nil), l.Has("axes")
	}
	switch l.Type {
	case "Flatten":
		axis := int(l.Int("axis", 1))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis > r {
			return nil, fmt.Errorf("axis %d is out of range", l.Int("axis", 1))
		}
		return []int{elementsOf(x.shape[:axis]), elementsOf(x.shape[axis:])}, nil
	case "Reshape":
		if len(in) < 2 || in[1] == nil {
			return nil, errNoFold
		}
		s := make([]int, in[1].n())
		infer := -1
		known := 1
		for i := range s {
			v := in[1].i(i)
			switch {
			case v == -1:
				infer = i
				continue
			case v == 0 && l.Int("allowzero", 0) == 0 && i < r:
				s[i] = x.shape[i]
			case v < 0:
				return nil, fmt.Errorf("shape has %d", v)
			default:
				s[i] = int(v)
			}
			known *= s[i]
		}
		if infer >= 0 && known > 0 {
			s[infer] = x.n() / known
		}
		return s, nil
	case "Unsqueeze":
		axes, _ := axesOf()
		nr := r + len(axes)
		s := make([]int, 0, nr)
		ins := map[int]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(nr)
			}
			if a < 0 || a >= int64(nr) || ins[int(a)] {
				return nil, fmt.Errorf("axes %v are out of range or repeated for rank %d", axes, nr)
			}
			ins[int(a)] = true
		}
		k := 0
		for i := range nr {
			if ins[i] {
				s = append(s, 1)
			} else {
				s = append(s, x.shape[k])
				k++
			}
		}
		return s, nil
	case "Squeeze":
		axes, given := axesOf()
		drop := map[int]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(r)
			}
			if a < 0 || a >= int64(r) || x.shape[a] != 1 {
				return nil, fmt.Errorf("axes %v do not name dimensions of size 1 of %v", axes, x.shape)
			}
			drop[int(a)] = true
		}
		var s []int
		for i, d := range x.shape {
			if (given && !drop[i]) || (!given && d != 1) {
				s = append(s, d)
			}
		}
		return append([]int{}, s...), nil
	}
	return nil, errNoFold
}

// sliceVal is Slice on a constant, with starts/ends/axes/steps from inputs (opset 10 on)
// or attributes.
func sliceVal(l *model.Layer, in []*cval) (*cval, error) {
	x := in[0]
	list := func(i int, name string) []int64 {
		if i < len(in) && in[i] != nil {
			a := make([]int64, in[i].n())
			for k := range a {
				a[k] = in[i].i(k)
			}
			return a
		}
		return l.Ints(name, nil)
	}
	starts, ends, axes, steps := list(1, "starts"), list(2, "ends"), list(3, "axes"), list(4, "steps")
	sp, err := opspec.ResolveSlice(x.shape, starts, ends, axes, steps)
	if err != nil {
		return nil, err
	}
	out := newVal(x.typ, sp.Out)
	st := stridesOf(x.shape)
	idx := make([]int, len(sp.Out))
	for i := range out.n() {
		unravelInto(i, sp.Out, idx)
		src := 0
		for k := range idx {
			src += (sp.Start[k] + idx[k]*sp.Step[k]) * st[k]
		}
		out.copyElem(i, x, src)
	}
	return out, nil
}
