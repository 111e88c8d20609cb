package builtinkernels

import (
	"fmt"
	"math"
)

// The element-wise rows with kernels of their own in elementwise.cl become these layer
// types; the other rows are math.go's.
func init() {
	for _, f := range unaryFns {
		switch {
		case f.kernel == "" || f.internal:
		case f.name == "Clip":
			Register(f.name, clipOp{attrs: unaryOp{typ: f.name, kernel: f.kernel, attrs: f.attrs, f: f.ref}})
		default:
			Register(f.name, unaryOp{typ: f.name, kernel: f.kernel, attrs: f.attrs, f: f.ref})
		}
	}
	for _, f := range binaryFns {
		if f.kernel != "" && !f.internal {
			Register(f.name, binaryOp{typ: f.name, kernel: f.kernel, f: f.ref})
		}
	}
	Register("BatchNormalization", batchNormOp{})
}

func leakyAttrs(p Params) (float32, float32, error) { return p.Float("alpha", 0.01), 0, nil }

func hardSigmoidAttrs(p Params) (float32, float32, error) {
	return p.Float("alpha", 0.2), p.Float("beta", 0.5), nil
}

// HardSwish is HardSigmoid with ONNX's fixed alpha 1/6 and beta 1/2, times x.
func hardSwishAttrs(Params) (float32, float32, error) { return 1.0 / 6, 0.5, nil }

// clipAttrs reads min and max from attributes (Clip before opset 11). From opset 11 they
// are optional inputs 1 and 2; the importer turns constant ones into these attributes,
// and clipOp (math_clip.go) takes the others.
func clipAttrs(p Params) (float32, float32, error) {
	lo := p.Float("min", -math.MaxFloat32)
	hi := p.Float("max", math.MaxFloat32)
	if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
		return 0, 0, fmt.Errorf("%s: min %v / max %v: NaN bounds", "Clip", lo, hi)
	}
	return lo, hi, nil
}

// unaryOp is an element-wise activation with up to two float attributes.
type unaryOp struct {
	typ    string
	kernel string
	attrs  func(Params) (float32, float32, error)
	f      func(x, a, b float64) float64
}

func (o unaryOp) params(p Params) (float32, float32, error) {
	if o.attrs == nil {
		return 0, 0, nil
	}
	return o.attrs(paramsOr(p))
}

func (o unaryOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if o.typ == "Clip" && len(in) > 1 {
		return nil, fmt.Errorf("%s: %d inputs: min and max are read from the min/max attributes; constant min/max inputs must be turned into those attributes by the importer", o.typ, len(in))
	}
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o unaryOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	a, b, err := o.params(p)
	if err != nil {
		return nil, err
	}
	src, err := elementwiseSource()
	if err != nil {
		return nil, err
	}
	n := numel(in[0])
	gl, lo := launchSize([]int{n}, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: o.kernel, Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgFloat, Float: a}, {Kind: ArgFloat, Float: b},
		}}},
		AliasInput: -1,
	}, nil
}

func (o unaryOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	a, b, err := o.params(p)
	if err != nil {
		return nil, err
	}
	y := make([]float32, len(in[0].Data))
	for i, v := range in[0].Data {
		y[i] = float32(o.f(float64(v), float64(a), float64(b)))
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

// binaryOp is element-wise arithmetic with numpy broadcasting of both operands.
type binaryOp struct {
	typ    string
	kernel string
	f      func(a, b float64) float64
}

// maxBcastRank is how many dimensions the broadcast kernel indexes after merging.
const maxBcastRank = 6

func (o binaryOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 2, 2, 0); err != nil {
		return nil, err
	}
	s, err := broadcastShapes(o.typ, in[0], in[1])
	if err != nil {
		return nil, err
	}
	if err := checkShape(o.typ, "output 0", s); err != nil {
		return nil, err
	}
	return [][]int{s}, nil
}

func (o binaryOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	src, err := elementwiseSource()
	if err != nil {
		return nil, err
	}
	ys := shapes[0]
	n := numel(ys)
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)}}
	kernel := o.kernel + "_same"
	if !sameShape(in[0], ys) || !sameShape(in[1], ys) {
		kernel = o.kernel + "_bcast"
		dims, st := coalesce(ys, broadcastStrides(in[0], ys), broadcastStrides(in[1], ys))
		if len(dims) > maxBcastRank {
			return nil, fmt.Errorf("%s: broadcasting %v with %v needs %d index dimensions after merging, the kernel handles %d", o.typ, in[0], in[1], len(dims), maxBcastRank)
		}
		// Right-align into the kernel's six dimensions; the missing leading ones have
		// size 1 and stride 0.
		var d, as, bs [maxBcastRank]int
		for i := range d {
			d[i] = 1
		}
		off := maxBcastRank - len(dims)
		for i := range dims {
			d[off+i], as[off+i], bs[off+i] = dims[i], st[0][i], st[1][i]
		}
		args = append(args, intArgs(d[1:]...)...)
		args = append(args, intArgs(as[:]...)...)
		args = append(args, intArgs(bs[:]...)...)
	}
	gl, lo := launchSize([]int{n}, dev)
	return &Plan{
		Source:     src,
		Launches:   []Launch{{Kernel: kernel, Global: gl, Local: lo, Args: args}},
		AliasInput: -1,
	}, nil
}

