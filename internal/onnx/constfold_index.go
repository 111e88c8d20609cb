package onnx

import "fmt"

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

// broadcastAll is numpy's broadcast of several shapes.
func broadcastAll(shapes ...[]int) ([]int, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for k, d := range s {
			j := r - len(s) + k
			switch {
			case d == out[j] || d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast", shapes)
			}
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
