package builtinkernels

import "fmt"

func init() { Register("Concat", concatOp{}) }

// concatOp is ONNX Concat: one or more inputs joined along axis (negative counts from
// the end); every other dimension must agree.
type concatOp struct{}

func (concatOp) axis(p Params, in [][]int) (int, error) {
	const typ = "Concat"
	if len(in) == 0 {
		return 0, fmt.Errorf("%s: no inputs, want at least 1", typ)
	}
	if err := checkCounts(typ, in, nil, 1, len(in), 0); err != nil {
		return 0, err
	}
	p = paramsOr(p)
	if !p.Has("axis") {
		return 0, fmt.Errorf("%s: the axis attribute is required", typ)
	}
	rank := len(in[0])
	axis, err := normAxis(typ, "axis", p.Int("axis", 0), rank)
	if err != nil {
		return 0, err
	}
	for i, s := range in[1:] {
		if len(s) != rank {
			return 0, fmt.Errorf("%s: input %d has shape %v, rank %d; input 0 has %v, rank %d", typ, i+1, s, len(s), in[0], rank)
		}
		for d := range s {
			if d != axis && s[d] != in[0][d] {
				return 0, fmt.Errorf("%s: input %d has shape %v, input 0 has %v: they differ in dimension %d, which is not the axis %d", typ, i+1, s, in[0], d, axis)
			}
		}
	}
	return axis, nil
}

func (o concatOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	axis, err := o.axis(p, in)
	if err != nil {
		return nil, err
	}
	s := cloneShape(in[0])
	s[axis] = 0
	for _, x := range in {
		s[axis] += x[axis]
	}
	if err := checkShape("Concat", "output 0", s); err != nil {
		return nil, err
	}
	return [][]int{s}, nil
}

func (o concatOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Concat", out, shapes); err != nil {
		return nil, err
	}
	axis, _ := o.axis(p, in)
	src, err := kernelSource("concat.cl")
	if err != nil {
		return nil, err
	}
	inner := numel(in[0][axis+1:])
	outer := numel(in[0][:axis])
	dstChunk := shapes[0][axis] * inner
	plan := &Plan{Source: src, AliasInput: -1}
	offset := 0
	for i, s := range in {
		chunk := s[axis] * inner
		if !dev.IsGPU {
			block := concatBlock(outer*chunk, dev)
			plan.Launches = append(plan.Launches, Launch{Kernel: "concat_rows",
				Global: []int{ceilDiv(chunk, block), outer}, Local: []int{1, 1}, Args: []Arg{
					{Kind: ArgInput, Index: i}, {Kind: ArgOutput, Index: 0},
					{Kind: ArgInt, Int: int32(chunk)}, {Kind: ArgInt, Int: int32(dstChunk)},
					{Kind: ArgInt, Int: int32(offset)}, {Kind: ArgInt, Int: int32(block)},
				}})
			offset += chunk
			continue
		}
		gl, lo := launchSize([]int{outer * chunk}, dev)
		plan.Launches = append(plan.Launches, Launch{Kernel: "concat_copy", Global: gl, Local: lo, Args: []Arg{
			{Kind: ArgInput, Index: i}, {Kind: ArgOutput, Index: 0},
			{Kind: ArgInt, Int: int32(outer * chunk)}, {Kind: ArgInt, Int: int32(chunk)},
			{Kind: ArgInt, Int: int32(dstChunk)}, {Kind: ArgInt, Int: int32(offset)},
		}})
		offset += chunk
	}
	return plan, nil
}

// concatBlock is how many values one work-item of concat_rows copies: the copy spread
// over every compute unit four times, but at least 1024 values (4 KiB), as each
// work-group costs the driver about as much as copying a few thousand values.
func concatBlock(total int, dev DeviceInfo) int {
	return max(ceilDiv(ceilDiv(total, 4*max(dev.ComputeUnits, 1)), 16)*16, 1024)
}

func (o concatOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, want, err := referenceShapes("Concat", o, p, in, out)
	if err != nil {
		return nil, err
	}
	axis, _ := o.axis(p, shapes)
	ys := want[0]
	y := make([]float32, numel(ys))
	// Walk the output in order; for each index find the input that owns its position
	// along the axis.
	idx := make([]int, len(ys))
	for i := range y {
		r := i
		for j := len(ys) - 1; j >= 0; j-- {
			idx[j] = r % ys[j]
			r /= ys[j]
		}
		k := idx[axis]
		src := 0
		for k >= shapes[src][axis] {
			k -= shapes[src][axis]
			src++
		}
		off := 0
		for j, d := range shapes[src] {
			v := idx[j]
			if j == axis {
				v = k
			}
			off = off*d + v
		}
		y[i] = in[src].Data[off]
	}
	return []*HostTensor{{Shape: cloneShape(ys), Data: y}}, nil
}
