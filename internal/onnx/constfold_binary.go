package onnx

import (
	"fmt"
	"math"

	"github.com/clhost/clhost/model"
)

// Element-wise binary ops on constant values (arithmetic, comparisons, logic) with numpy
// broadcasting.

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