func (o binaryOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	ys := want[0]
	y := make([]float32, numel(ys))
	idx := make([]int, len(ys))
	// at reads an operand at the output index idx by numpy's rule: the operand's
	// dimensions align at the right, and a size-1 dimension repeats its only element.
	at := func(t *HostTensor) float64 {
		off := 0
		for j, d := range t.Shape {
			k := idx[len(ys)-len(t.Shape)+j]
			if d == 1 {
				k = 0
			}
			off = off*d + k
		}
		return float64(t.Data[off])
	}
	for i := range y {
		r := i
		for j := len(ys) - 1; j >= 0; j-- {
			idx[j] = r % ys[j]
			r /= ys[j]
		}
		y[i] = float32(o.f(at(in[0]), at(in[1])))
	}
	return []*HostTensor{{Shape: cloneShape(ys), Data: y}}, nil
}

// batchNormOp is ONNX BatchNormalization in inference mode: X (N, C, ...), then scale,
// B, mean and var, each of C values.
type batchNormOp struct{}

func (batchNormOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	const typ = "BatchNormalization"
	if err := checkCounts(typ, in, nil, 5, 5, 0); err != nil {
		return nil, err
	}
	if len(in[0]) < 2 {
		return nil, fmt.Errorf("%s: input 0 has shape %v: want rank 2 or more (N, C, ...)", typ, in[0])
	}
	c := in[0][1]
	for i, name := range []string{"scale", "B", "mean", "var"} {
		if s := in[i+1]; numel(s) != c || len(s) != 1 {
			return nil, fmt.Errorf("%s: input %d (%s) has shape %v, want [%d]", typ, i+1, name, s, c)
		}
	}
	if p := paramsOr(p); p.Has("training_mode") && p.Int("training_mode", 0) != 0 {
		return nil, fmt.Errorf("%s: training_mode %d: only inference is supported", typ, p.Int("training_mode", 0))
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o batchNormOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("BatchNormalization", out, shapes); err != nil {
		return nil, err
	}
	src, err := elementwiseSource()
	if err != nil {
		return nil, err
	}
	n := numel(in[0])
	c := in[0][1]
	args := []Arg{}
	for i := 0; i < 5; i++ {
		args = append(args, Arg{Kind: ArgInput, Index: i})
	}
	args = append(args, Arg{Kind: ArgOutput, Index: 0},
		Arg{Kind: ArgInt, Int: int32(n)}, Arg{Kind: ArgInt, Int: int32(c)},
		Arg{Kind: ArgInt, Int: int32(n / (in[0][0] * c))}, Arg{Kind: ArgFloat, Float: p.Float("epsilon", 1e-5)})
	gl, lo := launchSize([]int{n}, dev)
	return &Plan{
		Source:     src,
		Launches:   []Launch{{Kernel: "batchnorm", Global: gl, Local: lo, Args: args}},
		AliasInput: -1,
	}, nil
}

func (o batchNormOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	const typ = "BatchNormalization"
	p = paramsOr(p)
	shapes, want, err := referenceShapes(typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	eps := float64(p.Float("epsilon", 1e-5))
	s := shapes[0]
	C := s[1]
	inner := numel(s[2:])
	y := make([]float32, numel(s))
	for n := 0; n < s[0]; n++ {
		for c := 0; c < C; c++ {
			scale, bias := float64(in[1].Data[c]), float64(in[2].Data[c])
			mean, variance := float64(in[3].Data[c]), float64(in[4].Data[c])
			for j := 0; j < inner; j++ {
				i := (n*C+c)*inner + j
				y[i] = float32(scale*(float64(in[0].Data[i])-mean)/math.Sqrt(variance+eps) + bias)
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
