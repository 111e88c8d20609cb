package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// arity checks the numbers of inputs and outputs, and that the required inputs (the first
// minIn) are present.
func arity(l *model.Layer, in [][]int, minIn, maxIn, minOut, maxOut int) error {
	if len(in) < minIn || len(in) > maxIn {
		return fmt.Errorf("has %d inputs, want %s", len(in), countSpan(minIn, maxIn))
	}
	if len(l.Outputs) < minOut || len(l.Outputs) > maxOut {
		return fmt.Errorf("has %d outputs, want %s", len(l.Outputs), countSpan(minOut, maxOut))
	}
	for i := range minIn {
		if !present(l, i) {
			return fmt.Errorf("input %d is required", i)
		}
	}
	return nil
}

func countSpan(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

func present(l *model.Layer, i int) bool { return i < len(l.Inputs) && l.Inputs[i] != "" }

// repeat returns n copies of shape, each its own slice.
func repeat(shape []int, n int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = slices.Clone(shape)
	}
	return out
}

// sameRule is the rule of element-wise unary layers: every output has input 0's shape.
func sameRule(minIn, maxIn, minOut, maxOut int) shapeRule {
	return func(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
		if err := arity(l, in, minIn, maxIn, minOut, maxOut); err != nil {
			return nil, err
		}
		return repeat(in[0], len(l.Outputs)), nil
	}
}

func clipRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 3, 1, 1); err != nil {
		return nil, err
	}
	for i, what := range []string{"", "min", "max"} {
		if i > 0 && present(l, i) && numel(in[i]) != 1 {
			return nil, fmt.Errorf("%s (input %d) has shape %v; it must be a scalar", what, i, in[i])
		}
	}
	return repeat(in[0], 1), nil
}

// convRule also accepts the residual input 3 of a fused Conv (see Fuse), which must have
// the output's shape.
func convRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 4, 1, 1); err != nil {
		return nil, err
	}
	x, w := in[0], in[1]
	win, err := ConvGeometry(l, x, w)
	if err != nil {
		return nil, err
	}
	if present(l, 2) && !slices.Equal(in[2], []int{w[0]}) {
		return nil, fmt.Errorf("bias has shape %v, want [%d]", in[2], w[0])
	}
	out := append([]int{x[0], w[0]}, win.Out...)
	if present(l, 3) && !slices.Equal(in[3], out) {
		return nil, fmt.Errorf("residual (input 3) has shape %v, want the output's shape %v", in[3], out)
	}
	if l.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 {
		for i := 2; i < len(out); i++ {
			out[i] = 1 // each plane's mean
		}
	}
	if pool, ok := MaxPoolOf(l); ok {
		pw, err := PoolGeometry(pool, out)
		if err != nil {
			return nil, fmt.Errorf("max pool (%s* attributes): %w", opspec.FusedMaxPoolPrefix, err)
		}
		out = append(out[:2], pw.Out...)
	}
	return [][]int{out}, nil
}

func poolRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	maxOut := 1
	if l.Type == "MaxPool" {
		maxOut = 2 // values and indices
	}
	if err := arity(l, in, 1, 1, 1, maxOut); err != nil {
		return nil, err
	}
	win, err := PoolGeometry(l, in[0])
	if err != nil {
		return nil, err
	}
	return repeat(append([]int{in[0][0], in[0][1]}, win.Out...), len(l.Outputs)), nil
}

func globalPoolRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if len(x) < 3 {
		return nil, fmt.Errorf("input has shape %v; global pooling needs N, C and at least one spatial axis", x)
	}
	out := slices.Clone(x)
	for i := 2; i < len(out); i++ {
		out[i] = 1
	}
	return [][]int{out}, nil
}

func broadcastRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	out, err := opspec.Broadcast(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return [][]int{out}, nil
}

