package builtinkernels

import (
	"strings"
	"testing"
)

// TestDepthwisePointwisePlan runs the fused depthwise + 1×1 layer against the two
// convolutions' references: the tiled CPU kernel over every vector width, one and two
// vectors per tile, rows that end in a partial tile, strides 1 and 2, windows of 3 and 5,
// no padding, partial channel tiles, each half's bias, activation and the residual; and
// the two-launch path (GPUs, dilated windows).
func TestDepthwisePointwisePlan(t *testing.T) {
	env := deviceEnv(t)
	q := mustQueue(t, env)
	clip := Attrs{DepthwiseActivationAttr: ActClip, DepthwiseMinAttr: float32(0), DepthwiseMaxAttr: float32(6)}
	cases := []struct {
		c     opCase
		tiled bool
	}{
		{opCase{name: "mobile s1 partial row and channels", attrs: mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 20}),
			in: shapes(sh(2, 20, 10, 13), sh(20, 1, 3, 3), sh(20), sh(11, 20, 1, 1), sh(11)), out: shapes(sh(2, 11, 10, 13))}, true},
		{opCase{name: "s2 relu residual", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "group": 16,
			DepthwiseActivationAttr: ActRelu, FusedActivationAttr: ActRelu},
			in: shapes(sh(1, 16, 17, 35), sh(16, 1, 3, 3), nil, sh(9, 16, 1, 1), nil, sh(1, 9, 9, 18)), omit: []int{2, 4}, out: shapes(sh(1, 9, 9, 18))}, true},
		{opCase{name: "two vectors 5x5 hardswish", attrs: Attrs{"pads": []int{2, 2, 2, 2}, "group": 8, FusedActivationAttr: ActHardSwish},
			in: shapes(sh(1, 8, 6, 40), sh(8, 1, 5, 5), sh(8), sh(16, 8, 1, 1), sh(16)), out: shapes(sh(1, 16, 6, 40))}, true},
		{opCase{name: "7x7 s2 from 14", attrs: mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "group": 12}),
			in: shapes(sh(2, 12, 14, 14), sh(12, 1, 3, 3), sh(12), sh(10, 12, 1, 1), sh(10), sh(2, 10, 7, 7)), out: shapes(sh(2, 10, 7, 7))}, true},
		{opCase{name: "no padding", attrs: Attrs{"group": 6},
			in: shapes(sh(1, 6, 8, 11), sh(6, 1, 3, 3), sh(6), sh(5, 6, 1, 1), sh(5)), out: shapes(sh(1, 5, 6, 9))}, true},
		{opCase{name: "output batch stride", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 6, OutputBatchStrideAttr: 5*8*9 + 13},
			in: shapes(sh(2, 6, 8, 9), sh(6, 1, 3, 3), sh(6), sh(5, 6, 1, 1), sh(5), sh(2, 5, 8, 9)), out: shapes(sh(2, 5, 8, 9))}, true},
		{opCase{name: "dilated", attrs: Attrs{"pads": []int{2, 2, 2, 2}, "dilations": []int{2, 2}, "group": 5},
			in: shapes(sh(1, 5, 9, 10), sh(5, 1, 3, 3), sh(5), sh(7, 5, 1, 1), sh(7)), out: shapes(sh(1, 7, 9, 10))}, false},
		{opCase{name: "narrow rows", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 4},
			in: shapes(sh(1, 4, 5, 3), sh(4, 1, 3, 3), sh(4), sh(3, 4, 1, 1), sh(3)), out: shapes(sh(1, 3, 5, 3))}, false},
	}
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256}
	for _, tc := range cases {
		c := tc.c
		c.typ = DepthwisePointwiseType
		ins := c.inputs()
		for _, i := range c.omit {
			c.in[i] = nil
		}
		want, err := dwpwOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		for _, dev := range []DeviceInfo{env.dev, gpu} {
			plan, err := dwpwOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			tiled := plan.Launches[0].Kernel == "dwpw"
			if tiled != (tc.tiled && !dev.IsGPU) {
				t.Errorf("%s (GPU %v): runs %s", c.name, dev.IsGPU, plan.Launches[0].Kernel)
			}
			devIn := placeholders(t, plan, ins, c.omit)
			got, err := RunPlan(env.ctx, q, plan, devIn, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, c.name+" "+plan.Launches[0].Kernel, got[0], want[0])
		}
	}

	// Inputs that are not a depthwise and a 1×1 convolution are refused by name.
	bad := []struct {
		attrs Attrs
		in    [][]int
		want  string
	}{
		{Attrs{"group": 2}, shapes(sh(1, 4, 5, 5), sh(4, 2, 3, 3), nil, sh(3, 4, 1, 1)), "group = input channels"},
		{Attrs{"group": 4}, shapes(sh(1, 4, 5, 5), sh(4, 1, 3, 3), nil, sh(3, 4, 3, 3)), "1×1"},
		{Attrs{"group": 4}, shapes(sh(1, 4, 5, 5), sh(4, 1, 3, 3), nil, sh(3, 5, 1, 1)), "1×1 half"},
		{Attrs{"group": 4}, shapes(sh(1, 4, 5, 5), sh(4, 1, 3, 3)), "4 to 6"},
	}
	for _, b := range bad {
		if _, err := (dwpwOp{}).OutputShapes(b.attrs, b.in); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v: error %v, want one naming %q", b.in, err, b.want)
		}
	}
}

