package builtinkernels

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// halfTolerance bounds a half plan's error against the reference, relative to the
// output's largest magnitude: half keeps 11 significant bits, rounded at each store.
const halfTolerance = 1e-2

// compareHalf checks got against want within halfTolerance of max |want|.
func compareHalf(t *testing.T, what string, got, want *HostTensor) {
	t.Helper()
	if len(got.Data) != len(want.Data) {
		t.Fatalf("%s: %d values, want %d", what, len(got.Data), len(want.Data))
	}
	var d, ref float64
	for i := range want.Data {
		d = math.Max(d, math.Abs(float64(got.Data[i])-float64(want.Data[i])))
		ref = math.Max(ref, math.Abs(float64(want.Data[i])))
	}
	if r := d / math.Max(ref, 1e-30); r > halfTolerance || math.IsNaN(r) {
		t.Errorf("%s: half storage against the reference: max error %.3g of max %.3g (%.3g relative), want ≤ %g", what, d, ref, r, halfTolerance)
	}
}

// runHalf runs a half plan (every input and output held as half, unless st says
// otherwise) against op's reference.
func runHalf(t *testing.T, env *testEnv, c opCase, plan *Plan, st *Storage) {
	t.Helper()
	if !IsHalfPlan(plan) || !strings.Contains(plan.Source, "#define DATA_T half") {
		t.Fatalf("%s %s: not a half plan", c.typ, c.name)
	}
	op, _ := Lookup(c.typ)
	in := c.inputs()
	want, err := op.Reference(c.attrs, in, c.out)
	if err != nil {
		t.Fatalf("%s %s: Reference: %v", c.typ, c.name, err)
	}
	q := mustQueue(t, env)
	storage := PlanStorage(plan, len(in), len(c.out))
	if st != nil {
		storage = *st
	}
	got, err := RunPlanStored(env.ctx, q, plan, placeholders(t, plan, in, c.omit), c.out, storage)
	if err != nil {
		t.Fatalf("%s %s: %v", c.typ, c.name, err)
	}
	for i := range want {
		compareHalf(t, fmt.Sprintf("%s %s (%s) output %d", c.typ, c.name, plan.Launches[0].Kernel, i), got[i], want[i])
	}
}

// TestHalfPlansMatchReference runs the half plan of every case of the op harness whose
// op stores half.
func TestHalfPlansMatchReference(t *testing.T) {
	env := deviceEnv(t)
	ran := map[string]bool{}
	for _, c := range opCases {
		op, _ := Lookup(c.typ)
		hs, ok := op.(HalfStorer)
		if !ok {
			continue
		}
		for _, dev := range []DeviceInfo{env.dev, {IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256}} {
			plan, ok, err := hs.PlanHalf(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s %s: PlanHalf: %v", c.typ, c.name, err)
			}
			if !ok {
				continue
			}
			ran[c.typ] = true
			runHalf(t, env, c, plan, nil)
		}
	}
	for _, typ := range []string{"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat", "Relu", "Clip", "Add", "Gemm", "MatMul", "Softmax",
		"Transpose", "Slice", "Split", "Expand", "Tile", "DepthToSpace", "LayerNormalization"} {
		if !ran[typ] {
			t.Errorf("no case ran %s's half plan", typ)
		}
	}
}