// axisAttr reads an axis attribute and maps a negative one (counted from the end) into
// [0, rank+extra); extra is 1 where the axis may equal the rank (Flatten).
func axisAttr(l *model.Layer, def int64, rank, extra int) (int, error) {
	if !l.Has("axis") && def == noDefault {
		return 0, fmt.Errorf("attribute axis is required")
	}
	a, err := intAttr(l, "axis", def)
	if err != nil {
		return 0, err
	}
	lo, hi := int64(-rank), int64(rank+extra-1)
	if a < lo || a > hi {
		return 0, fmt.Errorf("axis %d is out of range [%d, %d] for rank %d", a, lo, hi, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

// maxDim bounds dimensions read from data so that products of them cannot overflow.
const maxDim = 1 << 52

// noDefault marks an axis attribute that must be given.
const noDefault = -1 << 62

func concatRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, len(in), len(in), 1, 1); err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("has no inputs")
	}
	rank := len(in[0])
	axis, err := axisAttr(l, noDefault, rank, 0)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(in[0])
	for i, s := range in[1:] {
		if len(s) != rank {
			return nil, fmt.Errorf("input %d has shape %v, input 0 %v: ranks differ", i+1, s, in[0])
		}
		for k := range s {
			if k != axis && s[k] != in[0][k] {
				return nil, fmt.Errorf("input %d has shape %v, input 0 %v: they differ on axis %d, not only the concatenation axis %d", i+1, s, in[0], k, axis)
			}
		}
		out[axis] += s[axis]
	}
	return [][]int{out}, nil
}

func flattenRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	axis, err := axisAttr(l, 1, len(x), 1)
	if err != nil {
		return nil, err
	}
	return [][]int{{numel(x[:axis]), numel(x[axis:])}}, nil
}

// reshapeRule follows ONNX Reshape: a 0 copies the input's dimension at that position
// (unless allowzero is 1, when it means 0), a single -1 takes whatever size keeps the
// element count. Opsets before 5 give the target as the shape attribute, later ones as
// constant input 1; the Reshape op plans both.
func reshapeRule(l *model.Layer, in [][]int, consts []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 2, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	target, err := reshapeTarget(l, in, consts)
	if err != nil {
		return nil, err
	}
	allowZero, err := intAttr(l, "allowzero", 0)
	if err != nil {
		return nil, err
	}
	total := numel(x)
	out := make([]int, len(target))
	infer, known := -1, 1
	for i, v := range target {
		switch {
		case v == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("target shape %v has more than one -1", target)
			}
			infer = i
			continue
		case v == 0 && allowZero == 0:
			if i >= len(x) {
				return nil, fmt.Errorf("target shape %v copies dimension %d, but the input %v has only %d", target, i, x, len(x))
			}
			out[i] = x[i]
		case v < 0 || v > maxDim:
			return nil, fmt.Errorf("target shape %v: %d is not a valid dimension", target, v)
		default:
			out[i] = int(v)
		}
		if out[i] > 0 && known > maxDim/out[i] {
			return nil, fmt.Errorf("target shape %v has too many elements", target)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("cannot reshape %v (%d elements) to %v: the -1 has no whole size", x, total, target)
		}
		out[infer] = total / known
	} else if known != total {
		return nil, fmt.Errorf("cannot reshape %v (%d elements) to %v (%d elements)", x, total, out, known)
	}
	return [][]int{out}, nil
}

// reshapeTarget is Reshape's target shape: the constant input 1, or without one the
// shape attribute.
func reshapeTarget(l *model.Layer, in [][]int, consts []*model.Tensor) ([]int64, error) {
	if len(in) == 1 {
		if !l.Has("shape") {
			return nil, fmt.Errorf("the target shape is neither input 1 nor the shape attribute")
		}
		return l.Ints("shape", nil), nil
	}
	if consts[1] == nil {
		return nil, fmt.Errorf("the target shape (input 1, %q) must be a constant", l.Inputs[1])
	}
	if len(in[1]) != 1 {
		return nil, fmt.Errorf("the target shape %q has shape %v; it must be a list", l.Inputs[1], in[1])
	}
	target, err := consts[1].Int64s()
	if err != nil {
		return nil, fmt.Errorf("the target shape: %v", err)
	}
	return target, nil
}

func gemmRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 3, 1, 1); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if len(a) != 2 || len(b) != 2 {
		return nil, fmt.Errorf("inputs A %v and B %v must both be matrices", a, b)
	}
	transA, err := intAttr(l, "transA", 0)
	if err != nil {
		return nil, err
	}
	transB, err := intAttr(l, "transB", 0)
	if err != nil {
		return nil, err
	}
	m, k := a[0], a[1]
	if transA != 0 {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if transB != 0 {
		kb, n = n, kb
	}
	if k != kb {
		return nil, fmt.Errorf("inputs A %v (transA=%d) and B %v (transB=%d) do not agree on K: %d against %d", a, transA, b, transB, k, kb)
	}
	out := []int{m, n}
	if present(l, 2) {
		// C broadcasts to the result in one direction only: the result keeps its shape.
		if c := in[2]; len(c) > 2 {
			return nil, fmt.Errorf("input C has shape %v; it must broadcast to %v", c, out)
		} else if bc, err := opspec.Broadcast(out, c); err != nil || !slices.Equal(bc, out) {
			return nil, fmt.Errorf("input C has shape %v; it must broadcast to %v", c, out)
		}
	}
	return [][]int{out}, nil
}

// matmulRule follows numpy.matmul: a 1-D operand is a row (A) or a column (B) whose
// added axis is dropped from the result, and the axes before the last two broadcast.
func matmulRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 3, 1, 1); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if len(a) == 0 || len(b) == 0 {
		return nil, fmt.Errorf("inputs A %v and B %v must have at least one axis", a, b)
	}
	aa, bb := a, b
	if len(a) == 1 {
		aa = []int{1, a[0]}
	}
	if len(b) == 1 {
		bb = []int{b[0], 1}
	}
	ra, rb := len(aa), len(bb)
	if aa[ra-1] != bb[rb-2] {
		return nil, fmt.Errorf("inputs A %v and B %v do not agree on K: %d against %d", a, b, aa[ra-1], bb[rb-2])
	}
	batch, err := opspec.Broadcast(aa[:ra-2], bb[:rb-2])
	if err != nil {
		return nil, fmt.Errorf("batch axes: %v", err)
	}
	out := batch
	if len(a) > 1 {
		out = append(out, aa[ra-2])
	}
	if len(b) > 1 {
		out = append(out, bb[rb-1])
	}
	// Input 2 is the bias a fusion folds in (fuse_matmul.go).
	if len(in) == 3 && (len(b) < 2 || !slices.Equal(in[2], []int{bb[rb-1]})) {
		return nil, fmt.Errorf("bias %v must be [%d], the last axis of B %v (of rank 2 or more)", in[2], bb[rb-1], b)
	}
	return [][]int{out}, nil
}

func softmaxRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if len(in[0]) == 0 {
		return nil, fmt.Errorf("input is a scalar; Softmax needs an axis")
	}
	if _, err := axisAttr(l, -1, len(in[0]), 0); err != nil {
		return nil, err
	}
	return repeat(in[0], 1), nil
}

func batchNormRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 5, 5, 1, 3); err != nil {
		return nil, err
	}
	if len(l.Outputs) == 2 {
		return nil, fmt.Errorf("has 2 outputs; want 1, or 3 with the running mean and variance")
	}
	x := in[0]
	if len(x) < 2 {
		return nil, fmt.Errorf("input has shape %v; it needs N and C", x)
	}
	c := []int{x[1]}
	for i, what := range []string{"scale", "B", "mean", "var"} {
		if !slices.Equal(in[i+1], c) {
			return nil, fmt.Errorf("%s (input %d) has shape %v, want %v", what, i+1, in[i+1], c)
		}
	}
	out := [][]int{slices.Clone(x)}
	for range len(l.Outputs) - 1 {
		out = append(out, slices.Clone(c))
	}
	return out, nil
}
