package builtinkernels

// variadicOp is Sum, Max, Min or Mean of one or more operands with numpy broadcasting:
// the first two combine into the output, each further one into it in place; Mean's last
// step scales the sum by 1/count.
type variadicOp struct{ typ string }

func (o variadicOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1<<16, 0); err != nil {
		return nil, err
	}
	s := cloneShape(in[0])
	for _, t := range in[1:] {
		var err error
		if s, err = broadcastShapes(o.typ, s, t); err != nil {
			return nil, err
		}
	}
	return [][]int{s}, nil
}

func (o variadicOp) code() int {
	switch o.typ {
	case "Max":
		return binaryCode(maxFn)
	case "Min":
		return binaryCode(minFn)
	}
	return binaryCode("Add")
}

func (o variadicOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	ys := shapes[0]
	scale := float32(1) / float32(len(in))
	if len(in) == 1 {
		// One operand: its copy (the mean of one value is itself).
		n := numel(ys)
		gl, lo := flatLaunch(n, dev)
		return mathPlan(Launch{Kernel: "unary_op", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
			{Kind: ArgInt, Int: int32(unaryCode(copyFn))}, {Kind: ArgFloat}, {Kind: ArgFloat}}})
	}
	step := func(last bool) int {
		if o.typ == "Mean" && last {
			return binaryCode(meanLastFn)
		}
		return o.code()
	}
	// Every launch writes or updates the whole output: the first one broadcasts its
	// two operands to the output's shape, as numpy's broadcast is associative.
	first, err := binaryLaunch(o.typ, step(len(in) == 2), 0, 1, scale, ys, in[0], in[1], dev)
	if err != nil {
		return nil, err
	}
	ls := []Launch{first}
	for k := 2; k < len(in); k++ {
		l, err := accLaunch(o.typ, step(k == len(in)-1), k, scale, ys, in[k], dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return mathPlan(ls...)
}

func (o variadicOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	y := broadcastRef(want[0], in, func(v []float64) float64 {
		acc := v[0]
		for _, x := range v[1:] {
			switch o.typ {
			case "Max":
				acc = nanMax(acc, x)
			case "Min":
				acc = nanMin(acc, x)
			default:
				acc += x
			}
		}
		if o.typ == "Mean" {
			acc /= float64(len(v))
		}
		return acc
	})
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
