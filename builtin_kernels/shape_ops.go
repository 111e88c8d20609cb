package builtinkernels

import "fmt"

func init() {
	Register("Flatten", aliasOp{typ: "Flatten", infer: flattenShape})
	Register("Reshape", aliasOp{typ: "Reshape", maxIn: 2, infer: reshapeShape})
	Register("Identity", aliasOp{typ: "Identity", infer: func(_ Params, in []int) ([]int, error) { return cloneShape(in), nil }})
}

// aliasOp is a layer that only reinterprets the shape of its first input: its plan runs
// nothing and its output shares the input's buffer (contiguous data keeps its order).
type aliasOp struct {
	typ   string
	maxIn int // 0 means 1
	infer func(p Params, in []int) ([]int, error)
}

func (o aliasOp) counts(in [][]int) error {
	maxIn := o.maxIn
	if maxIn == 0 {
		maxIn = 1
	}
	if len(in) < 1 || len(in) > maxIn {
		return checkCounts(o.typ, in, nil, 1, maxIn, 0)
	}
	// Only the data input is checked: Reshape's second input is the shape tensor, which
	// may legitimately be empty ([0]) for a reshape to a scalar.
	return checkShape(o.typ, "input 0", in[0])
}

func (o aliasOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := o.counts(in); err != nil {
		return nil, err
	}
	s, err := o.infer(paramsOr(p), in[0])
	if err != nil {
		return nil, err
	}
	return [][]int{s}, nil
}

// check accepts out when it holds exactly the input's elements; when the attributes
// alone determine the shape, it must also be that shape.
func (o aliasOp) check(p Params, in, out [][]int) error {
	if err := o.counts(in); err != nil {
		return err
	}
	if len(out) != 1 {
		return fmt.Errorf("%s: %d outputs, want 1", o.typ, len(out))
	}
	if err := checkShape(o.typ, "output 0", out[0]); err != nil {
		return err
	}
	if numel(out[0]) != numel(in[0]) {
		return fmt.Errorf("%s: output shape %v holds %d elements, input %v holds %d", o.typ, out[0], numel(out[0]), in[0], numel(in[0]))
	}
	if o.typ == "Reshape" && !paramsOr(p).Has("shape") {
		return nil
	}
	want, err := o.OutputShapes(p, in)
	if err != nil {
		return err
	}
	return checkOut(o.typ, out, want)
}

func (o aliasOp) Plan(p Params, in, out [][]int, _ DeviceInfo) (*Plan, error) {
	if err := o.check(p, in, out); err != nil {
		return nil, err
	}
	return &Plan{AliasInput: 0}, nil
}

func (o aliasOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	if len(in) == 0 || in[0] == nil {
		return nil, fmt.Errorf("%s: no data input", o.typ)
	}
	if _, err := checkTensors(o.typ, in[:1]); err != nil {
		return nil, err
	}
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t == nil {
			return nil, fmt.Errorf("%s: input %d is nil", o.typ, i)
		}
		shapes[i] = t.Shape
	}
	if err := o.check(p, shapes, out); err != nil {
		return nil, err
	}
	return []*HostTensor{{Shape: cloneShape(out[0]), Data: append([]float32(nil), in[0].Data...)}}, nil
}

// flattenShape is ONNX Flatten: [prod(dims before axis), prod(dims from axis)]; axis may
// be negative and may equal the rank.
func flattenShape(p Params, in []int) ([]int, error) {
	axis := p.Int("axis", 1)
	r := int64(len(in))
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis > r {
		return nil, fmt.Errorf("%s: axis %d is out of range for rank %d", "Flatten", p.Int("axis", 1), r)
	}
	return []int{numel(in[:axis]), numel(in[axis:])}, nil
}

// reshapeShape resolves Reshape's "shape" attribute (opsets before 5 carry the target
// shape as an attribute; later ones as a constant input, whose values the graph turns
// into the output shape): 0 copies the input's dimension (unless allowzero), -1 takes
// what is left.
func reshapeShape(p Params, in []int) ([]int, error) {
	const typ = "Reshape"
	if !p.Has("shape") {
		return nil, fmt.Errorf("%s: the target shape comes from input 1, a constant the graph resolves; without a shape attribute the output shape must be given", typ)
	}
	spec := p.Ints("shape", nil)
	allowZero := p.Int("allowzero", 0) != 0
	out := make([]int, len(spec))
	infer := -1
	known := 1
	for i, v := range spec {
		switch {
		case v == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("%s: shape %v has more than one -1", typ, spec)
			}
			infer = i
			continue
		case v == 0 && !allowZero:
			if i >= len(in) {
				return nil, fmt.Errorf("%s: shape %v copies dimension %d (0), but the input %v has rank %d", typ, spec, i, in, len(in))
			}
			out[i] = in[i]
		case v <= 0 || v > maxElements:
			return nil, fmt.Errorf("%s: shape %v: dimension %d is %d", typ, spec, i, v)
		default:
			out[i] = int(v)
		}
		if known > maxElements/out[i] {
			return nil, fmt.Errorf("%s: shape %v is too large", typ, spec)
		}
		known *= out[i]
	}
	total := numel(in)
	if infer >= 0 {
		if total%known != 0 {
			return nil, fmt.Errorf("%s: shape %v: %d input elements do not divide by %d", typ, spec, total, known)
		}
		out[infer] = total / known
	}
	if numel(out) != total {
		return nil, fmt.Errorf("%s: shape %v gives %v with %d elements, the input %v has %d", typ, spec, out, numel(out), in, total)
	}
	return out, nil
}
