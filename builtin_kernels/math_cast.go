package builtinkernels

import (
	"fmt"
	"math"
)

// Cast as a unary op of math.cl: rounding a float32 to what the target type holds.

// ONNX TensorProto data types Cast converts to.
const (
	onnxFloat    = 1
	onnxUint8    = 2
	onnxInt8     = 3
	onnxUint16   = 4
	onnxInt16    = 5
	onnxInt32    = 6
	onnxInt64    = 7
	onnxBool     = 9
	onnxFloat16  = 10
	onnxDouble   = 11
	onnxUint32   = 12
	onnxUint64   = 13
	onnxBfloat16 = 16
)

// castMath is Cast as a unary op: every activation is float32, so a cast rounds the value
// to what the target type holds (truncation and wrap-around for integers, 0/1 for bool,
// the nearest float16 or bfloat16) and keeps it as float32.
func castMath(p Params) (unaryMath, error) {
	to := p.Int("to", 0)
	integer := func(bits int, signed bool) unaryMath {
		s := float32(0)
		if signed {
			s = 1
		}
		return unaryMath{unaryCode(castIntFn), func(Params) (float32, float32, error) { return float32(bits), s, nil }, func(x, _, _ float64) float64 {
			return wrapInt(math.Trunc(x), bits, signed)
		}}
	}
	switch to {
	case onnxFloat, onnxDouble:
		return unaryMath{unaryCode(copyFn), noAttrs, func(x, _, _ float64) float64 { return x }}, nil
	case onnxUint8:
		return integer(8, false), nil
	case onnxInt8:
		return integer(8, true), nil
	case onnxUint16:
		return integer(16, false), nil
	case onnxInt16:
		return integer(16, true), nil
	case onnxInt32, onnxInt64, onnxUint32, onnxUint64:
		return integer(32, true), nil
	case onnxBool:
		return unaryMath{unaryCode(castBoolFn), noAttrs, func(x, _, _ float64) float64 { return b2f(x != 0) }}, nil
	case onnxFloat16:
		return unaryMath{unaryCode(castHalfFn), noAttrs, func(x, _, _ float64) float64 { return roundToBits(x, 10, -14, 65504) }}, nil
	case onnxBfloat16:
		return unaryMath{unaryCode(castBfloatFn), noAttrs, func(x, _, _ float64) float64 { return roundToBits(x, 7, -126, math.MaxFloat32) }}, nil
	}
	return unaryMath{}, fmt.Errorf("%s: to %d: clhost casts to float, double, float16, bfloat16, bool and 8- to 64-bit integers", "Cast", to)
}

// wrapInt reduces an integer value modulo 2^bits into the range of a bits-wide integer
// type, as C's conversions do; 32 bits and more are kept as they are.
func wrapInt(t float64, bits int, signed bool) float64 {
	if bits >= 32 {
		return t
	}
	m := math.Ldexp(1, bits)
	t -= math.Floor(t/m) * m
	if signed && t >= m/2 {
		t -= m
	}
	return t
}

// roundToBits is math.cl's round_to_bits: the nearest value with bits fraction bits,
// ties to even, exponents floored at minExp, beyond maxFinite infinity.
func roundToBits(v float64, bits, minExp int, maxFinite float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f32 := float64(float32(v))
	_, e := math.Frexp(f32)
	e = max(e-1, minExp)
	q := math.Ldexp(1, e-bits)
	r := math.RoundToEven(f32/q) * q
	if math.Abs(r) > maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}
