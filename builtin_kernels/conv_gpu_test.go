package builtinkernels

import (
	"fmt"
	"slices"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestConvGPUPlan runs the implicit-GEMM conv (the GPU path) on the test device against
// the CPU reference, over the tile configurations and the split-K path: the device facts
// are varied so that every branch of the plan is taken whatever device runs the test.
func TestConvGPUPlan(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	cases := []opCase{
		{name: "3x3 pad1", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 8, 9, 7), sh(16, 8, 3, 3), sh(16)), out: shapes(sh(1, 16, 9, 7))},
		{name: "1x1 nobias", attrs: Attrs{}, in: shapes(sh(2, 12, 5, 6), sh(20, 12, 1, 1)), out: shapes(sh(2, 20, 5, 6))},
		{name: "1x1 stride2", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(1, 6, 7, 7), sh(10, 6, 1, 1), sh(10)), out: shapes(sh(1, 10, 4, 4))},
		{name: "7x7 s2 p3", attrs: Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}}, in: shapes(sh(1, 3, 17, 15), sh(8, 3, 7, 7), sh(8)), out: shapes(sh(1, 8, 9, 8))},
		{name: "group2 dil2", attrs: Attrs{"group": 2, "dilations": []int{2, 2}, "pads": []int{0, 1, 2, 1}}, in: shapes(sh(1, 4, 9, 9), sh(6, 2, 3, 3), sh(6)), out: shapes(sh(1, 6, 7, 7))},
		{name: "relu residual", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(1, 8, 6, 5), sh(8, 8, 3, 3), sh(8), sh(1, 8, 6, 5)), out: shapes(sh(1, 8, 6, 5))},
		{name: "clip nobias residual", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(0.5)}, in: shapes(sh(1, 20, 3, 3), sh(24, 20, 1, 1), nil, sh(1, 24, 3, 3)), out: shapes(sh(1, 24, 3, 3))},
		{name: "deep K", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 64, 4, 4), sh(40, 64, 3, 3), sh(40)), out: shapes(sh(1, 40, 4, 4))},
	}
	devs := []DeviceInfo{
		{IsGPU: true, ComputeUnits: 1, MaxWorkGroupSize: 256},   // big tiles where they fit
		{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 256}, // small tiles and split K
		{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 64},    // only 64-item groups
	}
	sw := newSweep(t, len(devs), 1)
	for ci, c := range cases {
		ins := c.inputs()
		want, err := convOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		for _, di := range sw.pick(ci) {
			dev := devs[di]
			geo, err := convOp{}.geometry(c.attrs, c.in)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := convGPUPlan(geo, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s dev %d: %v", c.name, di, err)
			}
			compare(t, fmt.Sprintf("%s dev %d (%d launches)", c.name, di, len(plan.Launches)), got[0], want[0])
		}
	}
}

// TestGemmGPUPlan: fully connected layers through the implicit-GEMM kernel, both weight
// layouts, with and without bias and activation, against the Gemm reference.
func TestGemmGPUPlan(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	cases := []opCase{
		{name: "linear", attrs: Attrs{"transB": 1}, in: shapes(sh(3, 70), sh(33, 70), sh(33)), out: shapes(sh(3, 33))},
		{name: "kn relu", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 50), sh(50, 17)), out: shapes(sh(2, 17))},
		{name: "bias 1xN", attrs: Attrs{"transB": 1}, in: shapes(sh(5, 300), sh(9, 300), sh(1, 9)), out: shapes(sh(5, 9))},
	}
	devs := []DeviceInfo{{IsGPU: true, ComputeUnits: 1, MaxWorkGroupSize: 256}, {IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 256}}
	sw := newSweep(t, len(devs), 1)
	for ci, c := range cases {
		ins := c.inputs()
		want, err := gemmOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, di := range sw.pick(ci) {
			dev := devs[di]
			plan, err := gemmOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if plan.Launches[0].Kernel != "conv_gemm" {
				t.Fatalf("%s: planned %s, want the implicit-GEMM kernel", c.name, plan.Launches[0].Kernel)
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s (%d launches)", c.name, len(plan.Launches)), got[0], want[0])
		}
	}
}

