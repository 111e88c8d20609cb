package builtinkernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

type shapeCase struct {
	typ    string
	attrs  []model.Attr
	in     [][]int
	absent []int                 // inputs omitted (empty names)
	consts map[int]*model.Tensor // constant inputs
	outs   int                   // number of outputs; 1 when 0
	want   [][]int
	err    string
}

func ints(name string, v ...int64) model.Attr { return model.IntsAttr(name, v...) }
func i64(name string, v int64) model.Attr     { return model.IntAttr(name, v) }
func str(name, v string) model.Attr           { return model.StringAttr(name, v) }

func shapeConst(v ...int64) *model.Tensor {
	return &model.Tensor{Name: "shape", Type: model.Int64, Shape: []int{len(v)}, Data: model.Int64Bytes(v)}
}

func (c shapeCase) run() ([][]int, error) {
	l := &model.Layer{Name: "L", Type: c.typ, Attrs: c.attrs}
	for i := range c.in {
		l.Inputs = append(l.Inputs, fmt.Sprint("in", i))
	}
	for _, i := range c.absent {
		l.Inputs[i] = ""
	}
	for k := range max(c.outs, 1) {
		l.Outputs = append(l.Outputs, fmt.Sprint("out", k))
	}
	consts := make([]*model.Tensor, len(c.in))
	for i, t := range c.consts {
		consts[i] = t
	}
	return layerShapes(l, c.in, consts)
}

// layerShapes asks the op registered for l's type for its shape rule, as the graph does,
// and checks that it gives one shape per output.
func layerShapes(l *model.Layer, in [][]int, consts []*model.Tensor) ([][]int, error) {
	op, ok := Lookup(l.Type)
	if !ok {
		return nil, fmt.Errorf("layer type %s is not registered", l.Type)
	}
	s, ok := op.(Shaper)
	if !ok {
		return nil, fmt.Errorf("layer type %s has no shape rule", l.Type)
	}
	out, err := s.Shapes(l, in, consts)
	if err == nil && len(out) != len(l.Outputs) {
		return nil, fmt.Errorf("%d output shapes for %d outputs", len(out), len(l.Outputs))
	}
	return out, err
}

