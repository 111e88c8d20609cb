package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/model"
)

// Computing layers at load time: which operators fold, and each one's rule on constant
// inputs. constfold_value.go holds the values, constfold_binary.go the element-wise binary
// ops, constfold_index.go index arithmetic and broadcasting, constfold_layout.go reshapes
// and Slice.

// maxFoldElements bounds the constants the importer computes at load time.
const maxFoldElements = 1 << 22

// errNoFold says a layer is not folded (an op without a load-time rule, an input that is
// not constant); the layer then runs on the device.
var errNoFold = errors.New("not folded")

// foldable lists the operators the importer computes at load time when their inputs are
// constant (Shape and Size need only their input's shape): the shape arithmetic PyTorch's
// exporter emits, and layout changes of weights.
var foldable = map[string]bool{
	"Shape": true, "Size": true, "Cast": true, "Gather": true, "Unsqueeze": true,
	"Squeeze": true, "Concat": true, "Slice": true, "Add": true, "Sub": true, "Mul": true,
	"Div": true, "Neg": true, "Abs": true, "Max": true, "Min": true, "Equal": true,
	"Less": true, "Greater": true, "Not": true, "Where": true, "ConstantOfShape": true,
	"Range": true, "Reshape": true, "Flatten": true, "Expand": true, "Transpose": true,
	"Floor": true, "Ceil": true, "Sqrt": true, "ReduceProd": true, "EyeLike": true,
	"Mod": true, "Pow": true, "LessOrEqual": true, "GreaterOrEqual": true, "And": true,
	"Or": true, "Xor": true, "Sign": true, "Reciprocal": true, "ScatterND": true,
}

// evalLayer computes a layer's outputs from constant inputs. in[i] is nil where input i
// is not constant; shapes[i] is every present input's shape.
func evalLayer(l *model.Layer, in []*cval, shapes [][]int, opset int64) (*cval, error) {
	need := func(idx ...int) error {
		for _, i := range idx {
			if i >= len(in) || in[i] == nil {
				return errNoFold
			}
		}
		return nil
	}
	var out *cval
	var err error
	switch l.Type {
	case "Shape":
		if len(shapes) < 1 || shapes[0] == nil {
			return nil, errNoFold
		}
		s := shapes[0]
		r := int64(len(s))
		start, end := l.Int("start", 0), l.Int("end", r)
		clampAxis := func(a int64) int64 {
			if a < 0 {
				a += r
			}
			return min(max(a, 0), r)
		}
		start, end = clampAxis(start), clampAxis(end)
		out = newVal(model.Int64, []int{int(max(end-start, 0))})
		for i := range out.ints {
			out.ints[i] = int64(s[int(start)+i])
		}
	case "Size":
		if len(shapes) < 1 || shapes[0] == nil {
			return nil, errNoFold
		}
		out = newVal(model.Int64, []int{})
		out.ints[0] = int64(elementsOf(shapes[0]))
	case "EyeLike":
		// Ones on diagonal k of a matrix of the input's shape: the values never matter.
		if len(shapes) < 1 || len(shapes[0]) != 2 {
			return nil, errNoFold
		}
		s := shapes[0]
		typ := model.Float32
		if l.Has("dtype") {
			t, err := modelType(int32(l.Int("dtype", dtFloat)))
			if err != nil {
				return nil, err
			}
			typ = t
		}
		out = newVal(typ, s)
		k := int(l.Int("k", 0))
		for i := range s[0] {
			if j := i + k; j >= 0 && j < s[1] {
				out.set(i*s[1]+j, 1)
			}
		}
	default:
		for i := range in {
			if i < len(l.Inputs) && l.Inputs[i] != "" && in[i] == nil {
				return nil, errNoFold
			}
		}
		if err := need(0); err != nil && l.Type != "ConstantOfShape" && l.Type != "Range" {
			return nil, err
		}
		out, err = evalData(l, in, opset)
	}
	if err != nil {
		return nil, err
	}
	if out.n() > maxFoldElements {
		return nil, errNoFold
	}
	return out, nil
}