// TestConvCandidatesAllCorrect: every plan the tuner may pick computes the same conv.
func TestConvCandidatesAllCorrect(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	c := opCase{name: "cands", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu},
		in: shapes(sh(1, 24, 6, 6), sh(40, 24, 3, 3), sh(40)), out: shapes(sh(1, 40, 6, 6))}
	ins := c.inputs()
	want, err := convOp{}.Reference(c.attrs, ins, c.out)
	if err != nil {
		t.Fatal(err)
	}
	dev := DeviceInfo{IsGPU: true, ComputeUnits: 64, MaxWorkGroupSize: 256}
	cands, err := convOp{}.Candidates(c.attrs, c.in, c.out, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) < 5 {
		t.Fatalf("%d candidates, want several tile configurations", len(cands))
	}
	first, _ := convOp{}.Plan(c.attrs, c.in, c.out, dev)
	if cands[0].Source != first.Source {
		t.Error("the first candidate is not the plan Plan returns")
	}
	for i, p := range cands {
		if i >= 2 && !fullSweeps {
			break // TestGemmTilesAllCorrect runs every tile; all the candidates under make test-full
		}
		got, err := RunPlan(env.ctx, q, p, ins, c.out)
		if err != nil {
			t.Fatalf("candidate %d: %v", i, err)
		}
		compare(t, fmt.Sprintf("candidate %d (%v)", i, p.Launches[0].Local), got[0], want[0])
	}
}

// TestGemmTilesAllCorrect runs every tile configuration, the heuristic's and the
// tuner's, in both weight layouts, on shapes that leave partial tiles in M, in the
// pixels and in K, with and without a K split, against the references. The tile lists
// are what conv_gpu.cl's float4 reads and loading loops assume, so each is checked
// valid first.
func TestGemmTilesAllCorrect(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	// K: 20 input channels, a multiple of no TK; 32, a multiple of every TK; the FC's 150.
	// Under oclgrind, for time, shallower K of the same kinds (4, 16, 40): every tile still
	// ends in partial K slices, M and N tiles.
	cin, tapCin, fcK := 20, 32, 150
	if simulated {
		cin, tapCin, fcK = 4, 16, 40
	}
	conv := opCase{name: "conv", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu},
		in: shapes(sh(1, cin, 13, 11), sh(136, cin, 3, 3), sh(136), sh(1, 136, 13, 11)), out: shapes(sh(1, 136, 13, 11))}
	// tapCin channels, a multiple of every TK: K runs tap-major (packed weights), with a
	// stride and asymmetric padding so that whole slices fall in the padding.
	tap := opCase{name: "tap-major conv", attrs: Attrs{"pads": []int{2, 0, 1, 2}, "strides": []int{2, 1}},
		in: shapes(sh(2, tapCin, 9, 7), sh(40, tapCin, 3, 3), sh(40)), out: shapes(sh(2, 40, 5, 7))}
	type convCase struct {
		c    opCase
		in   []*HostTensor
		want []*HostTensor
		geo  convGeom
	}
	var convs []convCase
	for _, c := range []opCase{conv, tap} {
		in := c.inputs()
		want, err := convOp{}.Reference(c.attrs, in, c.out)
		if err != nil {
			t.Fatal(err)
		}
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		convs = append(convs, convCase{c, in, want, geo})
	}
	fc := opCase{name: "fc", attrs: Attrs{}, in: shapes(sh(67, fcK), sh(fcK, 131), sh(131)), out: shapes(sh(67, 131))}
	fcIn := fc.inputs()
	fcWant, err := gemmOp{}.Reference(fc.attrs, fcIn, fc.out)
	if err != nil {
		t.Fatal(err)
	}
	fcGeo, err := gemmOp{}.geometry(fc.attrs, fc.in)
	if err != nil {
		t.Fatal(err)
	}
	// The device's own local memory: the planner never offers a tile that exceeds it
	// (oclgrind, for one, has less than the deepest tile needs).
	dev := DeviceInfo{IsGPU: true, ComputeUnits: 4, MaxWorkGroupSize: 256, LocalMemBytes: env.dev.LocalMemBytes}
	// Each tile runs one of the three cases in turn (all three under make test-full).
	tiles := append(append([]gemmTile(nil), gpuTiles...), tunerTiles...)
	sw := newSweep(t, len(convs)+1, 1)
	for i, tile := range tiles {
		if !tile.valid() {
			t.Fatalf("tile %v is not valid for conv_gpu.cl", tile)
		}
		if !tile.fits(dev) {
			t.Logf("tile %v needs %d bytes of local memory, the device has %d", tile, tile.localBytes(), dev.LocalMemBytes)
			continue
		}
		splitK := 1 + 2*(i%2)
		picked := sw.pick(i)
		for ci, cc := range convs {
			if !slices.Contains(picked, ci) {
				continue
			}
			plan, err := implicitGemmTiled(cc.geo, false, tile, splitK, dev)
			if err != nil {
				t.Fatal(err)
			}
			if packs := len(plan.Setup) > 0; packs != (cc.geo.cg%tile.tk == 0) {
				t.Errorf("%s tile %v: weights packed tap-major %v, CG %d", cc.c.name, tile, packs, cc.geo.cg)
			}
			got, err := RunPlan(env.ctx, q, plan, cc.in, cc.c.out)
			if err != nil {
				t.Fatalf("%s tile %v: %v", cc.c.name, tile, err)
			}
			compare(t, fmt.Sprintf("%s tile %v split %d", cc.c.name, tile, splitK), got[0], cc.want[0])
		}

		if !slices.Contains(picked, len(convs)) {
			continue
		}
		plan, err := implicitGemmTiled(gemmAsConv(fcGeo), true, tile, 1, dev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := RunPlan(env.ctx, q, plan, fcIn, fc.out)
		if err != nil {
			t.Fatalf("fc tile %v: %v", tile, err)
		}
		compare(t, fmt.Sprintf("fc K×M weights tile %v", tile), got[0], fcWant[0])
	}
}

