package builtinkernels

import "math"

// What the ops of math.cl share: their plan, the flat launch (also used by other kernel
// files), two reference helpers, and their registration.

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func nanOr(a, b float64, f func(a, b float64) float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return f(a, b)
}

func mathPlan(ls ...Launch) (*Plan, error) {
	src, err := mathSource()
	if err != nil {
		return nil, err
	}
	return &Plan{Source: src, Launches: ls, AliasInput: -1}, nil
}

func init() {
	// The element-wise rows without kernels of their own run in math.cl.
	for _, f := range unaryFns {
		if f.kernel == "" && !f.internal {
			Register(f.name, mathUnaryOp{typ: f.name})
		}
	}
	Register("Cast", mathUnaryOp{typ: "Cast"})
	for _, f := range binaryFns {
		if f.kernel == "" && !f.internal {
			Register(f.name, mathBinaryOp{typ: f.name})
		}
	}
	for _, typ := range []string{"Sum", "Mean", "Max", "Min"} {
		Register(typ, variadicOp{typ: typ})
	}
	Register("Where", whereOp{})
}

// flatLaunch is a one-dimensional launch of n work-items in work-groups of one size
// whatever n is (64, or the device's limit), the global size rounded up to a multiple:
// PoCL compiles a kernel once per work-group size it meets, so the kernels of math.cl,
// reduce.cl, layout.cl and deconv.cl, which check their ids against n, compile once per
// device rather than once for every small tensor's size.
func flatLaunch(n int, dev DeviceInfo) ([]int, []int) {
	if dev.MaxWorkGroupSize <= 0 {
		return []int{n}, nil
	}
	l := min(64, dev.MaxWorkGroupSize)
	return []int{ceilDiv(n, l) * l}, []int{l}
}
