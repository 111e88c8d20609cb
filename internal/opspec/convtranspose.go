package opspec

import "fmt"

// ConvTransposeGeometry is a ConvTranspose resolved against its input and weight shapes:
// per spatial axis the kernel size, stride, dilation, the padding cut from the start,
// and the output size; and the output's channels.
type ConvTransposeGeometry struct {
	Kernel, Strides, Dilations, PadBegin, Out []int
	Channels                                  int
}

// ConvTransposeAttrs are ConvTranspose's attributes as a layer gives them (nil: absent).
type ConvTransposeAttrs struct {
	Group                                                             int64
	KernelShape, Strides, Dilations, Pads, OutputPadding, OutputShape []int64
	AutoPad                                                           string
}

// ResolveConvTranspose follows ONNX ConvTranspose: x is N, C, spatial axes; w is C,
// M/group, kernel. The output size of an axis is stride·(in−1) + output_padding +
// (k−1)·dilation + 1 − pads; with output_shape (or SAME padding, an output of in·stride)
// the padding follows from the output instead: the total split in half, the odd one at
// the end for SAME_UPPER and at the start otherwise (a negative total adds output at
// the end that no input reaches).
func ResolveConvTranspose(x, w []int, a ConvTransposeAttrs) (*ConvTransposeGeometry, error) {
	if len(x) < 3 || len(w) != len(x) {
		return nil, fmt.Errorf("input %v and weights %v: want N, C and 1 or more spatial axes, and weights of the same rank", x, w)
	}
	r := len(x) - 2
	if a.Group < 1 || int64(x[1])%a.Group != 0 || int64(w[0]) != int64(x[1]) {
		return nil, fmt.Errorf("group %d, input channels %d, weights %v: the weights' first axis must be the input channels, which group must divide", a.Group, x[1], w)
	}
	list := func(name string, v []int64, n int, def int64) ([]int, error) {
		out := make([]int, n)
		if v == nil {
			for i := range out {
				out[i] = int(def)
			}
			return out, nil
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s %v has %d values, want %d", name, v, len(v), n)
		}
		for i, e := range v {
			if e < 0 || e > MaxDim {
				return nil, fmt.Errorf("%s %v holds %d", name, v, e)
			}
			out[i] = int(e)
		}
		return out, nil
	}
	g := &ConvTransposeGeometry{Channels: w[1] * int(a.Group)}
	var err error
	if g.Kernel, err = list("kernel_shape", a.KernelShape, r, 1); err != nil {
		return nil, err
	}
	if a.KernelShape == nil {
		copy(g.Kernel, w[2:])
	}
	for i, k := range g.Kernel {
		if k != w[2+i] || k < 1 {
			return nil, fmt.Errorf("kernel_shape %v does not match the weights %v", g.Kernel, w)
		}
	}
	if g.Strides, err = list("strides", a.Strides, r, 1); err != nil {
		return nil, err
	}
	if g.Dilations, err = list("dilations", a.Dilations, r, 1); err != nil {
		return nil, err
	}
	for i := range r {
		if g.Strides[i] < 1 || g.Dilations[i] < 1 {
			return nil, fmt.Errorf("strides %v and dilations %v must be at least 1", g.Strides, g.Dilations)
		}
	}
	outPad, err := list("output_padding", a.OutputPadding, r, 0)
	if err != nil {
		return nil, err
	}
	pads, err := list("pads", a.Pads, 2*r, 0)
	if err != nil {
		return nil, err
	}
	var want []int
	if a.OutputShape != nil {
		os := a.OutputShape
		if len(os) == len(x) {
			os = os[2:] // some exporters give N and C too
		}
		if want, err = list("output_shape", os, r, 0); err != nil {
			return nil, err
		}
	}
	g.PadBegin, g.Out = make([]int, r), make([]int, r)
	for i := range r {
		full := g.Strides[i]*(x[2+i]-1) + outPad[i] + (g.Kernel[i]-1)*g.Dilations[i] + 1
		switch {
		case want != nil || a.AutoPad == "SAME_UPPER" || a.AutoPad == "SAME_LOWER":
			out := x[2+i] * g.Strides[i]
			if want != nil {
				out = want[i]
			}
			// A negative total pads the output's end: positions no input reaches.
			total := full - out
			half := total / 2
			if total < 0 && total%2 != 0 {
				half-- // floor division, as ONNX's definition computes it
			}
			g.PadBegin[i] = total - half
			if a.AutoPad == "SAME_UPPER" {
				g.PadBegin[i] = half
			}
			g.Out[i] = out
		case a.AutoPad == "VALID":
			g.Out[i] = full
		case a.AutoPad == "" || a.AutoPad == "NOTSET":
			g.PadBegin[i] = pads[i]
			g.Out[i] = full - pads[i] - pads[i+r]
		default:
			return nil, fmt.Errorf("auto_pad %q: want NOTSET, SAME_UPPER, SAME_LOWER or VALID", a.AutoPad)
		}
		if g.Out[i] < 1 {
			return nil, fmt.Errorf("spatial axis %d has no output (%d)", i, g.Out[i])
		}
	}
	return g, nil
}
