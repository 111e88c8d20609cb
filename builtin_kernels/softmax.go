package builtinkernels

import "math"

func init() { Register("Softmax", softmaxOp{}) }

// softmaxOp is ONNX Softmax with opset-13 semantics: normalised along the single axis
// (default -1). Opsets before 13 flatten to 2-D from the axis (default 1) and normalise
// the whole row; the importer maps those onto this one (they agree when axis is the last
// dimension).
type softmaxOp struct{}

func (softmaxOp) split(p Params, in [][]int) (outer, n, inner int, err error) {
	if err := checkCounts("Softmax", in, nil, 1, 1, 0); err != nil {
		return 0, 0, 0, err
	}
	s := in[0]
	axis, err := normAxis("Softmax", "axis", paramsOr(p).Int("axis", -1), len(s))
	if err != nil {
		return 0, 0, 0, err
	}
	return numel(s[:axis]), s[axis], numel(s[axis+1:]), nil
}

func (o softmaxOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if _, _, _, err := o.split(p, in); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o softmaxOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	outer, n, inner, err := o.split(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Softmax", out, [][]int{in[0]}); err != nil {
		return nil, err
	}
	if g, ok := rowGroups(outer, n, dev); ok && inner == 1 {
		src, err := reduceSource()
		if err != nil {
			return nil, err
		}
		return &Plan{Source: src, Launches: []Launch{g.launch("softmax_wg", []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0},
			{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)},
		})}, AliasInput: -1}, nil
	}
	return o.linePlan(outer, n, inner, dev)
}

// linePlan is softmax.cl's plan: a work-item per line of n values, inner apart.
func (o softmaxOp) linePlan(outer, n, inner int, dev DeviceInfo) (*Plan, error) {
	src, err := kernelSource("softmax.cl")
	if err != nil {
		return nil, err
	}
	gl, lo := launchSize([]int{outer * inner}, dev)
	return &Plan{
		Source: src,
		Launches: []Launch{{Kernel: "softmax", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0},
			{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(inner)},
		}}},
		AliasInput: -1,
	}, nil
}

func (o softmaxOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors("Softmax", in)
	if err != nil {
		return nil, err
	}
	outer, n, inner, err := o.split(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Softmax", out, [][]int{shapes[0]}); err != nil {
		return nil, err
	}
	x := in[0].Data
	y := make([]float32, len(x))
	for a := 0; a < outer; a++ {
		for b := 0; b < inner; b++ {
			at := func(k int) int { return (a*n+k)*inner + b }
			m := math.Inf(-1)
			for k := 0; k < n; k++ {
				m = math.Max(m, float64(x[at(k)]))
			}
			var sum float64
			for k := 0; k < n; k++ {
				sum += math.Exp(float64(x[at(k)]) - m)
			}
			for k := 0; k < n; k++ {
				y[at(k)] = float32(math.Exp(float64(x[at(k)])-m) / sum)
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(shapes[0]), Data: y}}, nil
}