// TestHalfFusedBlocks runs the CPU block kernels with half storage: the inverted
// residual's tiled kernels (pwdw, pwdwp, pwdwr), the fire module and a Conv with its
// MaxPool, with x held as float too (ReadInputAsFloat).
func TestHalfFusedBlocks(t *testing.T) {
	env := deviceEnv(t)
	blockClip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	block := opCase{typ: opspec.InvertedResidualType, name: "block s1 residual", gen: "rwrwrrrr", attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 20}),
		in: shapes(sh(2, 8, 9, 11), sh(20, 8, 1, 1), sh(20), sh(20, 1, 3, 3), sh(20), sh(8, 20, 1, 1), sh(8), sh(2, 8, 9, 11)), out: shapes(sh(2, 8, 9, 11))}
	stem := opCase{typ: opspec.InvertedResidualType, name: "stem s2 then depthwise", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 24,
		opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3}, opspec.ExpansionWindowPrefix + "strides": []int{2, 2}, opspec.ExpansionWindowPrefix + "pads": []int{1, 1, 1, 1}},
		in: shapes(sh(2, 3, 17, 21), sh(24, 3, 3, 3), sh(24), sh(24, 1, 3, 3), sh(24)), out: shapes(sh(2, 24, 9, 11))}
	for _, tile := range []*invResTile{
		nil,
		{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 3},
		{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 9, groupRows: 3, projChannels: 5, projPixels: 1},
		{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 2, groupRows: 2, projChannels: 16, projPixels: 3, outLanes: true, claimGroups: true},
	} {
		plan, err := invResOp{}.planStored(block.attrs, block.in, block.out, env.dev, tile, true)
		if err != nil {
			t.Fatalf("%+v: %v", tile, err)
		}
		if plan == nil && tile == nil {
			t.Log("no tiled kernel for this device: the plain launches, which store float")
			continue
		}
		runHalf(t, env, block, halfPlan(plan, env.dev), nil)
	}
	// The stem reading a float graph input, with the tile of the device's vector width.
	tile := invResTile{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 3}
	plan, err := invResOp{}.planStored(stem.attrs, stem.in, stem.out, env.dev, &tile, true)
	if err != nil {
		t.Fatalf("stem: %v", err)
	}
	plan = halfPlan(plan, env.dev)
	runHalf(t, env, stem, plan, nil)
	floatX, ok := ReadInputAsFloat(plan)
	if !ok {
		t.Fatal("the stem block cannot read a float x")
	}
	st := PlanStorage(plan, len(stem.in), 1)
	st.Inputs[0] = false
	runHalf(t, env, stem, floatX, &st)

	relu := Attrs{"pads": []int{1, 1, 1, 1}, opspec.SqueezeActivationAttr: opspec.ActRelu, opspec.Expand1ActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu}
	fire := opCase{typ: opspec.FireType, name: "squeezenet-like", gen: "wrrrrrr", attrs: relu,
		in: shapes(sh(2, 12, 9, 11), sh(6, 12, 1, 1), sh(6), sh(10, 6, 1, 1), sh(10), sh(13, 6, 3, 3), sh(13)), out: shapes(sh(2, 23, 9, 11))}
	if plan, ok, err := (fireOp{}).PlanHalf(fire.attrs, fire.in, fire.out, env.dev); err != nil || !ok {
		t.Fatalf("fire: %v %v", ok, err)
	} else {
		runHalf(t, env, fire, plan, nil)
	}

	pooled := opCase{typ: "Conv", name: "stem with its max pool", attrs: Attrs{"strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu,
		opspec.FusedMaxPoolPrefix + "kernel_shape": []int{3, 3}, opspec.FusedMaxPoolPrefix + "strides": []int{2, 2}, opspec.FusedMaxPoolPrefix + "ceil_mode": 1},
		in: shapes(sh(2, 3, 23, 23), sh(8, 3, 3, 3), sh(8)), out: shapes(sh(2, 8, 5, 5))}
	plan, ok, err = convOp{}.PlanHalf(pooled.attrs, pooled.in, pooled.out, env.dev)
	if err != nil || !ok || plan.Launches[0].Kernel != "conv2d_maxpool" {
		t.Fatalf("conv with max pool: %v %v", ok, err)
	}
	runHalf(t, env, pooled, plan, nil)
}

