package opspec

import (
	"fmt"
	"slices"
)

// Window is the resolved geometry of a convolution or pooling window over the spatial
// axes (all axes after N and C): explicit per-axis pads whatever auto_pad said, so the
// kernels and shape inference agree on one computation.
type Window struct {
	Kernel    []int
	Strides   []int
	Dilations []int
	PadsBegin []int // ONNX pads[0:n]: top, left for 2-D
	PadsEnd   []int // ONNX pads[n:2n]: bottom, right for 2-D
	Out       []int // output spatial size
}

// ResolveWindow resolves a window of kernel over the spatial sizes in, given its
// attributes' values: strides and dilations (one per axis, each at least 1), pads (the
// beginning of each axis, then the end of each; nil for none) and autoPad ("" or
// NOTSET, SAME_UPPER, SAME_LOWER, VALID). It applies ONNX's output-size rules:
//   - NOTSET: out = floor((in + pad_begin + pad_end - ek) / s) + 1 with ek = (k-1)·d + 1,
//     or with ceil in place of floor when ceil is set (a pool's ceil_mode), dropping a
//     last window that would start inside the end padding;
//   - VALID: no padding, out = floor((in - ek) / s) + 1, ceil or not;
//   - SAME_UPPER / SAME_LOWER: out = ceil(in / s), padded by max(0, (out-1)·s + ek - in)
//     in all, the odd pixel at the end (UPPER) or at the beginning (LOWER).
func ResolveWindow(in, kernel, strides, dilations, pads []int, autoPad string, ceil bool) (Window, error) {
	n := len(in)
	win := Window{Kernel: slices.Clone(kernel), Strides: slices.Clone(strides), Dilations: slices.Clone(dilations),
		PadsBegin: make([]int, n), PadsEnd: make([]int, n), Out: make([]int, n)}
	if autoPad == "" {
		autoPad = "NOTSET"
	}
	if autoPad != "NOTSET" && slices.ContainsFunc(pads, func(p int) bool { return p != 0 }) {
		return Window{}, fmt.Errorf("pads %v cannot be combined with auto_pad %s", pads, autoPad)
	}
	for i := range n {
		if kernel[i] < 1 || kernel[i] > 1<<31 {
			return Window{}, fmt.Errorf("kernel %v: size %d is out of range", kernel, kernel[i])
		}
		s, ek := strides[i], (kernel[i]-1)*dilations[i]+1
		switch autoPad {
		case "NOTSET", "VALID":
			if autoPad == "NOTSET" && pads != nil {
				win.PadsBegin[i], win.PadsEnd[i] = pads[i], pads[n+i]
			}
			span := in[i] + win.PadsBegin[i] + win.PadsEnd[i] - ek
			if span < 0 {
				return Window{}, fmt.Errorf("spatial axis %d: the window spans %d but the padded input only %d", i, ek, in[i]+win.PadsBegin[i]+win.PadsEnd[i])
			}
			out := span/s + 1
			if ceil && autoPad == "NOTSET" {
				out = (span+s-1)/s + 1
				// As ONNX Runtime and PyTorch do: a last window that would start in the
				// end padding is dropped.
				if (out-1)*s >= in[i]+win.PadsBegin[i] {
					out--
				}
			}
			win.Out[i] = out
		case "SAME_UPPER", "SAME_LOWER":
			out := (in[i] + s - 1) / s
			total := max(0, (out-1)*s+ek-in[i])
			if autoPad == "SAME_UPPER" {
				win.PadsBegin[i], win.PadsEnd[i] = total/2, total-total/2
			} else {
				win.PadsBegin[i], win.PadsEnd[i] = total-total/2, total/2
			}
			win.Out[i] = out
		default:
			return Window{}, fmt.Errorf("auto_pad %q is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", autoPad)
		}
	}
	return win, nil
}