// TestGemmHeuristicWideTile: plain matrix products of 128 columns or more take 128×64
// tiles with K split until the work-groups cover the device twice (ViT-B/16's products
// on a 132-unit GPU, at batch 1 and 8); convolutions and narrow products keep the
// earlier choice.
func TestGemmHeuristicWideTile(t *testing.T) {
	t.Parallel()
	h100 := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024, LocalMemBytes: 49152}
	wide := gemmTile{128, 64, 8, 8, 8}
	fc := func(m, k, n int) convGeom { return gemmAsConv(gemmGeom{m: m, k: k, n: n, hasC: true}) }
	cases := []struct {
		name  string
		g     convGeom
		wide  bool
		split int
	}{
		{"qkv b1", fc(197, 768, 2304), true, 4},
		{"mlp out b1", fc(197, 3072, 768), true, 11},
		{"mlp out b8", fc(1576, 3072, 768), true, 2},
		{"mlp in b8", fc(1576, 768, 3072), true, 1},
		{"narrow", fc(197, 768, 64), false, 0},
	}
	for _, c := range cases {
		tile, split := heuristicTile(c.g, h100)
		if (tile == wide) != c.wide || c.wide && split != c.split {
			t.Errorf("%s: tile %v split %d, want 128×64 %v split %d", c.name, tile, split, c.wide, c.split)
		}
	}
	conv, err := convOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}}, shapes(sh(1, 256, 14, 14), sh(256, 256, 3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if tile, _ := heuristicTile(conv, h100); tile == wide {
		t.Errorf("a 3×3 convolution took the products' tile %v", tile)
	}

	// The plan runs: a Linear layer with partial tiles in both directions and K split
	// four ways, against the reference.
	env, q := deviceEnvQueue(t)
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 4, MaxWorkGroupSize: 256, LocalMemBytes: env.dev.LocalMemBytes}
	c := opCase{name: "wide linear", in: shapes(sh(33, 300), sh(300, 130), sh(130)), out: shapes(sh(33, 130))}
	if tile, split := heuristicTile(fc(33, 300, 130), gpu); tile != wide || split != 4 {
		t.Fatalf("%s: tile %v split %d, want 128×64 split 4", c.name, tile, split)
	}
	in := c.inputs()
	want, err := gemmOp{}.Reference(Attrs{}, in, c.out)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gemmOp{}.Plan(Attrs{}, c.in, c.out, gpu)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunPlan(env.ctx, q, plan, in, c.out)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, c.name, got[0], want[0])
}