// Expected shapes below are worked out by hand from the ONNX formulas; the comment beside
// each shows the arithmetic.
var shapeCases = []shapeCase{
	// Conv: out = floor((in + pad_begin + pad_end - ((k-1)·d + 1)) / s) + 1.
	{typ: "Conv", attrs: []model.Attr{ints("strides", 4, 4)}, in: [][]int{{1, 3, 416, 416}, {10, 3, 4, 4}, {10}},
		want: [][]int{{1, 10, 104, 104}}}, // (416-4)/4+1
	{typ: "Conv", attrs: []model.Attr{ints("pads", 1, 2, 3, 4)}, in: [][]int{{2, 4, 7, 9}, {6, 4, 3, 3}},
		want: [][]int{{2, 6, 9, 13}}}, // H: 7+1+3-3+1, W: 9+2+4-3+1
	{typ: "Conv", attrs: []model.Attr{ints("strides", 2, 3), ints("dilations", 2, 1)}, in: [][]int{{1, 1, 10, 10}, {1, 1, 3, 3}},
		want: [][]int{{1, 1, 3, 3}}}, // H: ek 5, (10-5)/2+1; W: (10-3)/3+1
	{typ: "Conv", attrs: []model.Attr{i64("group", 8), ints("pads", 1, 1, 1, 1)}, in: [][]int{{1, 8, 5, 5}, {8, 1, 3, 3}},
		want: [][]int{{1, 8, 5, 5}}}, // depthwise, 5+2-3+1
	{typ: "Conv", attrs: []model.Attr{i64("group", 2)}, in: [][]int{{1, 4, 6, 6}, {6, 2, 1, 1}},
		want: [][]int{{1, 6, 6, 6}}},
	{typ: "Conv", attrs: []model.Attr{str("auto_pad", "SAME_UPPER"), ints("strides", 2, 2)}, in: [][]int{{1, 1, 7, 8}, {1, 1, 3, 3}},
		want: [][]int{{1, 1, 4, 4}}}, // ceil(7/2), ceil(8/2)
	{typ: "Conv", attrs: []model.Attr{str("auto_pad", "VALID"), ints("strides", 2, 2)}, in: [][]int{{1, 1, 7, 7}, {1, 1, 3, 3}},
		want: [][]int{{1, 1, 3, 3}}}, // (7-3)/2+1
	{typ: "Conv", attrs: []model.Attr{ints("kernel_shape", 3)}, in: [][]int{{1, 2, 10}, {4, 2, 3}},
		want: [][]int{{1, 4, 8}}}, // 1-D: 10-3+1
	{typ: "Conv", in: [][]int{{1, 3, 8, 8}, {4, 2, 3, 3}}, err: "input has 3 channels, but weight [4 2 3 3] with group 1 takes 2"},
	{typ: "Conv", attrs: []model.Attr{i64("group", 2)}, in: [][]int{{1, 4, 8, 8}, {3, 2, 3, 3}}, err: "3 output channels (weight [3 2 3 3]) do not divide into 2 groups"},
	{typ: "Conv", in: [][]int{{1, 2, 8, 8}, {4, 2, 3, 3}, {5}}, err: "bias has shape [5], want [4]"},
	{typ: "Conv", in: [][]int{{1, 1, 2, 2}, {1, 1, 3, 3}}, err: "spatial axis 0: the window spans 3 but the padded input only 2"},
	{typ: "Conv", attrs: []model.Attr{ints("strides", 2)}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: "attribute strides has 1 values [2], want 2"},
	{typ: "Conv", attrs: []model.Attr{ints("strides", 0, 1)}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: "attribute strides [0 1]: value 0 is out of range"},
	{typ: "Conv", attrs: []model.Attr{ints("kernel_shape", 5, 5)}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: "kernel_shape [5 5] does not match weight [1 1 3 3]"},
	{typ: "Conv", attrs: []model.Attr{str("auto_pad", "SAME")}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: `auto_pad "SAME" is not one of`},
	{typ: "Conv", attrs: []model.Attr{str("auto_pad", "VALID"), ints("pads", 1, 1, 1, 1)}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: "pads [1 1 1 1] cannot be combined with auto_pad VALID"},
	{typ: "Conv", attrs: []model.Attr{model.FloatsAttr("strides", 1, 1)}, in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, err: "attribute strides must be a list of ints"},
	{typ: "Conv", in: [][]int{{1, 1, 8, 8}, {1, 1, 3}}, err: "weight shape [1 1 3] has rank 3, input [1 1 8 8] rank 4"},
	{typ: "Conv", in: [][]int{{1, 1, 8, 8}, {1, 1, 3, 3}}, absent: []int{1}, err: "input 1 is required"},
	{typ: "Conv", in: [][]int{{1, 1, 8, 8}}, err: "has 1 inputs, want 2 to 4"},

	// Pooling: the same window rule; ceil_mode rounds up but drops a window that would start
	// in the end padding.
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2)}, in: [][]int{{1, 10, 104, 104}},
		want: [][]int{{1, 10, 52, 52}}},
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2), i64("ceil_mode", 1)}, in: [][]int{{1, 1, 5, 5}},
		want: [][]int{{1, 1, 3, 3}}}, // ceil(3/2)+1; the last window starts at 4 < 5
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2)}, in: [][]int{{1, 1, 5, 5}},
		want: [][]int{{1, 1, 2, 2}}}, // floor(3/2)+1
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2), ints("pads", 0, 0, 1, 1), i64("ceil_mode", 1)}, in: [][]int{{1, 1, 4, 4}},
		want: [][]int{{1, 1, 2, 2}}}, // ceil(3/2)+1 = 3, but window 3 starts at 4, in the padding
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("dilations", 2, 2)}, in: [][]int{{1, 1, 5, 5}},
		want: [][]int{{1, 1, 3, 3}}}, // ek 3: 5-3+1
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 3, 3), ints("strides", 2, 2), str("auto_pad", "SAME_LOWER")}, in: [][]int{{1, 1, 6, 6}}, outs: 2,
		want: [][]int{{1, 1, 3, 3}, {1, 1, 3, 3}}}, // ceil(6/2); values and indices
	{typ: "AveragePool", attrs: []model.Attr{ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), i64("count_include_pad", 1)}, in: [][]int{{1, 2, 7, 7}},
		want: [][]int{{1, 2, 4, 4}}}, // (7+2-3)/2+1
	{typ: "AveragePool", attrs: []model.Attr{ints("kernel_shape", 2, 2)}, in: [][]int{{1, 2, 7, 7}}, outs: 2, err: "has 2 outputs, want 1"},
	{typ: "MaxPool", in: [][]int{{1, 1, 4, 4}}, err: "attribute kernel_shape is required"},
	{typ: "MaxPool", attrs: []model.Attr{ints("kernel_shape", 2, 2), i64("ceil_mode", 2)}, in: [][]int{{1, 1, 4, 4}}, err: "ceil_mode is 2"},
	{typ: "GlobalAveragePool", in: [][]int{{2, 5, 7, 9}}, want: [][]int{{2, 5, 1, 1}}},
	{typ: "GlobalMaxPool", in: [][]int{{1, 3, 4}}, want: [][]int{{1, 3, 1}}},
	{typ: "GlobalMaxPool", in: [][]int{{1, 3}}, err: "global pooling needs N, C and at least one spatial axis"},

	// Element-wise.
	{typ: "Relu", in: [][]int{{3, 4}}, want: [][]int{{3, 4}}},
	{typ: "LeakyRelu", attrs: []model.Attr{model.FloatAttr("alpha", 0.1)}, in: [][]int{{2}}, want: [][]int{{2}}},
	{typ: "Sigmoid", in: [][]int{{1, 2, 3}}, want: [][]int{{1, 2, 3}}},
	{typ: "Tanh", in: [][]int{{}}, want: [][]int{{}}},
	{typ: "HardSigmoid", in: [][]int{{5, 1}}, want: [][]int{{5, 1}}},
	{typ: "HardSwish", in: [][]int{{1, 8, 2, 2}}, want: [][]int{{1, 8, 2, 2}}},
	{typ: "Identity", in: [][]int{{7}}, want: [][]int{{7}}},
	{typ: "Relu", in: [][]int{{3}, {3}}, err: "has 2 inputs, want 1"},
	{typ: "Clip", in: [][]int{{2, 3}, nil, {}}, absent: []int{1}, want: [][]int{{2, 3}}},
	{typ: "Clip", in: [][]int{{2, 3}, {1}, {2}}, err: "max (input 2) has shape [2]; it must be a scalar"},
	{typ: "Dropout", in: [][]int{{2, 3}}, outs: 2, want: [][]int{{2, 3}, {2, 3}}},

	// Broadcasting: align at the last axis, 1 stretches.
	{typ: "Add", in: [][]int{{2, 3, 4, 5}, {5}}, want: [][]int{{2, 3, 4, 5}}},
	{typ: "Mul", in: [][]int{{2, 3, 4, 4}, {3, 1, 1}}, want: [][]int{{2, 3, 4, 4}}}, // per channel
	{typ: "Sub", in: [][]int{{2, 1}, {1, 3}}, want: [][]int{{2, 3}}},
	{typ: "Add", in: [][]int{{}, {2, 2}}, want: [][]int{{2, 2}}},
	{typ: "Div", in: [][]int{{2, 3}, {}}, want: [][]int{{2, 3}}},
	{typ: "Div", in: [][]int{{3}, {4}}, err: "shapes [3] and [4] do not broadcast: axis 1 (from the end) is 3 against 4"},

	// Concat.
	{typ: "Concat", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{1, 2, 4, 4}, {1, 3, 4, 4}}, want: [][]int{{1, 5, 4, 4}}},
	{typ: "Concat", attrs: []model.Attr{i64("axis", -1)}, in: [][]int{{2, 3}, {2, 5}, {2, 1}}, want: [][]int{{2, 9}}},
	{typ: "Concat", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{1, 2, 4, 4}, {1, 3, 5, 4}}, err: "they differ on axis 2"},
	{typ: "Concat", attrs: []model.Attr{i64("axis", 1)}, in: [][]int{{1, 2, 4, 4}, {1, 3, 4}}, err: "ranks differ"},
	{typ: "Concat", in: [][]int{{1, 2}, {1, 2}}, err: "attribute axis is required"},
	{typ: "Concat", attrs: []model.Attr{i64("axis", 4)}, in: [][]int{{1, 2, 4, 4}}, err: "axis 4 is out of range [-4, 3] for rank 4"},

	// Flatten: [prod(d[:axis]), prod(d[axis:])].
	{typ: "Flatten", in: [][]int{{2, 3, 4, 5}}, want: [][]int{{2, 60}}},
	{typ: "Flatten", attrs: []model.Attr{i64("axis", 0)}, in: [][]int{{2, 3, 4, 5}}, want: [][]int{{1, 120}}},
	{typ: "Flatten", attrs: []model.Attr{i64("axis", -1)}, in: [][]int{{2, 3, 4, 5}}, want: [][]int{{24, 5}}},
	{typ: "Flatten", attrs: []model.Attr{i64("axis", 4)}, in: [][]int{{2, 3, 4, 5}}, want: [][]int{{120, 1}}},
	{typ: "Flatten", attrs: []model.Attr{i64("axis", 5)}, in: [][]int{{2, 3, 4, 5}}, err: "axis 5 is out of range [-4, 4]"},

	// Reshape of 24 elements.
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2}}, consts: map[int]*model.Tensor{1: shapeConst(0, -1)}, want: [][]int{{2, 12}}},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {3}}, consts: map[int]*model.Tensor{1: shapeConst(4, -1, 3)}, want: [][]int{{4, 2, 3}}},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {1}}, consts: map[int]*model.Tensor{1: shapeConst(-1)}, want: [][]int{{24}}},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {3}}, consts: map[int]*model.Tensor{1: shapeConst(0, 0, 4)}, want: [][]int{{2, 3, 4}}},
	{typ: "Reshape", attrs: []model.Attr{i64("allowzero", 1)}, in: [][]int{{0, 3}, {2}}, consts: map[int]*model.Tensor{1: shapeConst(3, 0)}, want: [][]int{{3, 0}}},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2}}, consts: map[int]*model.Tensor{1: {Name: "s32", Type: model.Int32, Shape: []int{2}, Data: []byte{6, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}}},
		want: [][]int{{6, 4}}}, // int32 [6, -1]
	// Opsets before 5: the target as the shape attribute.
	{typ: "Reshape", attrs: []model.Attr{ints("shape", 0, -1)}, in: [][]int{{2, 3, 4}}, want: [][]int{{2, 12}}},
	{typ: "Reshape", in: [][]int{{2, 3, 4}}, err: "neither input 1 nor the shape attribute"},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2}}, consts: map[int]*model.Tensor{1: shapeConst(-1, -1)}, err: "more than one -1"},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2}}, consts: map[int]*model.Tensor{1: shapeConst(5, -1)}, err: "the -1 has no whole size"},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {3}}, consts: map[int]*model.Tensor{1: shapeConst(2, 2, 2)}, err: "cannot reshape [2 3 4] (24 elements) to [2 2 2] (8 elements)"},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2, 2}}, consts: map[int]*model.Tensor{1: shapeConst(4, 0, 0, 0)}, err: "has shape [2 2]; it must be a list"},
	{typ: "Reshape", in: [][]int{{2, 3}, {3}}, consts: map[int]*model.Tensor{1: shapeConst(1, 1, 0)}, err: "copies dimension 2, but the input [2 3] has only 2"},
	{typ: "Reshape", in: [][]int{{2, 3, 4}, {2}}, err: `the target shape (input 1, "in1") must be a constant`},

	// Gemm: A' (M×K) · B' (K×N), C broadcast to M×N.
	{typ: "Gemm", in: [][]int{{4, 3}, {3, 5}}, want: [][]int{{4, 5}}},
	{typ: "Gemm", attrs: []model.Attr{i64("transA", 1)}, in: [][]int{{3, 4}, {3, 5}, {5}}, want: [][]int{{4, 5}}},
	{typ: "Gemm", attrs: []model.Attr{i64("transB", 1)}, in: [][]int{{4, 3}, {5, 3}, {4, 1}}, want: [][]int{{4, 5}}},
	{typ: "Gemm", in: [][]int{{4, 3}, {3, 5}, {3}}, err: "C has shape [3]; it must broadcast to [4 5]"},
	{typ: "Gemm", in: [][]int{{4, 3}, {4, 5}}, err: "do not agree on K: 3 against 4"},
	{typ: "Gemm", in: [][]int{{4, 3, 1}, {3, 5}}, err: "must both be matrices"},

	// MatMul: numpy rules.
	{typ: "MatMul", in: [][]int{{2, 3}, {3, 4}}, want: [][]int{{2, 4}}},
	{typ: "MatMul", in: [][]int{{3}, {3, 4}}, want: [][]int{{4}}},
	{typ: "MatMul", in: [][]int{{2, 3}, {3}}, want: [][]int{{2}}},
	{typ: "MatMul", in: [][]int{{3}, {3}}, want: [][]int{{}}},
	{typ: "MatMul", in: [][]int{{5, 1, 2, 3}, {4, 3, 6}}, want: [][]int{{5, 4, 2, 6}}}, // batch [5 1] with [4]
	{typ: "MatMul", in: [][]int{{2, 3}, {4, 5}}, err: "do not agree on K: 3 against 4"},
	{typ: "MatMul", in: [][]int{{2, 2, 3}, {3, 3, 4}}, err: "batch axes"},

	{typ: "Softmax", in: [][]int{{2, 10}}, want: [][]int{{2, 10}}},
	{typ: "Softmax", attrs: []model.Attr{i64("axis", 2)}, in: [][]int{{2, 10}}, err: "axis 2 is out of range [-2, 1]"},

	{typ: "BatchNormalization", in: [][]int{{2, 3, 4, 4}, {3}, {3}, {3}, {3}}, want: [][]int{{2, 3, 4, 4}}},
	{typ: "BatchNormalization", in: [][]int{{2, 3, 4, 4}, {3}, {3}, {3}, {3}}, outs: 3, want: [][]int{{2, 3, 4, 4}, {3}, {3}}},
	{typ: "BatchNormalization", in: [][]int{{2, 3, 4, 4}, {3}, {3}, {4}, {3}}, err: "mean (input 3) has shape [4], want [3]"},
}

