package onnx

import "github.com/clhost/clhost/internal/opspec"

// Index arithmetic on row-major shapes: element counts, strides, unravelling, numpy
// broadcasting.

func elementsOf(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func stridesOf(s []int) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

func unravelInto(i int, s, idx []int) {
	for k := len(s) - 1; k >= 0; k-- {
		idx[k] = i % s[k]
		i /= s[k]
	}
}

// broadcastAll is numpy's broadcast of several shapes (opspec.Broadcast, pairwise).
func broadcastAll(shapes ...[]int) ([]int, error) {
	var out []int
	for _, s := range shapes {
		var err error
		if out, err = opspec.Broadcast(out, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bcastIndex maps an element index of shape out to the element of a tensor of shape s
// that broadcasts to it.
func bcastIndex(s, out []int) func(int) int {
	st := stridesOf(s)
	idx := make([]int, len(out))
	return func(i int) int {
		unravelInto(i, out, idx)
		off := 0
		for k, d := range s {
			if d != 1 {
				off += idx[len(out)-len(s)+k] * st[k]
			}
		}
		return off
	}
}
