package graph

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/host/model"
)

// Window is the resolved geometry of a convolution or pooling window over the spatial axes
// (all axes after N and C): explicit per-axis pads whatever auto_pad said, so kernels and
// shape inference agree on one computation.
type Window struct {
	Kernel    []int
	Strides   []int
	Dilations []int
	PadsBegin []int // ONNX pads[0:n]: top, left for 2-D
	PadsEnd   []int // ONNX pads[n:2n]: bottom, right for 2-D
	Out       []int // output spatial size
}

// ConvGeometry checks a Conv layer's input (N, C, spatial…) and weight (M, C/group,
// kernel…) shapes against its attributes (kernel_shape, strides, dilations, pads, group,
// auto_pad) and resolves its window.
func ConvGeometry(l *model.Layer, x, w []int) (Window, error) {
	if len(x) < 3 {
		return Window{}, fmt.Errorf("input has shape %v; Conv needs N, C and at least one spatial axis", x)
	}
	if len(w) != len(x) {
		return Window{}, fmt.Errorf("weight shape %v has rank %d, input %v rank %d; they must match", w, len(w), x, len(x))
	}
	group, err := intAttr(l, "group", 1)
	if err != nil {
		return Window{}, err
	}
	switch {
	case group < 1:
		return Window{}, fmt.Errorf("group is %d; it must be at least 1", group)
	case x[1] != w[1]*int(group):
		return Window{}, fmt.Errorf("input has %d channels, but weight %v with group %d takes %d", x[1], w, group, w[1]*int(group))
	case w[0]%int(group) != 0:
		return Window{}, fmt.Errorf("%d output channels (weight %v) do not divide into %d groups", w[0], w, group)
	}
	kernel := w[2:]
	if l.Has("kernel_shape") {
		ks, err := intsAttr(l, "kernel_shape", len(kernel), 1, 1)
		if err != nil {
			return Window{}, err
		}
		if !slices.Equal(ks, kernel) {
			return Window{}, fmt.Errorf("kernel_shape %v does not match weight %v", ks, w)
		}
	}
	return resolveWindow(l, x[2:], kernel, false)
}

// PoolGeometry checks a MaxPool or AveragePool layer's input (N, C, spatial…) against its
// attributes (kernel_shape, strides, dilations, pads, ceil_mode, auto_pad) and resolves its
// window.
func PoolGeometry(l *model.Layer, x []int) (Window, error) {
	if len(x) < 3 {
		return Window{}, fmt.Errorf("input has shape %v; pooling needs N, C and at least one spatial axis", x)
	}
	if !l.Has("kernel_shape") {
		return Window{}, fmt.Errorf("attribute kernel_shape is required")
	}
	kernel, err := intsAttr(l, "kernel_shape", len(x)-2, 1, 1)
	if err != nil {
		return Window{}, err
	}
	ceil, err := intAttr(l, "ceil_mode", 0)
	if err != nil {
		return Window{}, err
	}
	if ceil != 0 && ceil != 1 {
		return Window{}, fmt.Errorf("ceil_mode is %d; it must be 0 or 1", ceil)
	}
	return resolveWindow(l, x[2:], kernel, ceil == 1)
}

// resolveWindow applies ONNX's output-size rules:
//   - NOTSET: out = floor((in + pad_begin + pad_end - ek) / s) + 1 with ek = (k-1)·d + 1, or
//     with ceil in place of floor when ceil is set, dropping a last window that would
//     start inside the end padding;
//   - VALID: no padding, out = floor((in - ek) / s) + 1;
//   - SAME_UPPER / SAME_LOWER: out = ceil(in / s), padded by max(0, (out-1)·s + ek - in) in
//     all, the odd pixel at the end (UPPER) or at the beginning (LOWER).
func resolveWindow(l *model.Layer, in, kernel []int, ceil bool) (Window, error) {
	n := len(in)
	win := Window{Kernel: slices.Clone(kernel), PadsBegin: make([]int, n), PadsEnd: make([]int, n), Out: make([]int, n)}
	var err error
	if win.Strides, err = intsAttr(l, "strides", n, 1, 1); err != nil {
		return Window{}, err
	}
	if win.Dilations, err = intsAttr(l, "dilations", n, 1, 1); err != nil {
		return Window{}, err
	}
	pads, err := intsAttr(l, "pads", 2*n, 0, 0)
	if err != nil {
		return Window{}, err
	}
	autoPad, err := stringAttr(l, "auto_pad", "NOTSET")
	if err != nil {
		return Window{}, err
	}
	if autoPad != "NOTSET" && slices.ContainsFunc(pads, func(p int) bool { return p != 0 }) {
		return Window{}, fmt.Errorf("pads %v cannot be combined with auto_pad %s", pads, autoPad)
	}
	for i := range n {
		if kernel[i] < 1 || kernel[i] > 1<<31 {
			return Window{}, fmt.Errorf("kernel %v: size %d is out of range", kernel, kernel[i])
		}
		s, ek := win.Strides[i], (kernel[i]-1)*win.Dilations[i]+1
		switch autoPad {
		case "NOTSET", "VALID":
			if autoPad == "NOTSET" {
				win.PadsBegin[i], win.PadsEnd[i] = pads[i], pads[n+i]
			}
			span := in[i] + win.PadsBegin[i] + win.PadsEnd[i] - ek
			if span < 0 {
				return Window{}, fmt.Errorf("spatial axis %d: the window spans %d but the padded input only %d", i, ek, in[i]+win.PadsBegin[i]+win.PadsEnd[i])
			}
			out := span/s + 1
			if ceil && autoPad == "NOTSET" {
				out = (span+s-1)/s + 1
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

// intAttr reads an integer attribute, refusing one of another kind rather than silently
// using the default.
func intAttr(l *model.Layer, name string, def int64) (int64, error) {
	a := l.Attr(name)
	if a == nil {
		return def, nil
	}
	if a.Kind != model.AttrInt {
		return 0, fmt.Errorf("attribute %s must be an int", name)
	}
	return a.Int, nil
}

// intsAttr reads an integer-list attribute of n values, each at least min; when absent,
// every value is def.
func intsAttr(l *model.Layer, name string, n int, def, min int) ([]int, error) {
	out := make([]int, n)
	a := l.Attr(name)
	if a == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if a.Kind != model.AttrInts {
		return nil, fmt.Errorf("attribute %s must be a list of ints", name)
	}
	if len(a.Ints) != n {
		return nil, fmt.Errorf("attribute %s has %d values %v, want %d", name, len(a.Ints), a.Ints, n)
	}
	for i, v := range a.Ints {
		if v < int64(min) || v > 1<<31 {
			return nil, fmt.Errorf("attribute %s %v: value %d is out of range", name, a.Ints, v)
		}
		out[i] = int(v)
	}
	return out, nil
}

func stringAttr(l *model.Layer, name, def string) (string, error) {
	a := l.Attr(name)
	if a == nil {
		return def, nil
	}
	if a.Kind != model.AttrString {
		return "", fmt.Errorf("attribute %s must be a string", name)
	}
	return a.Str, nil
}
