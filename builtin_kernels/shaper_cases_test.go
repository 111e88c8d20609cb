package builtinkernels

import (
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// The shape cases of the element-wise math ops, reductions, normalizations and the shape
// family, worked out by hand from the ONNX definitions (the comment beside each shows the
// arithmetic); TestOutputShapes runs them with the others.
func init() {
	// Unary ops keep their input's shape; every layer type of the element-wise table is one.
	unary := []string{"Cast", "LRN", "MeanVarianceNormalization", "Trilu", "CumSum"}
	for _, f := range unaryFns {
		if !f.internal {
			unary = append(unary, f.name)
		}
	}
	for _, typ := range unary {
		shapeCases = append(shapeCases, shapeCase{typ: typ, in: [][]int{{2, 3, 4}}, want: [][]int{{2, 3, 4}}})
	}
	// Binary ops broadcast numpy-style: [2,1,4] with [3,1] → [2,3,4]. (PRelu's slope must
	// broadcast to X: its own cases are below.)
	for _, f := range binaryFns {
		if f.internal || f.name == "PRelu" {
			continue
		}
		shapeCases = append(shapeCases,
			shapeCase{typ: f.name, in: [][]int{{2, 1, 4}, {3, 1}}, want: [][]int{{2, 3, 4}}},
			shapeCase{typ: f.name, in: [][]int{{2, 3}, {4}}, err: "broadcast"})
	}
	// Variadic ones broadcast all their inputs: [5], [2,1], [1,1,1] → [1,2,5].
	for _, typ := range []string{"Sum", "Mean", "Max", "Min"} {
		shapeCases = append(shapeCases, shapeCase{typ: typ, in: [][]int{{5}, {2, 1}, {1, 1, 1}}, want: [][]int{{1, 2, 5}}})
	}
	// Reductions: axes 1 and -1 of [2,3,4,5] → [2,1,4,1] kept, [2,4] dropped; no axes
	// reduces every one.
	for _, typ := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		shapeCases = append(shapeCases,
			shapeCase{typ: typ, attrs: []model.Attr{ints("axes", 1, -1)}, in: [][]int{{2, 3, 4, 5}}, want: [][]int{{2, 1, 4, 1}}},
			shapeCase{typ: typ, attrs: []model.Attr{ints("axes", 1, -1), i64("keepdims", 0)}, in: [][]int{{2, 3, 4, 5}}, want: [][]int{{2, 4}}},
			shapeCase{typ: typ, in: [][]int{{2, 3}}, want: [][]int{{1, 1}}})
	}
	more := []shapeCase{
		{typ: "Where", in: [][]int{{2, 1}, {1, 3}, {3}}, want: [][]int{{2, 3}}},
		{typ: "PRelu", in: [][]int{{1, 4, 5, 5}, {4, 1, 1}}, want: [][]int{{1, 4, 5, 5}}},
		// ArgMax/ArgMin: one axis, kept by default.
		{typ: "ArgMax", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{2, 3, 4}}, want: [][]int{{2, 1, 4}}},
		{typ: "ArgMin", attrs: []model.Attr{i64("axis", -1), i64("keepdims", 0)}, in: [][]int{{2, 3, 4}}, want: [][]int{{2, 3}}},
		{typ: "LogSoftmax", in: [][]int{{2, 10}}, want: [][]int{{2, 10}}},
		{typ: "Hardmax", attrs: []model.Attr{i64("axis", 0)}, in: [][]int{{2, 10}}, want: [][]int{{2, 10}}},
		// LayerNormalization over the last axis: Mean and InvStdDev are [2,3,1].
		{typ: "LayerNormalization", in: [][]int{{2, 3, 8}, {8}, {8}}, outs: 3, want: [][]int{{2, 3, 8}, {2, 3, 1}, {2, 3, 1}}},
		{typ: "InstanceNormalization", in: [][]int{{2, 3, 5, 5}, {3}, {3}}, want: [][]int{{2, 3, 5, 5}}},
		{typ: "InstanceNormalization", in: [][]int{{2, 3, 5, 5}, {4}, {3}}, err: "want [3]"},
		// Transpose: perm [0,2,3,1] of [1,3,4,5] → [1,4,5,3]; none reverses.
		{typ: "Transpose", attrs: []model.Attr{ints("perm", 0, 2, 3, 1)}, in: [][]int{{1, 3, 4, 5}}, want: [][]int{{1, 4, 5, 3}}},
		{typ: "Transpose", in: [][]int{{1, 3, 4}}, want: [][]int{{4, 3, 1}}},
		{typ: "Squeeze", attrs: []model.Attr{ints("axes", 0, -1)}, in: [][]int{{1, 3, 1}}, want: [][]int{{3}}},
		{typ: "Unsqueeze", attrs: []model.Attr{ints("axes", 0, 3)}, in: [][]int{{3, 4}}, want: [][]int{{1, 3, 4, 1}}},
		// Split [2,10] along 1 into 3 and 7.
		{typ: "Split", attrs: []model.Attr{i64("axis", 1), ints("split", 3, 7)}, in: [][]int{{2, 10}}, outs: 2, want: [][]int{{2, 3}, {2, 7}}},
		// Slice: axis 1 from 1 to end by 2 of 10 → 5 elements (1,3,5,7,9).
		{typ: "Slice", attrs: []model.Attr{ints("starts", 1), ints("ends", 1<<40), ints("axes", 1), ints("steps", 2)}, in: [][]int{{2, 10}}, want: [][]int{{2, 5}}},
		// Gather axis 1 of [2,5,3] with indices [4,6] → [2,4,6,3].
		{typ: "Gather", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{2, 5, 3}, {4, 6}}, want: [][]int{{2, 4, 6, 3}}},
		{typ: "GatherElements", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{2, 5}, {2, 3}}, want: [][]int{{2, 3}}},
		// Expand [3,1] to [2,1,4] → [2,3,4].
		{typ: "Expand", attrs: []model.Attr{ints("shape", 2, 1, 4)}, in: [][]int{{3, 1}}, want: [][]int{{2, 3, 4}}},
		{typ: "Tile", attrs: []model.Attr{ints("repeats", 2, 3)}, in: [][]int{{2, 5}}, want: [][]int{{4, 15}}},
		// Pad [1,2,5,5] by begins (0,0,1,2) and ends (0,0,3,4) → [1,2,9,11].
		{typ: "Pad", attrs: []model.Attr{ints("pads", 0, 0, 1, 2, 0, 0, 3, 4)}, in: [][]int{{1, 2, 5, 5}}, want: [][]int{{1, 2, 9, 11}}},
		// DepthToSpace blocksize 2: [1,8,3,4] → [1,2,6,8]; SpaceToDepth the inverse.
		{typ: "DepthToSpace", attrs: []model.Attr{i64("blocksize", 2)}, in: [][]int{{1, 8, 3, 4}}, want: [][]int{{1, 2, 6, 8}}},
		{typ: "SpaceToDepth", attrs: []model.Attr{i64("blocksize", 2)}, in: [][]int{{1, 2, 6, 8}}, want: [][]int{{1, 8, 3, 4}}},
		// ConvTranspose: out = s·(in-1) + op + (k-1)·d + 1 - pads: 2·(5-1) + 0 + 3 - 2 = 9;
		// output channels W[1]·group = 3.
		{typ: "ConvTranspose", attrs: []model.Attr{ints("strides", 2, 2), ints("pads", 1, 1, 1, 1)}, in: [][]int{{1, 4, 5, 5}, {4, 3, 3, 3}}, want: [][]int{{1, 3, 9, 9}}},
		{typ: "TopK", attrs: []model.Attr{i64("k", 3)}, in: [][]int{{2, 10}}, outs: 2, want: [][]int{{2, 3}, {2, 3}}},
		{typ: "TopK", attrs: []model.Attr{i64("k", 11)}, in: [][]int{{2, 10}}, outs: 2, err: "k 11"},
		// Resize by scales (1,1,2,1.5) of [1,3,4,4] → [1,3,8,6]; Upsample alike.
		{typ: "Resize", attrs: []model.Attr{model.FloatsAttr("scales", 1, 1, 2, 1.5)}, in: [][]int{{1, 3, 4, 4}}, want: [][]int{{1, 3, 8, 6}}},
		{typ: "Upsample", attrs: []model.Attr{model.FloatsAttr("scales", 1, 1, 2, 2)}, in: [][]int{{1, 3, 4, 4}}, want: [][]int{{1, 3, 8, 8}}},
		{typ: "Resize", attrs: []model.Attr{ints("sizes", 1, 3, 7, 5)}, in: [][]int{{1, 3, 4, 4}}, want: [][]int{{1, 3, 7, 5}}},
	}
	shapeCases = append(shapeCases, more...)
	// clhost's own layers, which graph passes write, take their rule from their attribute-only
	// OutputShapes: Fire joins its two expansions (4 + 6 channels, the 3×3 one padded by 1);
	// the pointwise-depthwise block's stride 2 gives ⌈7/2⌉ × ⌈9/2⌉ with pads 1; Reorder keeps
	// the shape.
	shapeCases = append(shapeCases,
		shapeCase{typ: opspec.FireType, attrs: []model.Attr{ints("pads", 1, 1, 1, 1)},
			in: [][]int{{2, 5, 7, 9}, {3, 5, 1, 1}, {3}, {4, 3, 1, 1}, {4}, {6, 3, 3, 3}, {6}}, want: [][]int{{2, 10, 7, 9}}},
		shapeCase{typ: opspec.FireType, attrs: []model.Attr{ints("pads", 1, 1, 1, 1)}, outs: 2,
			in: [][]int{{2, 5, 7, 9}, {3, 5, 1, 1}, {3}, {4, 3, 1, 1}, {4}, {6, 3, 3, 3}, {6}}, err: "has 2 outputs, want 1"},
		shapeCase{typ: opspec.InvertedResidualType, attrs: []model.Attr{i64("group", 10), ints("pads", 1, 1, 1, 1), ints("strides", 2, 2)},
			in: [][]int{{2, 3, 7, 9}, {10, 3, 1, 1}, {10}, {10, 1, 3, 3}, nil}, absent: []int{4}, want: [][]int{{2, 10, 4, 5}}},
		shapeCase{typ: ReorderType, attrs: []model.Attr{str("from", "BFYX"), str("to", "BYXF")}, in: [][]int{{2, 3, 5, 7}}, want: [][]int{{2, 3, 5, 7}}},
		shapeCase{typ: ReorderType, attrs: []model.Attr{str("from", "BFYX"), str("to", "XYZW")}, in: [][]int{{2, 3, 5, 7}}, err: "XYZW"},
	)
}