// mergeAttrs is a with more's attributes added (more winning), as a new map.
func mergeAttrs(a, more Attrs) Attrs {
	out := Attrs{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// BenchmarkDepthwisePointwiseCPU compares the fused depthwise + 1×1 layer with the two
// convolutions' own plans (sub-benchmarks "dw" and "pw", whose times add up to the
// peer) on MobileNetV2's first block at batch 16: 32 channels on 112×112, 3×3, then
// 32 → 16. GFLOP/s counts the pair's work.
func BenchmarkDepthwisePointwiseCPU(b *testing.B) {
	env := deviceEnvB(b)
	clip := Attrs{DepthwiseActivationAttr: ActClip, DepthwiseMinAttr: float32(0), DepthwiseMaxAttr: float32(6)}
	const n, c, hw, m = 16, 32, 112, 16
	attrs := mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "group": c})
	in := shapes(sh(n, c, hw, hw), sh(c, 1, 3, 3), sh(c), sh(m, c, 1, 1), sh(m))
	out := shapes(sh(n, m, hw, hw))
	flops := 2.0 * float64(n*hw*hw*c*(9+m))
	fused, err := dwpwOp{}.Plan(attrs, in, out, env.dev)
	if err != nil {
		b.Fatal(err)
	}
	benchPlans(b, env, "32_112_16", []namedPlan{{"fused", fused}}, opCase{name: "f", in: in}.inputs(), out, flops)
	mid := shapes(sh(n, c, hw, hw))
	dwAttrs := Attrs{"pads": []int{1, 1, 1, 1}, "group": c, FusedActivationAttr: ActClip, FusedMinAttr: float32(0), FusedMaxAttr: float32(6)}
	dw, err := convOp{}.Plan(dwAttrs, in[:3], mid, env.dev)
	if err != nil {
		b.Fatal(err)
	}
	benchPlans(b, env, "32_112_16", []namedPlan{{"dw", dw}}, opCase{name: "d", in: in[:3]}.inputs(), mid, flops)
	pwIn := append(shapes(mid[0]), in[3:]...)
	pw, err := convOp{}.Plan(Attrs{}, pwIn, out, env.dev)
	if err != nil {
		b.Fatal(err)
	}
	benchPlans(b, env, "32_112_16", []namedPlan{{"pw", pw}}, opCase{name: "p", in: pwIn}.inputs(), out, flops)
}
