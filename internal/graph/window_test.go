package graph_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// Shape inference and the kernels resolve a window by one rule: for each case the shape
// graph infers is the one the built-in op plans for.
func TestWindowShapesMatchKernels(t *testing.T) {
	ints := model.IntsAttr
	for _, c := range []struct {
		typ   string
		attrs []model.Attr
		in    [][]int
	}{
		{"Conv", []model.Attr{ints("pads", 1, 0, 2, 1), ints("strides", 2, 3)}, [][]int{{1, 2, 9, 10}, {4, 2, 3, 3}}},
		{"Conv", []model.Attr{model.StringAttr("auto_pad", "SAME_LOWER"), ints("strides", 2, 2), ints("dilations", 2, 1)}, [][]int{{1, 2, 8, 7}, {4, 2, 3, 2}}},
		{"Conv", []model.Attr{model.StringAttr("auto_pad", "VALID"), ints("strides", 3)}, [][]int{{2, 3, 11}, {4, 3, 2}}},
		{"MaxPool", []model.Attr{ints("kernel_shape", 3, 3), ints("strides", 2, 2), model.IntAttr("ceil_mode", 1)}, [][]int{{1, 2, 8, 8}}},
		// A last window that would start in the end padding is dropped.
		{"MaxPool", []model.Attr{ints("kernel_shape", 2, 2), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), model.IntAttr("ceil_mode", 1)}, [][]int{{1, 1, 5, 5}}},
		// VALID takes no ceil_mode: floor((6 - 3) / 2) + 1 = 2 windows, not 3.
		{"MaxPool", []model.Attr{ints("kernel_shape", 3, 3), ints("strides", 2, 2), model.StringAttr("auto_pad", "VALID"), model.IntAttr("ceil_mode", 1)}, [][]int{{1, 1, 6, 6}}},
		{"AveragePool", []model.Attr{ints("kernel_shape", 3), model.StringAttr("auto_pad", "SAME_UPPER"), ints("strides", 2)}, [][]int{{1, 3, 9}}},
	} {
		name := fmt.Sprintf("%s %v", c.typ, c.in)
		l := &model.Layer{Name: "L", Type: c.typ, Attrs: c.attrs, Outputs: []string{"y"}}
		for i := range c.in {
			l.Inputs = append(l.Inputs, fmt.Sprint("x", i))
		}
		want, err := graph.OutputShapes(l, c.in)
		if err != nil {
			t.Errorf("%s: graph: %v", name, err)
			continue
		}
		op, ok := builtinkernels.Lookup(c.typ)
		if !ok {
			t.Fatalf("%s is not a built-in", c.typ)
		}
		got, err := op.(builtinkernels.ShapeInferrer).OutputShapes(l, c.in)
		if err != nil || len(got) != 1 || !slices.Equal(got[0], want[0]) {
			t.Errorf("%s: the kernel plans %v (%v), graph infers %v", name, got, err, want)
		}
	}
}
