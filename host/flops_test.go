package host

import (
	"testing"

	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// TestLayerFlops: the fused convolution layers count the work of the convolutions they
// stand for, so `clhost bench` prints their GFLOP/s.
func TestLayerFlops(t *testing.T) {
	cases := []struct {
		name string
		typ  string
		in   [][]int
		out  [][]int
		want float64
	}{
		{"conv 3×3", "Conv", [][]int{{1, 4, 6, 6}, {8, 4, 3, 3}}, [][]int{{1, 8, 6, 6}}, 2 * 288 * 36},
		// 200 input pixels × 24 × 8 for the 1×1, 50 output pixels × 24 × 9 for the
		// depthwise half.
		{"1×1 + depthwise", opspec.InvertedResidualType,
			[][]int{{2, 8, 10, 10}, {24, 8, 1, 1}, {24}, {24, 1, 3, 3}, {24}}, [][]int{{2, 24, 5, 5}}, 2 * (38400 + 10800)},
		// And 50 × 6 × 24 for the projection.
		{"block", opspec.InvertedResidualType,
			[][]int{{2, 8, 10, 10}, {24, 8, 1, 1}, {24}, {24, 1, 3, 3}, {24}, {6, 24, 1, 1}, nil, {2, 6, 5, 5}}, [][]int{{2, 6, 5, 5}}, 2 * (38400 + 10800 + 7200)},
		// 35 pixels × (6 × 8 + 5 × 6 + 7 × 6 × 9), per image.
		{"fire", opspec.FireType,
			[][]int{{2, 8, 5, 7}, {6, 8, 1, 1}, {6}, {5, 6, 1, 1}, {5}, {7, 6, 3, 3}, {7}}, [][]int{{2, 12, 5, 7}}, 2 * 70 * (48 + 30 + 378)},
		{"relu", "Relu", [][]int{{1, 4, 6, 6}}, [][]int{{1, 4, 6, 6}}, 0},
	}
	for _, c := range cases {
		if got := layerFlops(c.typ, c.in, c.out); got != c.want {
			t.Errorf("%s: %g flops, want %g", c.name, got, c.want)
		}
	}
	// A Conv that averages its planes counts the planes it computes.
	pooled := &model.Layer{Type: "Conv", Attrs: []model.Attr{model.IntAttr(opspec.FusedGlobalAveragePoolAttr, 1)}}
	in := [][]int{{2, 8, 5, 7}, {16, 8, 1, 1}}
	if got, want := layerFlops("Conv", in, convPlanes(pooled, in, [][]int{{2, 16, 1, 1}})), 2.0*2*16*35*8; got != want {
		t.Errorf("pooled 1×1: %g flops, want %g", got, want)
	}
	// So does one that takes its MaxPool: 9 × 11 conv outputs of 3 × 3 × 3 products.
	maxPooled := &model.Layer{Type: "Conv", Attrs: []model.Attr{model.IntsAttr("strides", 2, 2),
		model.IntsAttr(opspec.FusedMaxPoolPrefix+"kernel_shape", 3, 3), model.IntsAttr(opspec.FusedMaxPoolPrefix+"strides", 2, 2)}}
	in = [][]int{{1, 3, 19, 23}, {8, 3, 3, 3}}
	if got, want := layerFlops("Conv", in, convPlanes(maxPooled, in, [][]int{{1, 8, 4, 5}})), 2.0*8*99*27; got != want {
		t.Errorf("max-pooled 3×3: %g flops, want %g", got, want)
	}
}
