package opspec

import (
	"slices"
	"strings"
	"testing"
)

// TestShapeRules pins the shared shape rules to values worked out from the ONNX
// definitions.
func TestShapeRules(t *testing.T) {
	g, err := ResolveSlice([]int{10, 6}, []int64{-1, 1}, []int64{-100, 1 << 62}, []int64{0, 1}, []int64{-3, 2})
	if err != nil {
		t.Fatal(err)
	}
	// axis 0: 9, 6, 3, 0; axis 1: 1, 3, 5.
	if !slices.Equal(g.Start, []int{9, 1}) || !slices.Equal(g.Step, []int{-3, 2}) || !slices.Equal(g.Out, []int{4, 3}) {
		t.Errorf("slice %+v", g)
	}
	if g, _ := ResolveSlice([]int{5}, []int64{7}, []int64{9}, nil, nil); g.Out[0] != 0 {
		t.Errorf("slice past the end: %v elements, want 0", g.Out[0])
	}
	red, _ := ReduceAxes([]int64{-1, 0}, false, 3)
	if s := ReducedShape([]int{2, 3, 4}, red, true); !slices.Equal(s, []int{1, 3, 1}) {
		t.Errorf("keepdims %v", s)
	}
	if s := ReducedShape([]int{2, 3, 4}, red, false); !slices.Equal(s, []int{3}) {
		t.Errorf("no keepdims %v", s)
	}
	if red, _ := ReduceAxes(nil, true, 2); red[0] || red[1] {
		t.Errorf("noop_with_empty_axes reduces %v", red)
	}
	if s, _ := SqueezeShape([]int{1, 3, 1}, nil); !slices.Equal(s, []int{3}) {
		t.Errorf("squeeze %v", s)
	}
	if s, _ := UnsqueezeShape([]int{3, 4}, []int64{0, -1}); !slices.Equal(s, []int{1, 3, 4, 1}) {
		t.Errorf("unsqueeze %v", s)
	}
	if s, _ := SplitSizes(nil, 7, 3); !slices.Equal(s, []int{3, 3, 1}) {
		t.Errorf("split %v", s)
	}
	// floor(5·1.4) with 1.4 as float32 (1.39999998) is 6, as ONNX computes it.
	if s, _ := ResizeOutput([]int{1, 5}, []float32{1, 1.4}, nil, nil); !slices.Equal(s, []int{1, 6}) {
		t.Errorf("resize %v", s)
	}
	// ConvTranspose: 3 → 2·2 + 0 + 3 − 1 − 0 = 6, and output_shape 10 from 9 reachable pads
	// the end.
	ct, err := ResolveConvTranspose([]int{1, 2, 3}, []int{2, 4, 3}, ConvTransposeAttrs{Group: 1, Strides: []int64{2}, Pads: []int64{1, 0}})
	if err != nil || ct.Out[0] != 6 || ct.Channels != 4 || ct.PadBegin[0] != 1 {
		t.Errorf("conv transpose %+v %v", ct, err)
	}
	ct, err = ResolveConvTranspose([]int{1, 1, 3}, []int{1, 1, 3}, ConvTransposeAttrs{Group: 1, Strides: []int64{3}, OutputShape: []int64{10}})
	if err != nil || ct.Out[0] != 10 || ct.PadBegin[0] != 0 {
		t.Errorf("conv transpose output_shape %+v %v", ct, err)
	}
	for _, bad := range []func() error{
		func() error { _, err := ResolveSlice([]int{4}, []int64{0}, []int64{1}, nil, []int64{0}); return err },
		func() error { _, err := TransposePerm([]int64{0, 0}, 2); return err },
		func() error { _, err := SqueezeShape([]int{2, 3}, []int64{1}); return err },
		func() error { _, err := SplitSizes([]int64{2, 2}, 5, 2); return err },
	} {
		if err := bad(); err == nil || strings.TrimSpace(err.Error()) == "" {
			t.Errorf("want an error, got %v", err)
		}
	}
}
