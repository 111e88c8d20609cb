package builtinkernels

import "testing"

// The cases of layout.go's and resize.go's ops in the one harness
// (TestOpsMatchReference).
func init() {
	x := sh(2, 3, 4, 5)
	cp := func(typ, name string, attrs Attrs, out []int) opCase {
		return opCase{name: name, typ: typ, attrs: attrs, in: shapes(x), out: shapes(out)}
	}
	opCases = append(opCases,
		cp("Transpose", "reversed", nil, sh(5, 4, 3, 2)),
		cp("Transpose", "nchw_to_nhwc", Attrs{"perm": []int{0, 2, 3, 1}}, sh(2, 4, 5, 3)),
		cp("Slice", "steps_and_negative_ends", Attrs{"starts": []int{1, 0}, "ends": []int{-1, 100}, "axes": []int{2, 3}, "steps": []int{1, 2}}, sh(2, 3, 2, 3)),
		cp("Slice", "reversed", Attrs{"starts": []int{-1, 2}, "ends": []int{-100, 0}, "axes": []int{1, 3}, "steps": []int{-1, -1}}, sh(2, 3, 4, 2)),
		cp("Expand", "ones_and_new_axis", Attrs{"shape": []int{3, 1, 1, 4, 1}}, sh(3, 2, 3, 4, 5)),
		cp("Tile", "repeats", Attrs{"repeats": []int{1, 2, 1, 3}}, sh(2, 6, 4, 15)),
		opCase{name: "dcr", typ: "DepthToSpace", attrs: Attrs{"blocksize": 2}, in: shapes(sh(2, 8, 3, 4)), out: shapes(sh(2, 2, 6, 8))},
		opCase{name: "crd", typ: "DepthToSpace", attrs: Attrs{"blocksize": 2, "mode": "CRD"}, in: shapes(sh(2, 8, 3, 4)), out: shapes(sh(2, 2, 6, 8))},
		opCase{name: "block2", typ: "SpaceToDepth", attrs: Attrs{"blocksize": 2}, in: shapes(sh(2, 3, 6, 4)), out: shapes(sh(2, 12, 3, 2))},
		opCase{name: "axis1_sizes", typ: "Split", attrs: Attrs{"axis": 1, "split": []int{1, 2}}, in: shapes(x), out: shapes(sh(2, 1, 4, 5), sh(2, 2, 4, 5))},
		opCase{name: "last_axis_three", typ: "Split", attrs: Attrs{"axis": -1, "num_outputs": 3}, in: shapes(x), out: shapes(sh(2, 3, 4, 2), sh(2, 3, 4, 2), sh(2, 3, 4, 1))},
		cp("Pad", "constant_value", Attrs{"pads": []int{0, 1, 2, 0, 0, 0, 1, 3}, "value": 1.5}, sh(2, 4, 7, 8)),
		cp("Pad", "reflect", Attrs{"pads": []int{0, 0, 2, 3, 0, 0, 3, 4}, "mode": "reflect"}, sh(2, 3, 9, 12)),
		cp("Pad", "edge_and_crop", Attrs{"pads": []int{0, 0, 1, -1, 0, -1, 2, 2}, "mode": "edge"}, sh(2, 2, 7, 6)),
		cp("Pad", "wrap", Attrs{"pads": []int{0, 0, 1, 2, 0, 0, 2, 1}, "mode": "wrap"}, sh(2, 3, 7, 8)),
		opCase{name: "axis1_matrix", typ: "Gather", attrs: Attrs{"axis": 1}, in: shapes(x, sh(2, 2)), out: shapes(sh(2, 2, 2, 4, 5)), gen: "rn"},
		opCase{name: "axis0_scalar", typ: "Gather", in: shapes(x, []int{}), out: shapes(sh(3, 4, 5)), gen: "rn"},
		opCase{name: "squeeze_axes", typ: "Squeeze", attrs: Attrs{"axes": []int{1, -1}}, in: shapes(sh(2, 1, 4, 1)), out: shapes(sh(2, 4))},
		opCase{name: "unsqueeze_axes", typ: "Unsqueeze", attrs: Attrs{"axes": []int{0, -1}}, in: shapes(sh(2, 4)), out: shapes(sh(1, 2, 4, 1))},
	)
	img := sh(1, 2, 4, 5)
	rs := func(name string, attrs Attrs, out []int) opCase {
		return opCase{name: name, typ: "Resize", attrs: attrs, in: shapes(img), out: shapes(out), gen: "w"}
	}
	opCases = append(opCases,
		rs("nearest_half_pixel_x2", Attrs{"scales": []float32{1, 1, 2, 2}}, sh(1, 2, 8, 10)),
		rs("nearest_asym_floor_down", Attrs{"scales": []float32{1, 1, 0.5, 0.6}, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, sh(1, 2, 2, 3)),
		rs("nearest_align_corners_ceil", Attrs{"sizes": []int{1, 2, 7, 3}, "coordinate_transformation_mode": "align_corners", "nearest_mode": "round_prefer_ceil"}, sh(1, 2, 7, 3)),
		rs("linear_half_pixel", Attrs{"mode": "linear", "scales": []float32{1, 1, 1.5, 2.5}}, sh(1, 2, 6, 12)),
		rs("linear_pytorch_down", Attrs{"mode": "linear", "sizes": []int{1, 2, 3, 1}, "coordinate_transformation_mode": "pytorch_half_pixel"}, sh(1, 2, 3, 1)),
		rs("linear_align_corners", Attrs{"mode": "linear", "sizes": []int{1, 2, 7, 9}, "coordinate_transformation_mode": "align_corners"}, sh(1, 2, 7, 9)),
		rs("cubic_exclude_outside", Attrs{"mode": "cubic", "scales": []float32{1, 1, 2, 1.6}, "exclude_outside": 1, "cubic_coeff_a": -0.5}, sh(1, 2, 8, 8)),
		rs("cubic_asymmetric", Attrs{"mode": "cubic", "scales": []float32{1, 1, 0.8, 1.5}, "coordinate_transformation_mode": "asymmetric"}, sh(1, 2, 3, 7)),
		rs("crop_and_resize_extrapolation", Attrs{"mode": "linear", "sizes": []int{1, 2, 5, 6}, "coordinate_transformation_mode": "tf_crop_and_resize",
			"roi": []float32{0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4}, "extrapolation_value": 7.5}, sh(1, 2, 5, 6)),
		rs("nearest_tf_half_pixel", Attrs{"scales": []float32{1, 1, 1.7, 0.7}, "coordinate_transformation_mode": "tf_half_pixel_for_nn"}, sh(1, 2, 6, 3)),
		rs("linear_half_pixel_symmetric", Attrs{"mode": "linear", "scales": []float32{1, 1, 1.3, 2.2}, "coordinate_transformation_mode": "half_pixel_symmetric"}, sh(1, 2, 5, 11)),
		rs("unchanged", Attrs{"scales": []float32{1, 1, 1, 1}}, img),
		opCase{name: "nearest_x2", typ: "Upsample", attrs: Attrs{"scales": []float32{1, 1, 2, 3}}, in: shapes(img), out: shapes(sh(1, 2, 8, 15)), gen: "w"},
		opCase{name: "linear", typ: "Upsample", attrs: Attrs{"mode": "linear", "scales": []float32{1, 1, 2, 2}}, in: shapes(img), out: shapes(sh(1, 2, 8, 10)), gen: "w"},
	)
}

// The cases of deconv.go's ConvTranspose.
func init() {
	opCases = append(opCases,
		opCase{name: "2d_stride2_pads_bias", typ: convTransposeType, attrs: Attrs{"strides": []int{2, 2}, "pads": []int{1, 0, 0, 1}},
			in: shapes(sh(2, 3, 4, 5), sh(3, 4, 3, 3), sh(4)), out: shapes(sh(2, 4, 8, 10))},
		opCase{name: "2d_group_dilation_output_padding", typ: convTransposeType, attrs: Attrs{"group": 2, "strides": []int{2, 3}, "dilations": []int{2, 1}, "output_padding": []int{1, 2}},
			in: shapes(sh(1, 4, 3, 3), sh(4, 3, 2, 2)), out: shapes(sh(1, 6, 8, 10))},
		opCase{name: "1d_same_upper", typ: convTransposeType, attrs: Attrs{"strides": []int{2}, "auto_pad": "SAME_UPPER"},
			in: shapes(sh(2, 3, 7), sh(3, 2, 4)), out: shapes(sh(2, 2, 14))},
		opCase{name: "3d_output_shape", typ: convTransposeType, attrs: Attrs{"strides": []int{1, 2, 2}, "output_shape": []int{4, 7, 8}},
			in: shapes(sh(1, 2, 3, 3, 3), sh(2, 3, 2, 3, 3), sh(3)), out: shapes(sh(1, 3, 4, 7, 8))},
	)
}

// TestIdentityViewsAlias: a Transpose that moves only axes of size 1, a Slice that keeps
// everything and an Expand to the input's own shape plan no launch (the output is the
// input's memory) and give the reference's values; a real Transpose still copies.
func TestIdentityViewsAlias(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	cases := []struct {
		c     opCase
		alias bool
	}{
		{opCase{name: "unit axes", typ: "Transpose", attrs: Attrs{"perm": []int{2, 0, 1, 3}}, in: shapes(sh(1, 5, 1, 3)), out: shapes(sh(1, 1, 5, 3))}, true},
		{opCase{name: "seq first at batch 1", typ: "Transpose", attrs: Attrs{"perm": []int{1, 0, 2}}, in: shapes(sh(1, 7, 4)), out: shapes(sh(7, 1, 4))}, true},
		{opCase{name: "whole slice", typ: "Slice", attrs: Attrs{"starts": []int{0}, "ends": []int{100}, "axes": []int{1}}, in: shapes(sh(2, 3)), out: shapes(sh(2, 3))}, true},
		{opCase{name: "same shape", typ: "Expand", attrs: Attrs{"shape": []int{2, 3}}, in: shapes(sh(2, 3)), out: shapes(sh(2, 3))}, true},
		{opCase{name: "real", typ: "Transpose", attrs: Attrs{"perm": []int{1, 0, 2}}, in: shapes(sh(2, 7, 4)), out: shapes(sh(7, 2, 4))}, false},
		{opCase{name: "prefix slice", typ: "Slice", attrs: Attrs{"starts": []int{0}, "ends": []int{1}, "axes": []int{0}}, in: shapes(sh(2, 3)), out: shapes(sh(1, 3))}, false},
	}
	for _, tc := range cases {
		plan := runOpCase(t, env, tc.c, env.dev)
		if alias := plan.AliasInput == 0 && len(plan.Launches) == 0; alias != tc.alias {
			t.Errorf("%s %s: aliases its input %v, want %v", tc.c.typ, tc.c.name, alias, tc.alias)
		}
	}
}
