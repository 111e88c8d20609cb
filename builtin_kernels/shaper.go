package builtinkernels

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

// Shaper is an op that infers a layer's output shapes with ONNX semantics, for the graph:
// it sees the whole layer (its attributes, which optional inputs are omitted, how many
// outputs it has) and the constant inputs, which Reshape's target shape comes from. in[i]
// is input i's shape (nil when omitted); consts[i] is input i's tensor when it is a
// constant, else nil. Errors do not name the layer; the graph adds that. Like
// database/sql's optional driver abilities, the graph finds it by type assertion.
type Shaper interface {
	Shapes(l *model.Layer, in [][]int, consts []*model.Tensor) ([][]int, error)
}

// OutputTyper is an op one of whose outputs has an element type other than its first
// input's (MaxPool's indices, Dropout's mask).
type OutputTyper interface {
	OutputType(l *model.Layer, k int, first model.DataType) model.DataType
}

// shapeRule is the form of the shape rules in shaper_rules*.go; an op's Shapes method
// picks one.
type shapeRule func(l *model.Layer, in [][]int, consts []*model.Tensor) ([][]int, error)

// unaryRule is the rule of the element-wise ops of one input and one output.
var unaryRule = sameRule(1, 1, 1, 1)

// fromOutputShapes is the shape rule of a clhost op that graph passes write (Fire, the
// pointwise-depthwise block, Reorder): its own attribute-only OutputShapes, an omitted
// input's shape nil as those ops expect, with the layer's output count checked, since
// no ONNX rule exists for it.
func fromOutputShapes(op ShapeInferrer, l *model.Layer, in [][]int) ([][]int, error) {
	out, err := op.OutputShapes(l, in)
	if err != nil {
		return nil, err
	}
	if len(out) != len(l.Outputs) {
		return nil, fmt.Errorf("has %d outputs, want %d", len(l.Outputs), len(out))
	}
	return out, nil
}

func (convOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return convRule(l, in, c)
}

// Shapes gives MaxPool's Indices output its ONNX shape, so a model that declares it loads
// and its plan refuses it by name ("the second output (Indices) is not supported").
func (poolOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return poolRule(l, in, c)
}

// OutputType: MaxPool's second output holds the indices of the maxima.
func (o poolOp) OutputType(_ *model.Layer, k int, first model.DataType) model.DataType {
	if o.max && k == 1 {
		return model.Int64
	}
	return first
}

func (globalPoolOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return globalPoolRule(l, in, c)
}

func (unaryOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (clipOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return clipRule(l, in, c)
}

func (binaryOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return broadcastRule(l, in, c)
}

func (batchNormOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return batchNormRule(l, in, c)
}

func (concatOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return concatRule(l, in, c)
}

func (gemmOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return gemmRule(l, in, c)
}

func (matmulOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return matmulRule(l, in, c)
}

func (softmaxOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return softmaxRule(l, in, c)
}

func (softmaxLikeOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return softmaxRule(l, in, c)
}

func (o aliasOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	switch o.typ {
	case "Flatten":
		return flattenRule(l, in, c)
	case "Reshape":
		return reshapeRule(l, in, c)
	case "Squeeze":
		return squeezeRule(l, in, c)
	case "Unsqueeze":
		return unsqueezeRule(l, in, c)
	}
	return unaryRule(l, in, c)
}

func (mathUnaryOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (o mathBinaryOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	if o.typ == "PRelu" {
		return preluRule(l, in, c)
	}
	return broadcastRule(l, in, c)
}

func (variadicOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return variadicRule(l, in, c)
}

func (whereOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return whereRule(l, in, c)
}

func (o reduceOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	if o.isArg() {
		return argRule(l, in, c)
	}
	return reduceRule(l, in, c)
}

func (layerNormOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return layerNormRule(l, in, c)
}

func (instanceNormOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return instanceNormRule(l, in, c)
}

func (lrnOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (mvnOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (o copyOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	switch o.typ {
	case "Transpose":
		return transposeRule(l, in, c)
	case "Slice":
		return sliceRule(l, in, c)
	case "Expand":
		return expandRule(l, in, c)
	case "Tile":
		return tileRule(l, in, c)
	}
	return nil, fmt.Errorf("no shape rule for the copy op %s", o.typ)
}

func (depthSpaceOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return depthSpaceRule(l, in, c)
}

func (splitOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return splitRule(l, in, c)
}

func (padOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return padRule(l, in, c)
}

func (gatherOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return gatherRule(l, in, c)
}

func (resizeOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return resizeRule(l, in, c)
}

func (convTransposeOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return convTransposeRule(l, in, c)
}

func (gatherElementsOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return gatherElementsRule(l, in, c)
}

func (triluOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (cumSumOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return unaryRule(l, in, c)
}

func (topKOp) Shapes(l *model.Layer, in [][]int, c []*model.Tensor) ([][]int, error) {
	return topKRule(l, in, c)
}

func (o fireOp) Shapes(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	return fromOutputShapes(o, l, in)
}

func (o invResOp) Shapes(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	return fromOutputShapes(o, l, in)
}

func (o reorderOp) Shapes(l *model.Layer, in [][]int, _ []*model.Tensor) ([][]int, error) {
	return fromOutputShapes(o, l, in)
}