// TestConvertAround runs a float plan between half tensors and a half plan whose output
// the host holds as float, through the conversions ConvertAround adds.
func TestConvertAround(t *testing.T) {
	env := deviceEnv(t)
	c := opCase{typ: "Add", name: "broadcast", in: shapes(sh(2, 3, 4), sh(3, 1)), out: shapes(sh(2, 3, 4))}
	op, _ := Lookup("Add")
	float, err := op.Plan(c.attrs, c.in, c.out, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := ConvertAround(float, false, []Conversion{{Index: 0, Elements: 24}, {Index: 1, Elements: 3}}, []Conversion{{Index: 0, Elements: 24}}, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	half := Storage{Inputs: []bool{true, true}, Outputs: []bool{true}}
	runConverted(t, env, c, conv, half)

	hp, _, err := op.(HalfStorer).PlanHalf(c.attrs, c.in, c.out, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	conv, err = ConvertAround(hp, true, []Conversion{{Index: 1, Elements: 3}}, []Conversion{{Index: 0, Elements: 24}}, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	runConverted(t, env, c, conv, Storage{Inputs: []bool{true, false}, Outputs: []bool{false}})
}

func runConverted(t *testing.T, env *testEnv, c opCase, plan *Plan, st Storage) {
	t.Helper()
	op, _ := Lookup(c.typ)
	in := c.inputs()
	want, _ := op.Reference(c.attrs, in, c.out)
	got, err := RunPlanStored(env.ctx, mustQueue(t, env), plan, in, c.out, st)
	if err != nil {
		t.Fatal(err)
	}
	compareHalf(t, c.name, got[0], want[0])
}

// TestHalfImplicitGemm runs conv_gpu.cl's implicit GEMM with half storage over tiles,
// K splits and the tap-major packing, on the test device as a GPU would run it.
func TestHalfImplicitGemm(t *testing.T) {
	env := deviceEnv(t)
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256, LocalMemBytes: 48 << 10}
	for _, c := range []opCase{
		{typ: "Conv", name: "3x3 residual relu", gen: "rrrr", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu},
			in: shapes(sh(2, 32, 9, 9), sh(24, 32, 3, 3), sh(24), sh(2, 24, 9, 9)), out: shapes(sh(2, 24, 9, 9))},
		{typ: "Conv", name: "1x1 deep", in: shapes(sh(1, 256, 5, 5), sh(16, 256, 1, 1), sh(16)), out: shapes(sh(1, 16, 5, 5))},
		{typ: "Conv", name: "grouped s2", attrs: Attrs{"group": 2, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}},
			in: shapes(sh(1, 8, 11, 11), sh(6, 4, 3, 3)), out: shapes(sh(1, 6, 6, 6))},
	} {
		g, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		g.half = true
		plans, err := gemmCandidates(g, false, gpu)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, plan := range plans {
			if len(plan.Launches) == 0 || plan.Launches[len(plan.Launches)-1].Kernel == "" || strings.Contains(plan.Source, "mma") {
				continue
			}
			kinds[fmt.Sprintf("splitk %v tapmajor %v", len(plan.Launches) > 1, len(plan.Setup) > 0)] = true
			runHalf(t, env, c, halfPlan(plan, env.dev), nil)
		}
		t.Logf("%s: %d plans (%v)", c.name, len(plans), kinds)
	}
}

// TestCPUConvCandidatesHalf runs every CPU convolution candidate that stores through the
// macros (conv_cpu.cl's tiles, with and without conv_pad's copy, window_cpu.cl's rows,
// Winograd, fc_vec) with half storage against the reference: residuals, activations,
// strides, the row widths of each pixel tile, a float graph input (X_FLOAT) and
// conv2d_maxpool.
func TestCPUConvCandidatesHalf(t *testing.T) {
	env := cpuPlanning(t)
	relu := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
	cases := []opCase{
		{typ: "Conv", name: "3x3 s1 residual", gen: "rwrr", attrs: mergeAttrs(relu, Attrs{"pads": []int{1, 1, 1, 1}}),
			in: shapes(sh(1, 20, 9, 21), sh(40, 20, 3, 3), sh(40), sh(1, 40, 9, 21)), out: shapes(sh(1, 40, 9, 21))},
		{typ: "Conv", name: "3x3 s2 width 7", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}},
			in: shapes(sh(2, 16, 14, 14), sh(48, 16, 3, 3), sh(48)), out: shapes(sh(2, 48, 7, 7))},
		{typ: "Conv", name: "7x7 s2 stem", attrs: Attrs{"pads": []int{3, 3, 3, 3}, "strides": []int{2, 2}},
			in: shapes(sh(1, 3, 30, 30), sh(16, 3, 7, 7), sh(16)), out: shapes(sh(1, 16, 15, 15))},
		{typ: "Conv", name: "3x3 s2 three channels", attrs: mergeAttrs(relu, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}}),
			in: shapes(sh(1, 3, 23, 29), sh(16, 3, 3, 3), sh(16)), out: shapes(sh(1, 16, 12, 15))},
		{typ: "Conv", name: "3x3 s1 28x28", attrs: mergeAttrs(relu, Attrs{"pads": []int{1, 1, 1, 1}}),
			in: shapes(sh(1, 32, 28, 28), sh(32, 32, 3, 3), sh(32)), out: shapes(sh(1, 32, 28, 28))},
		{typ: "Conv", name: "1x1 unpadded", in: shapes(sh(1, 24, 5, 13), sh(33, 24, 1, 1)), out: shapes(sh(1, 33, 5, 13))},
		{typ: "Conv", name: "3x3 grouped", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 2},
			in: shapes(sh(1, 16, 6, 10), sh(32, 8, 3, 3), sh(32)), out: shapes(sh(1, 32, 6, 10))},
	}
	ran := map[string]bool{}
	for _, c := range cases {
		g, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		g.half = true
		plans, err := cpuConvCandidatePlans(g, env.dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plans {
			if !storesThroughMacros(p) {
				continue
			}
			kernel := p.Launches[len(p.Launches)-1].Kernel
			ran[kernel] = true
			kc := c
			kc.name += " " + kernel
			runHalfAndFloatX(t, env, kc, halfPlan(p, env.dev))
		}
	}
	// fc_vec and gemm_vec convert 8 channels at a time and the rest one by one.
	fc := opCase{typ: "Gemm", name: "fc", attrs: Attrs{"transB": 1}, in: shapes(sh(3, 43), sh(21, 43), sh(21)), out: shapes(sh(3, 21))}
	p, ok, err := gemmOp{}.PlanHalf(fc.attrs, fc.in, fc.out, env.dev)
	if err != nil || !ok || p.Launches[0].Kernel != "fc_vec" {
		t.Fatalf("Gemm: %v %v, %v", ok, err, p.Launches)
	}
	runHalf(t, env, fc, p, nil)
	bmm := opCase{typ: "MatMul", name: "batched", in: shapes(sh(2, 3, 5, 19), sh(2, 3, 19, 21)), out: shapes(sh(2, 3, 5, 21))}
	p, ok, err = matmulOp{}.PlanHalf(nil, bmm.in, bmm.out, env.dev)
	if err != nil || !ok || p.Launches[0].Kernel != "gemm_vec" {
		t.Fatalf("MatMul: %v %v, %v", ok, err, p.Launches)
	}
	runHalf(t, env, bmm, p, nil)
	for _, k := range []string{"conv2d_vec", "conv2d_window", "wino"} {
		if !ran[k] {
			t.Errorf("no case ran %s with half storage", k)
		}
	}
	pooled := opCase{typ: "Conv", name: "3x3 with its max pool", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu,
		opspec.FusedMaxPoolPrefix + "kernel_shape": []int{3, 3}, opspec.FusedMaxPoolPrefix + "strides": []int{2, 2}, opspec.FusedMaxPoolPrefix + "pads": []int{1, 1, 1, 1}},
		in: shapes(sh(1, 3, 20, 20), sh(24, 3, 3, 3), sh(24)), out: shapes(sh(1, 24, 10, 10))}
	gp, _ := convOp{}.geometry(pooled.attrs, pooled.in)
	gp.half = true
	mp, ok, err := cpuConvMaxPoolPlan(gp, heuristicCPUTile(gp, env.dev), env.dev)
	if err != nil || !ok {
		t.Fatalf("conv2d_maxpool: %v %v", ok, err)
	}
	runHalf(t, env, pooled, halfPlan(mp, env.dev), nil)
}