// evalData evaluates the operators whose inputs are all constants.
func evalData(l *model.Layer, in []*cval, opset int64) (*cval, error) {
	x := in[0]
	switch l.Type {
	case "Cast":
		to, err := modelType(int32(l.Int("to", dtFloat)))
		if err != nil {
			return nil, err
		}
		out := newVal(to, x.shape)
		for i := range out.n() {
			f := x.f(i)
			if out.isInt() && !x.isInt() {
				f = math.Trunc(f)
			}
			if to == model.Uint8 && l.Int("to", 0) == dtBool && f != 0 {
				f = 1
			}
			out.set(i, f)
		}
		return out, nil
	case "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Not", "Sign", "Reciprocal":
		out := newVal(x.typ, x.shape)
		for i := range out.n() {
			f := x.f(i)
			switch l.Type {
			case "Neg":
				f = -f
			case "Abs":
				f = math.Abs(f)
			case "Floor":
				f = math.Floor(f)
			case "Ceil":
				f = math.Ceil(f)
			case "Sqrt":
				f = math.Sqrt(f)
			case "Not":
				f = b2f(f == 0)
			case "Sign":
				f = b2f(f > 0) - b2f(f < 0)
			case "Reciprocal":
				f = 1 / f
			}
			if x.isInt() && l.Type == "Reciprocal" {
				return nil, errNoFold // integer Reciprocal is not an ONNX type
			}
			if x.isInt() && l.Type != "Sqrt" {
				out.ints[i] = int64(f)
				if l.Type == "Neg" {
					out.ints[i] = -x.ints[i]
				}
				continue
			}
			out.set(i, f)
		}
		return out, nil
	case "Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual",
		"GreaterOrEqual", "And", "Or", "Xor", "Mod", "Pow":
		if len(in) != 2 || in[1] == nil {
			if l.Type == "Max" || l.Type == "Min" {
				return variadic(l.Type, in)
			}
			return nil, errNoFold
		}
		op := l.Type
		if op == "Mod" && l.Int("fmod", 0) != 0 {
			op = "fmod"
		}
		return binaryVals(op, in[0], in[1])
	case "Where":
		if len(in) != 3 || in[1] == nil || in[2] == nil {
			return nil, errNoFold
		}
		s, err := broadcastAll(x.shape, in[1].shape, in[2].shape)
		if err != nil {
			return nil, err
		}
		out := newVal(in[1].typ, s)
		ix, iy, iz := bcastIndex(x.shape, s), bcastIndex(in[1].shape, s), bcastIndex(in[2].shape, s)
		for i := range out.n() {
			src, j := in[2], iz(i)
			if x.f(ix(i)) != 0 {
				src, j = in[1], iy(i)
			}
			if out.isInt() && src.isInt() {
				out.ints[i] = src.ints[j]
			} else {
				out.set(i, src.f(j))
			}
		}
		return out, nil
	case "Gather":
		idx := in[1]
		if idx == nil {
			return nil, errNoFold
		}
		r := len(x.shape)
		axis := int(l.Int("axis", 0))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis >= r {
			return nil, fmt.Errorf("axis %d is out of range for rank %d", l.Int("axis", 0), r)
		}
		outer, n, inner := elementsOf(x.shape[:axis]), x.shape[axis], elementsOf(x.shape[axis+1:])
		s := append(append(slices.Clone(x.shape[:axis]), idx.shape...), x.shape[axis+1:]...)
		out := newVal(x.typ, s)
		k := idx.n()
		for o := range outer {
			for j := range k {
				v := idx.i(j)
				if v < 0 {
					v += int64(n)
				}
				if v < 0 || v >= int64(n) {
					return nil, fmt.Errorf("index %d is out of range for axis of size %d", idx.i(j), n)
				}
				for q := range inner {
					out.copyElem((o*k+j)*inner+q, x, (o*n+int(v))*inner+q)
				}
			}
		}
		return out, nil
	case "Unsqueeze", "Squeeze", "Reshape", "Flatten":
		s, err := reshapeTarget(l, in, opset)
		if err != nil {
			return nil, err
		}
		if elementsOf(s) != x.n() {
			return nil, fmt.Errorf("cannot reshape %v to %v", x.shape, s)
		}
		out := *x
		out.shape = s
		return &out, nil
	case "Concat":
		r := len(x.shape)
		axis := int(l.Int("axis", 0))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis >= r {
			return nil, fmt.Errorf("axis %d is out of range for rank %d", l.Int("axis", 0), r)
		}
		s := slices.Clone(x.shape)
		s[axis] = 0
		for _, v := range in {
			if v == nil || len(v.shape) != r {
				return nil, errNoFold
			}
			s[axis] += v.shape[axis]
		}
		out := newVal(x.typ, s)
		inner := elementsOf(s[axis+1:])
		at := 0
		for _, v := range in {
			if v.isInt() != out.isInt() {
				return nil, errNoFold
			}
			for o := range elementsOf(s[:axis]) {
				for j := range v.shape[axis] * inner {
					out.copyElem((o*s[axis]+at)*inner+j, v, o*v.shape[axis]*inner+j)
				}
			}
			at += v.shape[axis]
		}
		return out, nil
	case "Slice":
		return sliceVal(l, in)
	case "ScatterND":
		return scatterND(l, in)
	case "Transpose":
		r := len(x.shape)
		perm := l.Ints("perm", nil)
		if perm == nil {
			for i := r - 1; i >= 0; i-- {
				perm = append(perm, int64(i))
			}
		}
		if len(perm) != r {
			return nil, fmt.Errorf("perm %v has %d values for rank %d", perm, len(perm), r)
		}
		s := make([]int, r)
		for i, p := range perm {
			if p < 0 || int(p) >= r {
				return nil, fmt.Errorf("perm %v is not a permutation", perm)
			}
			s[i] = x.shape[p]
		}
		st := stridesOf(x.shape)
		out := newVal(x.typ, s)
		idx := make([]int, r)
		for i := range out.n() {
			unravelInto(i, s, idx)
			src := 0
			for k, p := range perm {
				src += idx[k] * st[p]
			}
			out.copyElem(i, x, src)
		}
		return out, nil
	case "Expand":
		if len(in) < 2 || in[1] == nil {
			return nil, errNoFold
		}
		target := make([]int, in[1].n())
		for i := range target {
			target[i] = int(in[1].i(i))
		}
		s, err := broadcastAll(x.shape, target)
		if err != nil {
			return nil, err
		}
		out := newVal(x.typ, s)
		ix := bcastIndex(x.shape, s)
		for i := range out.n() {
			out.copyElem(i, x, ix(i))
		}
		return out, nil
	case "ConstantOfShape":
		if len(in) < 1 || in[0] == nil {
			return nil, errNoFold
		}
		s := make([]int, in[0].n())
		for i := range s {
			if in[0].i(i) < 0 {
				return nil, fmt.Errorf("shape %v has a negative dimension", in[0].ints)
			}
			s[i] = int(in[0].i(i))
		}
		typ, val := model.Float32, 0.0
		if a := l.Attr("value"); a != nil {
			switch {
			case a.Kind == model.AttrInts && len(a.Ints) == 1:
				typ, val = model.Int64, float64(a.Ints[0])
			case a.Kind == model.AttrFloats && len(a.Floats) == 1:
				val = float64(a.Floats[0])
			default:
				return nil, fmt.Errorf("value must hold one element")
			}
		}
		if elementsOf(s) > maxFoldElements {
			return nil, errNoFold
		}
		out := newVal(typ, s)
		for i := range out.n() {
			out.set(i, val)
		}
		return out, nil
	case "Range":
		if len(in) != 3 || in[0] == nil || in[1] == nil || in[2] == nil {
			return nil, errNoFold
		}
		start, limit, delta := in[0].f(0), in[1].f(0), in[2].f(0)
		if delta == 0 {
			return nil, fmt.Errorf("delta is 0")
		}
		n := int(max(math.Ceil((limit-start)/delta), 0))
		if n > maxFoldElements {
			return nil, errNoFold
		}
		out := newVal(in[0].typ, []int{n})
		for i := range n {
			if out.isInt() {
				out.ints[i] = in[0].ints[0] + int64(i)*in[2].ints[0]
			} else {
				out.fls[i] = start + float64(i)*delta
			}
		}
		return out, nil
	case "ReduceProd":
		if len(in) > 1 || l.Has("axes") || l.Int("keepdims", 1) != 0 {
			return nil, errNoFold
		}
		out := newVal(x.typ, []int{})
		p := 1.0
		for i := range x.n() {
			p *= x.f(i)
		}
		out.set(0, p)
		return out, nil
	}
	return nil, errNoFold
}
