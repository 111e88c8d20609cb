package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// Shape rules of the element-wise math ops, reductions, normalizations and the shape
// family (Transpose, Slice, Gather, Pad, Resize, ...). Attributes that later opsets give
// as inputs (axes, pads, scales) arrive here as attributes: the ONNX importer moves
// constant ones there.

func reduceRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	red, err := opspec.ReduceAxes(l.Ints("axes", nil), l.Int("noop_with_empty_axes", 0) != 0, len(in[0]))
	if err != nil {
		return nil, err
	}
	return [][]int{opspec.ReducedShape(in[0], red, l.Int("keepdims", 1) != 0)}, nil
}

func argRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	axis, err := axisAttr(l, 0, len(in[0]), 0)
	if err != nil {
		return nil, err
	}
	red := make([]bool, len(in[0]))
	red[axis] = true
	return [][]int{opspec.ReducedShape(in[0], red, l.Int("keepdims", 1) != 0)}, nil
}

// layerNormRule: Y has X's shape; the optional Mean and InvStdDev keep the axes before
// axis and are 1 from axis on.
func layerNormRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 3, 1, 3); err != nil {
		return nil, err
	}
	x := in[0]
	axis, err := axisAttr(l, -1, len(x), 0)
	if err != nil {
		return nil, err
	}
	norm := x[axis:]
	for i := 1; i < len(in); i++ {
		if in[i] == nil {
			continue
		}
		if b, err := opspec.Broadcast(norm, in[i]); err != nil || !slices.Equal(b, norm) {
			return nil, fmt.Errorf("input %d has shape %v, which does not broadcast to the normalized axes %v", i, in[i], norm)
		}
	}
	stat := slices.Clone(x)
	for i := axis; i < len(stat); i++ {
		stat[i] = 1
	}
	out := [][]int{slices.Clone(x)}
	for range len(l.Outputs) - 1 {
		out = append(out, slices.Clone(stat))
	}
	return out, nil
}

func instanceNormRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 3, 3, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if len(x) < 3 {
		return nil, fmt.Errorf("input has shape %v; it needs N, C and a spatial axis", x)
	}
	for i, what := range []string{"scale", "B"} {
		if !slices.Equal(in[i+1], []int{x[1]}) {
			return nil, fmt.Errorf("%s (input %d) has shape %v, want [%d]", what, i+1, in[i+1], x[1])
		}
	}
	return [][]int{slices.Clone(x)}, nil
}

func transposeRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	perm, err := opspec.TransposePerm(l.Ints("perm", nil), len(in[0]))
	if err != nil {
		return nil, err
	}
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = in[0][p]
	}
	return [][]int{out}, nil
}

func squeezeRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	out, err := opspec.SqueezeShape(in[0], l.Ints("axes", nil))
	return [][]int{out}, err
}

func unsqueezeRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if !l.Has("axes") {
		return nil, fmt.Errorf("axes are required")
	}
	out, err := opspec.UnsqueezeShape(in[0], l.Ints("axes", nil))
	return [][]int{out}, err
}

func splitRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, len(l.Outputs)); err != nil {
		return nil, err
	}
	axis, err := axisAttr(l, 0, len(in[0]), 0)
	if err != nil {
		return nil, err
	}
	sizes, err := opspec.SplitSizes(l.Ints("split", nil), in[0][axis], len(l.Outputs))
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(sizes))
	for i, n := range sizes {
		out[i] = slices.Clone(in[0])
		out[i][axis] = n
	}
	return out, nil
}

func sliceRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	g, err := opspec.ResolveSlice(in[0], l.Ints("starts", nil), l.Ints("ends", nil), l.Ints("axes", nil), l.Ints("steps", nil))
	if err != nil {
		return nil, err
	}
	return [][]int{g.Out}, nil
}

func gatherRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	axis, err := axisAttr(l, 0, len(x), 0)
	if err != nil {
		return nil, err
	}
	out := append(append(slices.Clone(x[:axis]), in[1]...), x[axis+1:]...)
	return [][]int{out}, nil
}

func expandRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	target := l.Ints("shape", nil)
	t := make([]int, len(target))
	for i, v := range target {
		if v < 0 || v > maxDim {
			return nil, fmt.Errorf("shape %v holds %d", target, v)
		}
		t[i] = int(v)
	}
	out, err := opspec.Broadcast(in[0], t)
	if err != nil {
		return nil, err
	}
	return [][]int{out}, nil
}

func tileRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	reps := l.Ints("repeats", nil)
	if len(reps) != len(in[0]) {
		return nil, fmt.Errorf("repeats %v has %d values for rank %d", reps, len(reps), len(in[0]))
	}
	out := slices.Clone(in[0])
	for i, r := range reps {
		if r < 1 || r > maxDim {
			return nil, fmt.Errorf("repeats %v holds %d", reps, r)
		}
		out[i] *= int(r)
	}
	return [][]int{out}, nil
}

func padRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	pads := l.Ints("pads", l.Ints("paddings", nil))
	if len(pads) != 2*len(x) {
		return nil, fmt.Errorf("pads %v has %d values for rank %d, want %d", pads, len(pads), len(x), 2*len(x))
	}
	out := slices.Clone(x)
	for i := range x {
		out[i] += int(pads[i] + pads[i+len(x)])
		if out[i] < 1 {
			return nil, fmt.Errorf("pads %v leave axis %d of %v empty", pads, i, x)
		}
	}
	return [][]int{out}, nil
}

func depthSpaceRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	b := int(l.Int("blocksize", 0))
	if len(x) != 4 || b < 1 {
		return nil, fmt.Errorf("input %v and blocksize %d: want N,C,H,W and a blocksize of at least 1", x, b)
	}
	if l.Type == "DepthToSpace" {
		if x[1]%(b*b) != 0 {
			return nil, fmt.Errorf("%d channels do not divide by blocksize² %d", x[1], b*b)
		}
		return [][]int{{x[0], x[1] / (b * b), x[2] * b, x[3] * b}}, nil
	}
	if x[2]%b != 0 || x[3]%b != 0 {
		return nil, fmt.Errorf("height %d and width %d must divide by blocksize %d", x[2], x[3], b)
	}
	return [][]int{{x[0], x[1] * b * b, x[2] / b, x[3] / b}}, nil
}

func resizeRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 1, 1); err != nil {
		return nil, err
	}
	if p := l.String("keep_aspect_ratio_policy", "stretch"); p != "stretch" && len(l.Ints("sizes", nil)) > 0 {
		return nil, fmt.Errorf("keep_aspect_ratio_policy %q is not supported", p)
	}
	out, err := opspec.ResizeOutput(in[0], l.Floats("scales", nil), l.Ints("sizes", nil), l.Ints("axes", nil))
	if err != nil {
		return nil, err
	}
	return [][]int{out}, nil
}

// variadicRule broadcasts every input together (Sum, Mean, Max, Min).
func variadicRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, len(in), 1, 1); err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("has no inputs")
	}
	out := slices.Clone(in[0])
	for _, s := range in[1:] {
		var err error
		if out, err = opspec.Broadcast(out, s); err != nil {
			return nil, err
		}
	}
	return [][]int{out}, nil
}

func whereRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 3, 3, 1, 1); err != nil {
		return nil, err
	}
	return variadicRule(l, in, nil)
}

// preluRule: the slope broadcasts to X, which keeps its shape.
func preluRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	out, err := opspec.Broadcast(in[0], in[1])
	if err != nil || !slices.Equal(out, in[0]) {
		return nil, fmt.Errorf("slope %v does not broadcast to X %v", in[1], in[0])
	}
	return [][]int{out}, nil
}

func convTransposeRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 3, 1, 1); err != nil {
		return nil, err
	}
	g, err := opspec.ResolveConvTranspose(in[0], in[1], opspec.ConvTransposeAttrs{
		Group: l.Int("group", 1), KernelShape: l.Ints("kernel_shape", nil), Strides: l.Ints("strides", nil),
		Dilations: l.Ints("dilations", nil), Pads: l.Ints("pads", nil), OutputPadding: l.Ints("output_padding", nil),
		OutputShape: l.Ints("output_shape", nil), AutoPad: l.String("auto_pad", "NOTSET"),
	})
	if err != nil {
		return nil, err
	}
	if present(l, 2) && !slices.Equal(in[2], []int{g.Channels}) {
		return nil, fmt.Errorf("bias has shape %v, want [%d]", in[2], g.Channels)
	}
	return [][]int{append([]int{in[0][0], g.Channels}, g.Out...)}, nil
}

func gatherElementsRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 2, 2, 1, 1); err != nil {
		return nil, err
	}
	if len(in[0]) != len(in[1]) {
		return nil, fmt.Errorf("data %v and indices %v differ in rank", in[0], in[1])
	}
	if _, err := axisAttr(l, 0, len(in[0]), 0); err != nil {
		return nil, err
	}
	return [][]int{slices.Clone(in[1])}, nil
}

// topKRule: values and indices have the input's shape with k along the axis.
func topKRule(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	if err := arity(l, in, 1, 1, 2, 2); err != nil {
		return nil, err
	}
	axis, err := axisAttr(l, -1, len(in[0]), 0)
	if err != nil {
		return nil, err
	}
	k := l.Int("k", 0)
	if k < 1 || k > int64(in[0][axis]) {
		return nil, fmt.Errorf("k %d: want 1 to the axis's %d", k, in[0][axis])
	}
	out := slices.Clone(in[0])
	out[axis] = int(k)
	return [][]int{out, slices.Clone(out)}, nil
}
