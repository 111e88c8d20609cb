package graph

import (
	"fmt"
	"slices"
)

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