// TestCPU1x1Half runs conv1x1_cpu.cl's GEMM with half storage: plain, strided (its
// subsampled copy held as half), with a residual, and with the folded
// GlobalAveragePool (POOL_AVG), x held as float too where the plan can read it so.
func TestCPU1x1Half(t *testing.T) {
	env := cpuPlanning(t)
	relu := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
	cases := []opCase{
		{typ: "Conv", name: "1x1", attrs: relu, in: shapes(sh(2, 24, 9, 13), sh(40, 24, 1, 1), sh(40)), out: shapes(sh(2, 40, 9, 13))},
		{typ: "Conv", name: "1x1 residual", gen: "rwrr", in: shapes(sh(1, 16, 12, 12), sh(16, 16, 1, 1), sh(16), sh(1, 16, 12, 12)), out: shapes(sh(1, 16, 12, 12))},
		{typ: "Conv", name: "1x1 s2", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(1, 16, 14, 14), sh(32, 16, 1, 1)), out: shapes(sh(1, 32, 7, 7))},
		{typ: "Conv", name: "1x1 pooled", attrs: mergeAttrs(relu, Attrs{opspec.FusedGlobalAveragePoolAttr: 1}),
			in: shapes(sh(2, 32, 7, 7), sh(48, 32, 1, 1), sh(48)), out: shapes(sh(2, 48, 1, 1))},
	}
	for _, c := range cases {
		g, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		g.half = true
		plan, err := cpu1x1Plan(g, heuristic1x1Tile(g, env.dev), env.dev)
		if err != nil {
			t.Fatal(err)
		}
		runHalfAndFloatX(t, env, c, halfPlan(plan, env.dev))
	}
}

// runHalfAndFloatX runs a half plan with every tensor held as half, then with x held as
// float where the plan can read it so (ReadInputAsFloat).
func runHalfAndFloatX(t *testing.T, env *testEnv, c opCase, plan *Plan) {
	t.Helper()
	runHalf(t, env, c, plan, nil)
	if fx, ok := ReadInputAsFloat(plan); ok {
		st := PlanStorage(plan, len(c.in), 1)
		st.Inputs[0] = false
		c.name += " float x"
		runHalf(t, env, c, fx, &st)
	}
}

// cpuPlanning is the test device's environment with plans made as for a CPU device: the
// CPU kernels are portable OpenCL, so they run, and are checked, on a GPU too.
func cpuPlanning(t *testing.T) *testEnv {
	env := *deviceEnv(t)
	env.dev.IsGPU = false
	return &env
}
