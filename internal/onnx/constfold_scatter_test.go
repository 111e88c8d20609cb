package onnx

import (
	"slices"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestFoldScatterND: ScatterND on constants, the expected values written from the ONNX
// operator definition: element tuples, row tuples, a negative index, the add reduction
// over a repeated index, and the errors of an index out of range and misshapen updates.
func TestFoldScatterND(t *testing.T) {
	zeros := func() *cval { return newVal(model.Int64, []int{3, 3}) }
	cases := []struct {
		name  string
		attrs []model.Attr
		data  *cval
		idx   *cval
		upd   *cval
		want  []int64
		fails bool
	}{
		{name: "elements", data: zeros(), idx: intVal([]int{2, 2}, 0, 1, 2, -1), upd: intVal([]int{2}, 5, 7),
			want: []int64{0, 5, 0, 0, 0, 0, 0, 0, 7}},
		{name: "rows", data: zeros(), idx: intVal([]int{1, 1}, 1), upd: intVal([]int{1, 3}, 4, 5, 6),
			want: []int64{0, 0, 0, 4, 5, 6, 0, 0, 0}},
		{name: "add repeated", attrs: []model.Attr{{Name: "reduction", Kind: model.AttrString, Str: "add"}},
			data: intVal([]int{3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1), idx: intVal([]int{2, 2}, 2, 2, 2, 2), upd: intVal([]int{2}, 3, 4),
			want: []int64{1, 1, 1, 1, 1, 1, 1, 1, 8}},
		{name: "out of range", data: zeros(), idx: intVal([]int{1, 2}, 3, 0), upd: intVal([]int{1}, 1), fails: true},
		{name: "updates shape", data: zeros(), idx: intVal([]int{1, 1}, 0), upd: intVal([]int{1, 2}, 1, 2), fails: true},
	}
	for _, c := range cases {
		l := &model.Layer{Name: c.name, Type: "ScatterND", Inputs: []string{"d", "i", "u"}, Outputs: []string{"o"}, Attrs: c.attrs}
		got, err := evalData(l, []*cval{c.data, c.idx, c.upd}, 16)
		if c.fails {
			if err == nil {
				t.Errorf("%s: folded to %v, want an error", c.name, got.ints)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(got.shape, []int{3, 3}) || !slices.Equal(got.ints, c.want) {
			t.Errorf("%s: %v %v, want [3 3] %v", c.name, got.shape, got.ints, c.want)
		}
	}
}

// TestFoldShiftedWindowMask: the shape of a shifted-window attention mask as PyTorch
// exports it, in small: ConstantOfShape of zeros, ScatterND writing a region's count, and
// an Add onto the scores. The mask folds into a constant the Add reads.
func TestFoldShiftedWindowMask(t *testing.T) {
	g := graphOf(vinfo("x", dtFloat, 2, 2), vinfo("y", dtFloat),
		i64init("size", []int64{2}, 2, 2), i64init("where", []int64{2, 2}, 0, 1, 1, 1),
		addInit(tensorPB("count", dtFloat, []int64{2}, f32raw(-100, -50))),
		addNode(node("ConstantOfShape", "zeros", []string{"size"}, []string{"blank"})),
		addNode(node("ScatterND", "mark", []string{"blank", "where", "count"}, []string{"mask"})),
		addNode(node("Add", "add", []string{"x", "mask"}, []string{"y"})))
	m := decodeOK(t, onnxModel(14, g), Options{})
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers left, want the Add alone: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "add", "Add", []string{"x", "mask"}, []string{"y"})
	wantConst(t, m, "mask", model.Float32, []int{2, 2}, f32bytes(0, -100, 0, -50))
}
