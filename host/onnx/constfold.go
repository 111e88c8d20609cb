package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/builtin_kernels/opspec"
	"github.com/clhost/clhost/host/model"
)

// cval is a constant's value while the importer folds layers at load time: integers keep
// int64 precision (Slice's ends are often INT64_MAX), floats are float64.
type cval struct {
	typ   model.DataType
	shape []int
	ints  []int64   // integer types (bool is uint8 0/1)
	fls   []float64 // float types
}

func (v *cval) isInt() bool { return v.typ != model.Float32 && v.typ != model.Float16 }

func (v *cval) n() int { return elementsOf(v.shape) }

func elementsOf(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// f returns element i as a float64, i an integer value.
func (v *cval) f(i int) float64 {
	if v.isInt() {
		return float64(v.ints[i])
	}
	return v.fls[i]
}

func (v *cval) i(i int) int64 {
	if v.isInt() {
		return v.ints[i]
	}
	return int64(v.fls[i])
}

func newVal(typ model.DataType, shape []int) *cval {
	v := &cval{typ: typ, shape: slices.Clone(shape)}
	if v.isInt() {
		v.ints = make([]int64, v.n())
	} else {
		v.fls = make([]float64, v.n())
	}
	return v
}

// set stores x at i, converting to the value's type.
func (v *cval) set(i int, x float64) {
	if v.isInt() {
		v.ints[i] = int64(x)
	} else {
		v.fls[i] = x
	}
}

// copyElem copies element j of src to element i of v (same type).
func (v *cval) copyElem(i int, src *cval, j int) {
	if v.isInt() {
		v.ints[i] = src.ints[j]
	} else {
		v.fls[i] = src.fls[j]
	}
}

func valOf(t *model.Tensor) (*cval, error) {
	v := &cval{typ: t.Type, shape: slices.Clone(t.Shape)}
	switch t.Type {
	case model.Float32, model.Float16:
		fs, _, err := tensorValues(t)
		if err != nil {
			return nil, err
		}
		v.fls = make([]float64, len(fs))
		for i, x := range fs {
			v.fls[i] = float64(x)
		}
		v.typ = model.Float32
	default:
		is, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		v.ints = is
	}
	if len(v.ints)+len(v.fls) != v.n() {
		return nil, fmt.Errorf("tensor %q has %d values for shape %v", t.Name, len(v.ints)+len(v.fls), t.Shape)
	}
	return v, nil
}

// tensor turns the value into a model constant: integers as int64 (uint8 for bool
// results), floats as float32.
func (v *cval) tensor(name string) model.Tensor {
	le := binary.LittleEndian
	t := model.Tensor{Name: name, Type: v.typ, Shape: slices.Clone(v.shape), Data: []byte{}}
	switch v.typ {
	case model.Float32, model.Float16:
		t.Type = model.Float32
		for _, x := range v.fls {
			t.Data = le.AppendUint32(t.Data, math.Float32bits(float32(x)))
		}
	case model.Uint8:
		for _, x := range v.ints {
			t.Data = append(t.Data, byte(x))
		}
	case model.Int8:
		for _, x := range v.ints {
			t.Data = append(t.Data, byte(int8(x)))
		}
	case model.Int32:
		for _, x := range v.ints {
			t.Data = le.AppendUint32(t.Data, uint32(int32(x)))
		}
	default:
		t.Type = model.Int64
		for _, x := range v.ints {
			t.Data = le.AppendUint64(t.Data, uint64(x))
		}
	}
	return t
}

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
	"Or": true, "Xor": true, "Sign": true, "Reciprocal": true,
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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func variadic(op string, in []*cval) (*cval, error) {
	acc := in[0]
	for _, v := range in[1:] {
		if v == nil {
			return nil, errNoFold
		}
		var err error
		if acc, err = binaryVals(op, acc, v); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// binaryVals applies an arithmetic, logical or comparison op with numpy broadcasting;
// integers stay integers (Div truncates, as ONNX's integer Div does). "Mod" is ONNX's Mod
// with fmod 0 (the result takes the divisor's sign, as Python's %), "fmod" the one with
// fmod 1 (the dividend's sign, as C's fmod).
func binaryVals(op string, a, b *cval) (*cval, error) {
	s, err := broadcastAll(a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	typ := a.typ
	isInt := a.isInt() && b.isInt()
	if !isInt {
		typ = model.Float32
	}
	if op == "Pow" {
		typ, isInt = a.typ, a.isInt() // Pow's result has the base's type
	}
	if boolResult[op] {
		typ = model.Uint8
	}
	out := newVal(typ, s)
	ia, ib := bcastIndex(a.shape, s), bcastIndex(b.shape, s)
	for i := range out.n() {
		if isInt {
			r, err := intBinary(op, a.ints[ia(i)], b.i(ib(i)))
			if err != nil {
				return nil, err
			}
			out.ints[i] = r
			continue
		}
		out.set(i, floatBinary(op, a.f(ia(i)), b.f(ib(i))))
	}
	return out, nil
}

// boolResult lists the binary ops whose result is bool (uint8 0/1) whatever their inputs.
var boolResult = map[string]bool{
	"Equal": true, "Less": true, "Greater": true, "LessOrEqual": true, "GreaterOrEqual": true,
	"And": true, "Or": true, "Xor": true,
}

func intBinary(op string, x, y int64) (int64, error) {
	switch op {
	case "Add":
		return x + y, nil
	case "Sub":
		return x - y, nil
	case "Mul":
		return x * y, nil
	case "Div", "Mod", "fmod":
		if y == 0 {
			return 0, fmt.Errorf("integer division by zero")
		}
		switch op {
		case "Div":
			return x / y, nil
		case "fmod":
			return x % y, nil
		}
		r := x % y
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r, nil
	case "Pow":
		if y < 0 {
			return 0, fmt.Errorf("integer Pow with a negative exponent %d", y)
		}
		r := int64(1)
		for ; y > 0; y >>= 1 { // by squaring; wraps on overflow as C's integers do
			if y&1 != 0 {
				r *= x
			}
			x *= x
		}
		return r, nil
	case "Max":
		return max(x, y), nil
	case "Min":
		return min(x, y), nil
	}
	return int64(floatBinary(op, float64(x), float64(y))), nil
}

func floatBinary(op string, x, y float64) float64 {
	switch op {
	case "Add":
		return x + y
	case "Sub":
		return x - y
	case "Mul":
		return x * y
	case "Div":
		return x / y
	case "fmod":
		return math.Mod(x, y)
	case "Mod":
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	case "Pow":
		return math.Pow(x, y)
	case "Max":
		return math.Max(x, y)
	case "Min":
		return math.Min(x, y)
	case "Equal":
		return b2f(x == y)
	case "Less":
		return b2f(x < y)
	case "Greater":
		return b2f(x > y)
	case "LessOrEqual":
		return b2f(x <= y)
	case "GreaterOrEqual":
		return b2f(x >= y)
	case "And":
		return b2f(x != 0 && y != 0)
	case "Or":
		return b2f(x != 0 || y != 0)
	case "Xor":
		return b2f((x != 0) != (y != 0))
	}
	return math.NaN()
}

func stridesOf(s []int) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

func unravelInto(i int, s, idx []int) {
	for k := len(s) - 1; k >= 0; k-- {
		idx[k] = i % s[k]
		i /= s[k]
	}
}

// broadcastAll is numpy's broadcast of several shapes.
func broadcastAll(shapes ...[]int) ([]int, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for k, d := range s {
			j := r - len(s) + k
			switch {
			case d == out[j] || d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast", shapes)
			}
		}
	}
	return out, nil
}

// bcastIndex maps an element index of shape out to the element of a tensor of shape s
// that broadcasts to it.
func bcastIndex(s, out []int) func(int) int {
	st := stridesOf(s)
	idx := make([]int, len(out))
	return func(i int) int {
		unravelInto(i, out, idx)
		off := 0
		for k, d := range s {
			if d != 1 {
				off += idx[len(out)-len(s)+k] * st[k]
			}
		}
		return off
	}
}

// reshapeTarget is the output shape of the reshaping ops on constant inputs.
func reshapeTarget(l *model.Layer, in []*cval, opset int64) ([]int, error) {
	x := in[0]
	r := len(x.shape)
	axesOf := func() ([]int64, bool) {
		if len(in) > 1 && in[1] != nil {
			a := make([]int64, in[1].n())
			for i := range a {
				a[i] = in[1].i(i)
			}
			return a, true
		}
		return l.Ints("axes", nil), l.Has("axes")
	}
	switch l.Type {
	case "Flatten":
		axis := int(l.Int("axis", 1))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis > r {
			return nil, fmt.Errorf("axis %d is out of range", l.Int("axis", 1))
		}
		return []int{elementsOf(x.shape[:axis]), elementsOf(x.shape[axis:])}, nil
	case "Reshape":
		if len(in) < 2 || in[1] == nil {
			return nil, errNoFold
		}
		s := make([]int, in[1].n())
		infer := -1
		known := 1
		for i := range s {
			v := in[1].i(i)
			switch {
			case v == -1:
				infer = i
				continue
			case v == 0 && l.Int("allowzero", 0) == 0 && i < r:
				s[i] = x.shape[i]
			case v < 0:
				return nil, fmt.Errorf("shape has %d", v)
			default:
				s[i] = int(v)
			}
			known *= s[i]
		}
		if infer >= 0 && known > 0 {
			s[infer] = x.n() / known
		}
		return s, nil
	case "Unsqueeze":
		axes, _ := axesOf()
		nr := r + len(axes)
		s := make([]int, 0, nr)
		ins := map[int]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(nr)
			}
			if a < 0 || a >= int64(nr) || ins[int(a)] {
				return nil, fmt.Errorf("axes %v are out of range or repeated for rank %d", axes, nr)
			}
			ins[int(a)] = true
		}
		k := 0
		for i := range nr {
			if ins[i] {
				s = append(s, 1)
			} else {
				s = append(s, x.shape[k])
				k++
			}
		}
		return s, nil
	case "Squeeze":
		axes, given := axesOf()
		drop := map[int]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(r)
			}
			if a < 0 || a >= int64(r) || x.shape[a] != 1 {
				return nil, fmt.Errorf("axes %v do not name dimensions of size 1 of %v", axes, x.shape)
			}
			drop[int(a)] = true
		}
		var s []int
		for i, d := range x.shape {
			if (given && !drop[i]) || (!given && d != 1) {
				s = append(s, d)
			}
		}
		return append([]int{}, s...), nil
	}
	return nil, errNoFold
}

// sliceVal is Slice on a constant, with starts/ends/axes/steps from inputs (opset 10 on)
// or attributes.
func sliceVal(l *model.Layer, in []*cval) (*cval, error) {
	x := in[0]
	list := func(i int, name string) []int64 {
		if i < len(in) && in[i] != nil {
			a := make([]int64, in[i].n())
			for k := range a {
				a[k] = in[i].i(k)
			}
			return a
		}
		return l.Ints(name, nil)
	}
	starts, ends, axes, steps := list(1, "starts"), list(2, "ends"), list(3, "axes"), list(4, "steps")
	sp, err := opspec.ResolveSlice(x.shape, starts, ends, axes, steps)
	if err != nil {
		return nil, err
	}
	out := newVal(x.typ, sp.Out)
	st := stridesOf(x.shape)
	idx := make([]int, len(sp.Out))
	for i := range out.n() {
		unravelInto(i, sp.Out, idx)
		src := 0
		for k := range idx {
			src += (sp.Start[k] + idx[k]*sp.Step[k]) * st[k]
		}
		out.copyElem(i, x, src)
	}
	return out, nil
}
