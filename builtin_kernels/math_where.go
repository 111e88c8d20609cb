package builtinkernels

// whereOp is ONNX Where: condition (non-zero is true), X, Y, all broadcast.
type whereOp struct{}

func (whereOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	const typ = "Where"
	if err := checkCounts(typ, in, nil, 3, 3, 0); err != nil {
		return nil, err
	}
	s, err := broadcastShapes(typ, in[0], in[1])
	if err != nil {
		return nil, err
	}
	if s, err = broadcastShapes(typ, s, in[2]); err != nil {
		return nil, err
	}
	return [][]int{s}, nil
}

func (o whereOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Where", out, shapes); err != nil {
		return nil, err
	}
	ys := shapes[0]
	more, err := bcastArgs("Where", ys, in[0], in[1], in[2])
	if err != nil {
		return nil, err
	}
	n := numel(ys)
	gl, lo := flatLaunch(n, dev)
	args := append([]Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: 2},
		{Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)}}, more...)
	return mathPlan(Launch{Kernel: "where_bcast", Global: gl, Local: lo, Args: args})
}

func (o whereOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("Where", o, p, in, out)
	if err != nil {
		return nil, err
	}
	y := broadcastRef(want[0], in, func(v []float64) float64 {
		if v[0] != 0 {
			return v[1]
		}
		return v[2]
	})
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