// TestShapeRules runs every case through its op's shape rule.
func TestShapeRules(t *testing.T) {
	for i, c := range shapeCases {
		name := fmt.Sprintf("%d %s %v", i, c.typ, c.in)
		got, err := c.run()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, %v; want error containing %q", name, got, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, %v; want %v", name, got, err, c.want)
		}
	}
}

// TestEveryOpHasShapeCases: every registered op has a shape rule and a case it passes.
func TestEveryOpHasShapeCases(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range shapeCases {
		if c.err == "" {
			tested[c.typ] = true
		}
	}
	for _, typ := range Types() {
		op, _ := Lookup(typ)
		if _, ok := op.(Shaper); !ok {
			t.Errorf("%s has no shape rule (Shaper)", typ)
		}
		if !tested[typ] {
			t.Errorf("no successful shape case for %s", typ)
		}
	}
}

func TestWindowPads(t *testing.T) {
	// SAME on 8 with k=3, s=2: out 4, total pad (4-1)·2+3-8 = 1, the odd pixel at the end
	// for SAME_UPPER and at the beginning for SAME_LOWER.
	for _, c := range []struct {
		autoPad    string
		begin, end int
	}{{"SAME_UPPER", 0, 1}, {"SAME_LOWER", 1, 0}} {
		l := &model.Layer{Type: "Conv", Attrs: []model.Attr{str("auto_pad", c.autoPad), ints("strides", 2, 2)}}
		w, err := ConvGeometry(l, []int{1, 1, 8, 8}, []int{1, 1, 3, 3})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(w.PadsBegin, w.PadsEnd, w.Out) != fmt.Sprint([]int{c.begin, c.begin}, []int{c.end, c.end}, []int{4, 4}) {
			t.Errorf("%s: %+v", c.autoPad, w)
		}
	}
	// Explicit pads come through in ONNX order: begins then ends.
	l := &model.Layer{Type: "MaxPool", Attrs: []model.Attr{ints("kernel_shape", 2, 2), ints("pads", 1, 2, 3, 4)}}
	w, err := PoolGeometry(l, []int{1, 1, 6, 6})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(w.PadsBegin, w.PadsEnd, w.Strides, w.Dilations, w.Out) != "[1 2] [3 4] [1 1] [1 1] [9 11]" {
		t.Errorf("%+v", w) // out: 6+1+3-2+1 = 9, 6+2+4-2+1 = 11
	}
}
