package builtinkernels

import (
	"fmt"

	"github.com/clhost/clhost/internal/opspec"
)

// convTransposeOp is ONNX ConvTranspose over 1 to 3 spatial axes: X, W (C, M/group,
// kernel) and an optional bias B of M values.
type convTransposeOp struct{}

const convTransposeType = "ConvTranspose"

// convTransposeAttrs reads a layer's ConvTranspose attributes.
func convTransposeAttrs(p Params) opspec.ConvTransposeAttrs {
	p = paramsOr(p)
	return opspec.ConvTransposeAttrs{
		Group: p.Int("group", 1), KernelShape: p.Ints("kernel_shape", nil), Strides: p.Ints("strides", nil),
		Dilations: p.Ints("dilations", nil), Pads: p.Ints("pads", nil), OutputPadding: p.Ints("output_padding", nil),
		OutputShape: p.Ints("output_shape", nil), AutoPad: p.String("auto_pad", "NOTSET"),
	}
}

func (convTransposeOp) geometry(p Params, in [][]int) (*opspec.ConvTransposeGeometry, error) {
	if err := checkCounts(convTransposeType, in[:min(len(in), 2)], nil, 2, 2, 0); err != nil {
		return nil, err
	}
	if len(in) > 3 {
		return nil, fmt.Errorf("%s: %d inputs, want 2 or 3", convTransposeType, len(in))
	}
	x, w := in[0], in[1]
	if len(x) < 3 || len(x) > 5 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want N, C and 1 to 3 spatial axes", convTransposeType, x)
	}
	g, err := opspec.ResolveConvTranspose(x, w, convTransposeAttrs(p))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", convTransposeType, err)
	}
	if len(in) == 3 && in[2] != nil && !sameShape(in[2], []int{g.Channels}) {
		return nil, fmt.Errorf("%s: input 2 (B) has shape %v, want [%d]", convTransposeType, in[2], g.Channels)
	}
	return g, nil
}

func (o convTransposeOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	out := append([]int{in[0][0], g.Channels}, g.Out...)
	if err := checkShape(convTransposeType, "output 0", out); err != nil {
		return nil, err
	}
	return [][]int{out}, nil
}

// dhw pads spatial values to the kernel's three axes (d, h, w), leading ones getting def.
func dhw(v []int, def int) [3]int {
	out := [3]int{def, def, def}
	copy(out[3-len(v):], v)
	return out
}

func (o convTransposeOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(convTransposeType, out, shapes); err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, in)
	x := in[0]
	hasBias, bias := 0, 1
	if len(in) == 3 && in[2] != nil {
		hasBias, bias = 1, 2
	}
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: bias}, {Kind: ArgOutput, Index: 0}}
	args = append(args, intArgs(x[0], x[1], g.Channels, int(paramsOr(p).Int("group", 1)), hasBias)...)
	for _, v := range [][3]int{dhw(x[2:], 1), dhw(g.Out, 1), dhw(g.Kernel, 1), dhw(g.Strides, 1), dhw(g.Dilations, 1), dhw(g.PadBegin, 0)} {
		args = append(args, intArgs(v[:]...)...)
	}
	src, err := kernelSource("deconv.cl")
	if err != nil {
		return nil, err
	}
	gl, lo := flatLaunch(numel(shapes[0]), dev)
	return &Plan{Source: src, Launches: []Launch{{Kernel: "conv_transpose", Global: gl, Local: lo, Args: args}}, AliasInput: -1}, nil
}

// Reference scatters every input element's products into the output, the definition
// read forwards (the kernel gathers).
func (o convTransposeOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t != nil {
			if len(t.Data) != numel(t.Shape) {
				return nil, fmt.Errorf("%s: input %d has %d values for shape %v", convTransposeType, i, len(t.Data), t.Shape)
			}
			shapes[i] = t.Shape
		}
	}
	want, err := o.OutputShapes(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(convTransposeType, out, want); err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, shapes)
	x, w := in[0], in[1]
	ys := want[0]
	group := int(paramsOr(p).Int("group", 1))
	c, m := x.Shape[1], g.Channels
	cg, mg := c/group, m/group
	sp := x.Shape[2:]
	y := make([]float64, numel(ys))
	if len(in) == 3 && in[2] != nil {
		inner := numel(ys[2:])
		for i := range y {
			y[i] = float64(in[2].Data[(i/inner)%m])
		}
	}
	ks := numel(g.Kernel)
	for xi, v := range x.Data {
		xidx := unravelIndex(xi, x.Shape)
		b, ic := xidx[0], xidx[1]
		gr := ic / cg
		for ocg := range mg {
			oc := gr*mg + ocg
			for k := range ks {
				kidx := unravelIndex(k, g.Kernel)
				oi := 0
				inside := true
				for a := range sp {
					pos := xidx[2+a]*g.Strides[a] + kidx[a]*g.Dilations[a] - g.PadBegin[a]
					if pos < 0 || pos >= g.Out[a] {
						inside = false
						break
					}
					oi = oi*g.Out[a] + pos
				}
				if !inside {
					continue
				}
				y[(b*m+oc)*numel(g.Out)+oi] += float64(v) * float64(w.Data[(ic*mg+ocg)*ks+k])
			}
		}
	}
	res := make([]float32, len(y))
	for i, v := range y {
		res[i] = float32(v)
	}
	return []*HostTensor{{Shape: cloneShape(ys), Data: res}}, nil
}

func init() { Register(convTransposeType, convTransposeOp{}) }
