package opspec

import (
	"fmt"
	"slices"
)

// MaxDim bounds dimensions read from attributes, so products of them cannot overflow.
const MaxDim = 1 << 52

// ReduceAxes resolves a reduction's axes attribute for rank r: nil axes reduce every
// axis, unless noop_with_empty_axes is 1, when nothing is reduced. The result marks each
// reduced axis.
func ReduceAxes(axes []int64, noopEmpty bool, r int) ([]bool, error) {
	red := make([]bool, r)
	if len(axes) == 0 {
		for i := range red {
			red[i] = !noopEmpty
		}
		return red, nil
	}
	for _, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return nil, fmt.Errorf("axes %v are out of range for rank %d", axes, r)
		}
		if a < 0 {
			a += int64(r)
		}
		if red[a] {
			return nil, fmt.Errorf("axes %v repeat axis %d", axes, a)
		}
		red[a] = true
	}
	return red, nil
}

// ReducedShape is x's shape with the reduced axes 1 (keepdims) or gone.
func ReducedShape(x []int, red []bool, keep bool) []int {
	out := []int{}
	for i, d := range x {
		switch {
		case !red[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

// TransposePerm resolves Transpose's perm for rank r (reversed axes by default).
func TransposePerm(perm []int64, r int) ([]int, error) {
	out := make([]int, r)
	if perm == nil {
		for i := range out {
			out[i] = r - 1 - i
		}
		return out, nil
	}
	if len(perm) != r {
		return nil, fmt.Errorf("perm %v has %d values for rank %d", perm, len(perm), r)
	}
	seen := make([]bool, r)
	for i, p := range perm {
		if p < 0 || p >= int64(r) || seen[p] {
			return nil, fmt.Errorf("perm %v is not a permutation of the %d axes", perm, r)
		}
		seen[p] = true
		out[i] = int(p)
	}
	return out, nil
}

// SqueezeShape is Squeeze: the given axes (of size 1) or, without axes, every axis of
// size 1 leave the shape.
func SqueezeShape(x []int, axes []int64) ([]int, error) {
	drop := make([]bool, len(x))
	for _, a := range axes {
		if a < -int64(len(x)) || a >= int64(len(x)) {
			return nil, fmt.Errorf("axes %v are out of range for rank %d", axes, len(x))
		}
		if a < 0 {
			a += int64(len(x))
		}
		if x[a] != 1 {
			return nil, fmt.Errorf("axis %d of %v has size %d, not 1", a, x, x[a])
		}
		drop[a] = true
	}
	out := []int{}
	for i, d := range x {
		if (len(axes) > 0 && !drop[i]) || (len(axes) == 0 && d != 1) {
			out = append(out, d)
		}
	}
	return out, nil
}

// UnsqueezeShape is Unsqueeze: axes of size 1 inserted at the given positions of the
// output.
func UnsqueezeShape(x []int, axes []int64) ([]int, error) {
	r := len(x) + len(axes)
	ins := make([]bool, r)
	for _, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return nil, fmt.Errorf("axes %v are out of range for the output rank %d", axes, r)
		}
		if a < 0 {
			a += int64(r)
		}
		if ins[a] {
			return nil, fmt.Errorf("axes %v repeat axis %d", axes, a)
		}
		ins[a] = true
	}
	out := make([]int, 0, r)
	k := 0
	for i := range r {
		if ins[i] {
			out = append(out, 1)
		} else {
			out = append(out, x[k])
			k++
		}
	}
	return out, nil
}

// SplitSizes resolves Split's sizes along an axis of size d into n outputs: the split
// attribute, or equal parts (the last one smaller where n does not divide d, as
// num_outputs of opset 18 allows).
func SplitSizes(split []int64, d, n int) ([]int, error) {
	if len(split) > 0 {
		if len(split) != n {
			return nil, fmt.Errorf("split %v gives %d sizes for %d outputs", split, len(split), n)
		}
		out := make([]int, n)
		sum := 0
		for i, v := range split {
			if v < 0 {
				return nil, fmt.Errorf("split %v holds a negative size", split)
			}
			out[i] = int(v)
			sum += int(v)
		}
		if sum != d {
			return nil, fmt.Errorf("split %v adds up to %d, the axis has %d", split, sum, d)
		}
		return out, nil
	}
	part := (d + n - 1) / n
	out := make([]int, n)
	left := d
	for i := range out {
		out[i] = min(part, left)
		left -= out[i]
		if out[i] <= 0 {
			return nil, fmt.Errorf("an axis of %d does not split into %d parts", d, n)
		}
	}
	return out, nil
}

// ResizeOutput is the output shape of Resize (or Upsample) of x: sizes where given, else
// floor(x·scale) per axis. axes (opset 18) names the axes scales or sizes cover; the
// others keep their size.
func ResizeOutput(x []int, scales []float32, sizes []int64, axes []int64) ([]int, error) {
	r := len(x)
	idx := make([]int, 0, r)
	if len(axes) == 0 {
		for i := range r {
			idx = append(idx, i)
		}
	} else {
		for _, a := range axes {
			if a < -int64(r) || a >= int64(r) {
				return nil, fmt.Errorf("axes %v are out of range for rank %d", axes, r)
			}
			if a < 0 {
				a += int64(r)
			}
			idx = append(idx, int(a))
		}
	}
	out := slices.Clone(x)
	switch {
	case len(sizes) > 0:
		if len(sizes) != len(idx) {
			return nil, fmt.Errorf("sizes %v has %d values for %d axes", sizes, len(sizes), len(idx))
		}
		for k, i := range idx {
			if sizes[k] < 1 || sizes[k] > MaxDim {
				return nil, fmt.Errorf("sizes %v holds %d", sizes, sizes[k])
			}
			out[i] = int(sizes[k])
		}
	case len(scales) > 0:
		if len(scales) != len(idx) {
			return nil, fmt.Errorf("scales %v has %d values for %d axes", scales, len(scales), len(idx))
		}
		for k, i := range idx {
			if !(scales[k] > 0) {
				return nil, fmt.Errorf("scales %v holds %v", scales, scales[k])
			}
			out[i] = int(float64(x[i]) * float64(scales[k]))
			if out[i] < 1 {
				return nil, fmt.Errorf("scale %v leaves axis %d of %v empty", scales[k], i, x)
			}
		}
	default:
		return nil, fmt.Errorf("neither scales nor sizes is given")
	}
	return out, nil
}

// SliceGeometry is a Slice resolved against an input shape: for every dimension, the
// first element taken, the step, and how many are taken.
type SliceGeometry struct {
	Start, Step, Out []int
}

// ResolveSlice resolves ONNX Slice's starts, ends, axes and steps (axes and steps may be
// nil) against a shape: negative values count from the end, starts and ends are clamped
// as ONNX says (to [0, dim] for positive steps, [-1, dim-1] for negative ones).
func ResolveSlice(shape []int, starts, ends, axes, steps []int64) (*SliceGeometry, error) {
	r := len(shape)
	g := &SliceGeometry{Start: make([]int, r), Step: make([]int, r), Out: slices.Clone(shape)}
	for i := range g.Step {
		g.Step[i] = 1
	}
	if len(starts) != len(ends) {
		return nil, fmt.Errorf("starts %v and ends %v differ in length", starts, ends)
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if len(axes) != len(starts) || (steps != nil && len(steps) != len(starts)) {
		return nil, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	seen := map[int64]bool{}
	for k, a := range axes {
		if a < 0 {
			a += int64(r)
		}
		if a < 0 || a >= int64(r) || seen[a] {
			return nil, fmt.Errorf("axes %v are out of range or repeated for rank %d", axes, r)
		}
		seen[a] = true
		d := int64(shape[a])
		step := int64(1)
		if steps != nil {
			step = steps[k]
		}
		if step == 0 {
			return nil, fmt.Errorf("steps %v hold a 0", steps)
		}
		s, e := starts[k], ends[k]
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		var n int64
		if step > 0 {
			s, e = min(max(s, 0), d), min(max(e, 0), d)
			n = max((e-s+step-1)/step, 0)
		} else {
			s, e = min(max(s, -1), d-1), min(max(e, -1), d-1)
			n = max((s-e-step-1)/(-step), 0)
		}
		g.Start[a], g.Step[a], g.Out[a] = int(s), int(step), int(n)
	}
	return g, nil
}
