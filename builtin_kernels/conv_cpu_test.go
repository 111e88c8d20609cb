package builtinkernels

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/opspec"
)

// timeLaunches builds a plan, runs its setup once and returns the median time of iters
// runs of its launches.
func timeLaunches(t testing.TB, env *testEnv, plan *Plan, ins []*HostTensor, outShapes [][]int, iters int) time.Duration {
	return timeLaunchesBest(t, env, plan, ins, outShapes, iters, nil)
}

// timeLaunchesBest is timeLaunches that also stores the fastest run in fastest (where
// not nil): on a machine shared with other tenants the fastest run is the kernel's own
// speed, the median also the neighbours'.
func timeLaunchesBest(t testing.TB, env *testEnv, plan *Plan, ins []*HostTensor, outShapes [][]int, iters int, fastest *time.Duration) time.Duration {
	q, err := env.ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	prog, err := env.ctx.BuildProgram(plan.Source, plan.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Release()
	var bufs []*cl.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	mk := func(n int) *cl.Buffer {
		b, err := env.ctx.NewBuffer(cl.MemReadWrite, max(n, 4))
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		return b
	}
	var inB, outB, scr []*cl.Buffer
	for _, in := range ins {
		if in == nil {
			inB = append(inB, nil)
			continue
		}
		b := mk(4 * len(in.Data))
		if err := q.Write(b, 0, floatsToBytes(in.Data), nil); err != nil {
			t.Fatal(err)
		}
		inB = append(inB, b)
	}
	for _, s := range outShapes {
		outB = append(outB, mk(4*numel(s)))
	}
	for _, s := range plan.Scratch {
		b := mk(s)
		if err := q.Write(b, 0, make([]byte, s), nil); err != nil {
			t.Fatal(err)
		}
		scr = append(scr, b)
	}
	var ks []*cl.Kernel
	all := append(append([]Launch(nil), plan.Setup...), plan.Launches...)
	for _, l := range all {
		k, err := prog.Kernel(l.Kernel)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Release()
		if err := SetArgs(k, l.Args, Refs(inB), Refs(outB), Refs(scr)); err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	run := func(from int) {
		for i := from; i < len(ks); i++ {
			ev, err := q.EnqueueNDRange(ks[i], all[i].Global, all[i].Local, nil)
			if err != nil {
				t.Fatal(err)
			}
			ev.Release()
		}
		if err := q.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	run(0)
	var ds []time.Duration
	for i := 0; i < max(iters, 1); i++ {
		t0 := time.Now()
		run(len(plan.Setup))
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	if fastest != nil {
		*fastest = ds[0]
	}
	return ds[len(ds)/2]
}

// namedPlan is one plan a conv test runs, with the name its failures report.
type namedPlan struct {
	name string
	plan *Plan
}

// checkConvPlans runs, for each case, the plans that plans returns (given the case's
// index and geometry) against the Conv reference.
func checkConvPlans(t *testing.T, cases []opCase, plans func(ci int, geo convGeom) ([]namedPlan, error)) {
	t.Helper()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	for ci, c := range cases {
		ins := c.inputs()
		want, err := convOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		list, err := plans(ci, geo)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, np := range list {
			got, err := RunPlan(env.ctx, q, np.plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, np.name, err)
			}
			compare(t, c.name+" "+np.name, got[0], want[0])
		}
	}
}

// TestConvCPUPlan runs conv_cpu.cl against the CPU reference over every vector width,
// one and two weight vectors, pixel tiles that do and do not divide the row, channel
// counts that leave a partial tile, groups, strides, dilations, asymmetric padding and
// the fused work, so that each branch of the kernel (inside taps, edge taps, skipped
// rows, the partial last tile) is taken.
func TestConvCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	cases := []opCase{
		{name: "3x3 pad1", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 8, 9, 11), sh(20, 8, 3, 3), sh(20)), out: shapes(sh(1, 20, 9, 11))},
		{name: "1x1 nobias", attrs: Attrs{}, in: shapes(sh(2, 12, 5, 6), sh(36, 12, 1, 1)), out: shapes(sh(2, 36, 5, 6))},
		{name: "1x1 stride2", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(1, 6, 7, 7), sh(10, 6, 1, 1), sh(10)), out: shapes(sh(1, 10, 4, 4))},
		{name: "7x7 s2 p3", attrs: Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}}, in: shapes(sh(1, 3, 17, 15), sh(8, 3, 7, 7), sh(8)), out: shapes(sh(1, 8, 9, 8))},
		{name: "group2 dil2", attrs: Attrs{"group": 2, "dilations": []int{2, 2}, "pads": []int{0, 1, 2, 1}}, in: shapes(sh(1, 4, 9, 9), sh(6, 2, 3, 3), sh(6)), out: shapes(sh(1, 6, 7, 7))},
		{name: "group4 wide", attrs: Attrs{"group": 4, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 16, 5, 13), sh(72, 4, 3, 3), sh(72)), out: shapes(sh(1, 72, 5, 13))},
		{name: "relu residual", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(1, 8, 6, 5), sh(40, 8, 3, 3), sh(40), sh(1, 40, 6, 5)), out: shapes(sh(1, 40, 6, 5))},
		{name: "clip nobias residual", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(0.5)}, in: shapes(sh(1, 20, 3, 3), sh(24, 20, 1, 1), nil, sh(1, 24, 3, 3)), out: shapes(sh(1, 24, 3, 3))},
		{name: "1-D", attrs: Attrs{"pads": []int{2, 1}}, in: shapes(sh(1, 5, 17), sh(9, 5, 4), sh(9)), out: shapes(sh(1, 9, 17))},
	}
	tiles := []cpuConvTile{{4, 1, 3}, {8, 1, 8}, {8, 2, 5}, {16, 1, 7}, {16, 2, 4}, {16, 2, 6}, {16, 3, 7}, {16, 3, 5}, {16, 3, 8}}
	sw := newSweep(t, len(tiles), 1)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, ti := range sw.pick(ci) {
			tile := tiles[ti]
			plan, err := cpuConvPlan(geo, tile, env.dev)
			if err != nil {
				return nil, err
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %v", tile), plan})
		}
		return list, nil
	})
}

// TestConvCPUPaddedCopy runs conv2d_vec over conv_pad's zero-padded copy of the input
// (windows above 3 × 3 with padding) against the CPU reference: asymmetric padding,
// strides, a dilation, groups, a 1-D window, several rows per work-item, and pixel tiles
// whose last one reaches past the output's width (the padded plane must hold its reads).
// A 3 × 3 window keeps its in-place edge checks and launches no copy.
func TestConvCPUPaddedCopy(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	cases := []opCase{
		{name: "7x7 s2 p3", attrs: Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 3, 17, 15), sh(20, 3, 7, 7), sh(20)), out: shapes(sh(2, 20, 9, 8))},
		{name: "5x5 asymmetric", attrs: Attrs{"pads": []int{2, 1, 1, 2}}, in: shapes(sh(1, 4, 9, 6), sh(8, 4, 5, 5)), out: shapes(sh(1, 8, 8, 5))},
		{name: "4x4 s2 group2", attrs: Attrs{"group": 2, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(2, 4, 10, 9), sh(6, 2, 4, 4), sh(6)), out: shapes(sh(2, 6, 5, 4))},
		{name: "5x5 dil2 residual", attrs: Attrs{"dilations": []int{2, 2}, "pads": []int{4, 4, 4, 4}}, in: shapes(sh(1, 3, 8, 11), sh(17, 3, 5, 5), sh(17), sh(1, 17, 8, 11)), out: shapes(sh(1, 17, 8, 11))},
		{name: "1-D 11", attrs: Attrs{"pads": []int{5, 5}}, in: shapes(sh(1, 5, 17), sh(9, 5, 11), sh(9)), out: shapes(sh(1, 9, 17))},
	}
	runs := []vecRun{{cpuConvTile{16, 2, 3}, 1}, {cpuConvTile{8, 1, 8}, 3}, {cpuConvTile{16, 1, 7}, 1}}
	sw := newSweep(t, len(runs), 1)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		return rowsPlans(geo, pickRuns(runs, sw.pick(ci)), env.dev, func(plan *Plan) error {
			if len(plan.Launches) != 2 || plan.Launches[0].Kernel != "conv_pad" {
				return fmt.Errorf("launches %v, want conv_pad then conv2d_vec", plan.Launches)
			}
			return nil
		})
	})
	geo, err := convOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}}, shapes(sh(1, 8, 9, 11), sh(20, 8, 3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := cpuConvPlan(geo, cpuConvTile{16, 1, 7}, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Launches) != 1 {
		t.Errorf("3x3 pad 1: launches %v, want conv2d_vec alone", plan.Launches)
	}
}

// TestConvCPURowsPlan runs conv2d_vec with several output rows per work-item (RPW)
// against the CPU reference: input channels in chunks of vecChannelChunk with a partial
// last one (150 = 64 + 64 + 22) and a single one (20), bands of rows that do and do not
// divide the plane, tiles stored whole (16 lanes, transposed in registers) and through
// private memory (8 lanes, a partial channel tile), a window, a residual and an
// activation.
func TestConvCPURowsPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	relu := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
	cases := []opCase{
		{name: "1x1 150 ch", attrs: relu, in: shapes(sh(2, 150, 7, 7), sh(40, 150, 1, 1), sh(40), sh(2, 40, 7, 7)), out: shapes(sh(2, 40, 7, 7))},
		{name: "1x1 20 ch", attrs: Attrs{}, in: shapes(sh(1, 20, 5, 6), sh(32, 20, 1, 1), sh(32)), out: shapes(sh(1, 32, 5, 6))},
		{name: "3x3 pad1 70 ch", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 70, 6, 5), sh(24, 70, 3, 3)), out: shapes(sh(1, 24, 6, 5))},
	}
	runs := []vecRun{{cpuConvTile{16, 2, 7}, 3}, {cpuConvTile{16, 1, 4}, 7}, {cpuConvTile{8, 2, 5}, 2}}
	sw := newSweep(t, len(runs), 1)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		return rowsPlans(geo, pickRuns(runs, sw.pick(ci)), env.dev, nil)
	})
}

// pickRuns is the runs at the given indices.
func pickRuns(runs []vecRun, idx []int) []vecRun {
	out := make([]vecRun, len(idx))
	for i, k := range idx {
		out[i] = runs[k]
	}
	return out
}

// vecRun is one conv2d_vec plan a test runs: a tile and its output rows per work-item.
type vecRun struct {
	tile cpuConvTile
	rows int
}

// rowsPlans plans conv2d_vec over geo for each run; check, where not nil, vets each
// plan before it runs.
func rowsPlans(geo convGeom, runs []vecRun, dev DeviceInfo, check func(*Plan) error) ([]namedPlan, error) {
	var list []namedPlan
	for _, r := range runs {
		plan, err := cpuConvRowsPlan(geo, r.tile, r.rows, dev)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(plan); err != nil {
				return nil, fmt.Errorf("tile %v rows %d: %w", r.tile, r.rows, err)
			}
		}
		list = append(list, namedPlan{fmt.Sprintf("tile %v rows %d", r.tile, r.rows), plan})
	}
	return list, nil
}

// TestVecRows: conv2d_vec takes whole planes per work-item for 1×1 layers on planes of
// under 128 pixels with four work-items per compute unit left, one row elsewhere.
func TestVecRows(t *testing.T) {
	dev := DeviceInfo{FloatVectorWidth: 16, ComputeUnits: 16}
	tile := cpuConvTile{16, 2, 7}
	for _, c := range []struct {
		name string
		in   [][]int
		want int
	}{
		{"7x7 b16 160 out", shapes(sh(16, 960, 7, 7), sh(160, 960, 1, 1)), 7}, // 16 × 5 tiles = 80 items
		{"7x7 b1 1280 out", shapes(sh(1, 320, 7, 7), sh(1280, 320, 1, 1)), 1}, // 40 items
		{"7x7 b2 1280 out", shapes(sh(2, 320, 7, 7), sh(1280, 320, 1, 1)), 7}, // 80 items
		{"14x14 b16", shapes(sh(16, 576, 14, 14), sh(96, 576, 1, 1)), 1},      // 196 pixels
		{"3x3 7x7 b16", shapes(sh(16, 160, 9, 9), sh(160, 160, 3, 3)), 1},     // not 1×1
		{"1x1 stride 2", shapes(sh(16, 160, 13, 13), sh(320, 160, 1, 1)), 1},  // not plain
	} {
		attrs := Attrs{}
		if c.name == "1x1 stride 2" {
			attrs["strides"] = []int{2, 2}
		}
		geo, err := convOp{}.geometry(attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := vecRows(geo, tile, dev); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.name, got, c.want)
		}
	}
}

// TestConvDepthwiseCPUPlan runs window_cpu.cl's convolution against the CPU reference:
// strides 1, 2 (the row copied as two phases, by vectors and the rest one by one) and 3,
// rows narrower than a vector, rows that end in a partial vector, input columns no
// output reads, dilation, channel multipliers (full and partial channel blocks),
// batches, asymmetric padding, the fused work, and work split into bands of rows or
// grouped several planes per work-item.
func TestConvDepthwiseCPUPlan(t *testing.T) {
	t.Parallel()
	dw := func(groups int, a Attrs) Attrs {
		a["group"] = groups
		return a
	}
	cases := []opCase{
		{name: "s1 p1", attrs: dw(7, Attrs{"pads": []int{1, 1, 1, 1}}), in: shapes(sh(2, 7, 9, 21), sh(7, 1, 3, 3), sh(7)), out: shapes(sh(2, 7, 9, 21))},
		{name: "s1 wide", attrs: dw(3, Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}), in: shapes(sh(1, 3, 6, 37), sh(3, 1, 3, 3), sh(3)), out: shapes(sh(1, 3, 6, 37))},
		{name: "s2 p1 relu", attrs: dw(5, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu}), in: shapes(sh(1, 5, 23, 37), sh(5, 1, 3, 3), sh(5)), out: shapes(sh(1, 5, 12, 19))},
		{name: "s2 even 40", attrs: dw(2, Attrs{"pads": []int{0, 0, 1, 1}, "strides": []int{2, 2}}), in: shapes(sh(3, 2, 10, 40), sh(2, 1, 3, 3), sh(2)), out: shapes(sh(3, 2, 5, 20))},
		{name: "s2 valid unread", attrs: dw(2, Attrs{"strides": []int{2, 2}}), in: shapes(sh(1, 2, 8, 36), sh(2, 1, 3, 3), sh(2)), out: shapes(sh(1, 2, 3, 17))},
		{name: "s3 5x5", attrs: dw(3, Attrs{"pads": []int{2, 2, 2, 2}, "strides": []int{3, 3}}), in: shapes(sh(1, 3, 30, 40), sh(3, 1, 5, 5), sh(3)), out: shapes(sh(1, 3, 10, 14))},
		{name: "narrow residual clip", attrs: dw(4, Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(0.5)}), in: shapes(sh(1, 4, 7, 3), sh(4, 1, 3, 3), sh(4), sh(1, 4, 7, 3)), out: shapes(sh(1, 4, 7, 3))},
		{name: "residual 11 wide", attrs: dw(4, Attrs{"pads": []int{1, 1, 1, 1}}), in: shapes(sh(1, 4, 5, 11), sh(4, 1, 3, 3), nil, sh(1, 4, 5, 11)), out: shapes(sh(1, 4, 5, 11))},
		{name: "dil2 mult2", attrs: dw(3, Attrs{"pads": []int{2, 2, 2, 2}, "dilations": []int{2, 2}}), in: shapes(sh(1, 3, 10, 17), sh(6, 1, 3, 3), sh(6)), out: shapes(sh(1, 6, 10, 17))},
		{name: "mult6 s2", attrs: dw(2, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}}), in: shapes(sh(1, 2, 9, 18), sh(12, 1, 3, 3), sh(12)), out: shapes(sh(1, 12, 5, 9))},
		{name: "1-D", attrs: dw(3, Attrs{"pads": []int{1, 1}}), in: shapes(sh(2, 3, 19), sh(3, 1, 3), sh(3)), out: shapes(sh(2, 3, 19))},
	}
	// Each case runs on three made-up devices: 4 lanes on many compute units (bands of
	// rows), 16 lanes on one unit (several planes per work-item), and 8 lanes on 2.
	devs := []DeviceInfo{{FloatVectorWidth: 4, ComputeUnits: 64}, {FloatVectorWidth: 16, ComputeUnits: 1}, {FloatVectorWidth: 8, ComputeUnits: 2}}
	sw := newSweep(t, len(devs), 1)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, di := range sw.pick(ci) {
			dev := devs[di]
			plan, ok, err := cpuDepthwisePlan(geo, dev)
			if err != nil || !ok {
				return nil, fmt.Errorf("no window plan (%v)", err)
			}
			list = append(list, namedPlan{fmt.Sprintf("width %d units %d", dev.FloatVectorWidth, dev.ComputeUnits), plan})
		}
		return list, nil
	})
	// Rows too long for the private buffer go to the portable kernel.
	long, _ := convOp{}.geometry(Attrs{"group": 2}, shapes(sh(1, 2, 3, 20000), sh(2, 1, 3, 3)))
	if _, ok, _ := cpuDepthwisePlan(long, devs[0]); ok {
		t.Error("a 20000-wide row still gets window_cpu.cl's buffer")
	}
	// MobileNetV2's planes: narrow ones at once or in two steps, wide ones 4 rows at a
	// time; 16 lanes for rows of 16 or more at stride 1 only.
	for oh, want := range map[int]int{3: 3, 7: 7, 14: 7, 28: 4, 56: 4, 112: 4} {
		if got := depthwiseRows(oh); got != want {
			t.Errorf("depthwiseRows(%d) = %d, want %d", oh, got, want)
		}
	}
	avx512 := DeviceInfo{FloatVectorWidth: 16}
	for _, c := range []struct{ hw, s, want int }{{56, 1, 16}, {16, 1, 16}, {14, 1, 8}, {56, 2, 8}, {7, 1, 4}} {
		geo, _ := convOp{}.geometry(dw(2, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{c.s, c.s}}), shapes(sh(1, 2, c.hw, c.hw), sh(2, 1, 3, 3)))
		if got := depthwiseVec(geo, avx512); got != c.want {
			t.Errorf("depthwiseVec(%d wide, stride %d) = %d, want %d", c.hw, c.s, got, c.want)
		}
	}
	if got := depthwiseVec(convGeom{win: window{s: [2]int{1, 1}, out: [2]int{1, 56}}}, DeviceInfo{FloatVectorWidth: 8}); got != 8 {
		t.Errorf("depthwiseVec on 8 lanes = %d, want 8", got)
	}
}

// TestConvWindowCPUPlan runs window_cpu.cl's convolution with several input channels
// per unit (the stems' plan) against the CPU reference: stride 2 with and without
// padding, groups, channel blocks that divide the group's channels or leave a partial
// one, row steps that leave a partial last step, batches, and the fused work; and
// checks that the stems get it as the tuner's second candidate, after the channel
// tiles, while layers with many products per output do not get it.
func TestConvWindowCPUPlan(t *testing.T) {
	t.Parallel()
	cases := []opCase{
		{name: "stem s2", attrs: Attrs{"strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 3, 23, 41), sh(20, 3, 3, 3), sh(20)), out: shapes(sh(2, 20, 11, 20))},
		{name: "stem s2 p1", attrs: Attrs{"strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(0.5)}, in: shapes(sh(1, 3, 18, 18), sh(16, 3, 3, 3), sh(16)), out: shapes(sh(1, 16, 9, 9))},
		{name: "group2 residual", attrs: Attrs{"group": 2, "pads": []int{1, 0, 1, 2}}, in: shapes(sh(1, 4, 7, 12), sh(10, 2, 3, 3), nil, sh(1, 10, 7, 12)), out: shapes(sh(1, 10, 7, 12))},
		{name: "5x5 s1", attrs: Attrs{"pads": []int{2, 2, 2, 2}}, in: shapes(sh(1, 2, 9, 5), sh(8, 2, 5, 5), sh(8)), out: shapes(sh(1, 8, 9, 5))},
	}
	env := deviceEnv(t)
	tiles := [][3]int{{8, 2, 8}, {3, 3, 4}, {16, 1, 4}, {2, 7, 16}}
	sw := newSweep(t, len(tiles), 2)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, ti := range sw.pick(ci) {
			tile := tiles[ti]
			plan, ok, err := cpuWindowConvPlan(geo, tile[0], tile[1], tile[2], env.dev)
			if err != nil || !ok {
				return nil, fmt.Errorf("no window plan (%v)", err)
			}
			list = append(list, namedPlan{fmt.Sprintf("mt %d nr %d vec %d", tile[0], tile[1], tile[2]), plan})
		}
		return list, nil
	})
	for _, c := range []struct {
		attrs  Attrs
		in     [][]int
		window bool
	}{
		{Attrs{"strides": []int{2, 2}}, shapes(sh(1, 3, 224, 224), sh(64, 3, 3, 3)), true},
		{Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}}, shapes(sh(1, 3, 224, 224), sh(64, 3, 7, 7)), false},
		{Attrs{"pads": []int{1, 1, 1, 1}}, shapes(sh(1, 64, 56, 56), sh(64, 64, 3, 3)), false},
	} {
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		plans, err := cpuConvCandidatePlans(geo, DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var kernels []string
		for _, p := range plans {
			kernels = append(kernels, p.Launches[0].Kernel)
		}
		if kernels[0] == "conv2d_window" || (len(kernels) > 1 && kernels[1] == "conv2d_window") != c.window {
			t.Errorf("conv %v: candidates run %v", c.in, kernels)
		}
	}
}

// TestMaxPoolCPUPlan runs window_cpu.cl's max pooling against the reference: the
// ResNet stem (3×3 stride 2 pad 1), stride 1 with rows that end in a partial vector,
// stride 3, dilation, ceil mode (windows reaching past the input read the -INFINITY
// padding), 2×2 windows, and work split into bands or planes grouped per work-item.
func TestMaxPoolCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	cases := []opCase{
		{name: "stem", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(2, 7, 22, 30)), out: shapes(sh(2, 7, 11, 15))},
		{name: "s1 partial", attrs: Attrs{"kernel_shape": []int{2, 3}, "pads": []int{0, 1, 1, 1}}, in: shapes(sh(1, 3, 6, 19)), out: shapes(sh(1, 3, 6, 19))},
		{name: "s3 dil2", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{3, 3}, "dilations": []int{2, 2}, "pads": []int{2, 2, 2, 2}}, in: shapes(sh(1, 5, 25, 40)), out: shapes(sh(1, 5, 9, 14))},
		{name: "ceil narrow", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "ceil_mode": 1}, in: shapes(sh(1, 4, 8, 8)), out: shapes(sh(1, 4, 4, 4))},
		{name: "ceil past the end", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "ceil_mode": 1}, in: shapes(sh(2, 3, 28, 28)), out: shapes(sh(2, 3, 14, 14))},
		{name: "2x2 s2", attrs: Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}}, in: shapes(sh(1, 2, 12, 35)), out: shapes(sh(1, 2, 6, 17))},
	}
	op, _ := Lookup("MaxPool")
	devs := []DeviceInfo{{FloatVectorWidth: 4, ComputeUnits: 64}, {FloatVectorWidth: 16, ComputeUnits: 1}, {FloatVectorWidth: 8, ComputeUnits: 2}}
	sw := newSweep(t, len(devs), 1)
	for ci, c := range cases {
		ins := c.inputs()
		want, err := op.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		for _, di := range sw.pick(ci) {
			dev := devs[di]
			plan, err := op.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if plan.Launches[0].Kernel != "maxpool2d_vec" {
				t.Fatalf("%s: CPU plan runs %s", c.name, plan.Launches[0].Kernel)
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s width %d", c.name, dev.FloatVectorWidth), got[0], want[0])
		}
	}
}

// TestConvCPUCandidates: the tuner's CPU candidates start with Plan's own choice, all
// compute the same conv, and the heuristic fits the device's vector width.
func TestConvCPUCandidates(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	c := opCase{name: "cands", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu},
		in: shapes(sh(1, 24, 6, 10), sh(40, 24, 3, 3), sh(40)), out: shapes(sh(1, 40, 6, 10))}
	ins := c.inputs()
	want, err := convOp{}.Reference(c.attrs, ins, c.out)
	if err != nil {
		t.Fatal(err)
	}
	dev := DeviceInfo{ComputeUnits: 4, MaxWorkGroupSize: 4096, FloatVectorWidth: 16}
	cands, err := convOp{}.Candidates(c.attrs, c.in, c.out, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) < 3 {
		t.Fatalf("%d candidates, want several tiles", len(cands))
	}
	first, _ := convOp{}.Plan(c.attrs, c.in, c.out, dev)
	if cands[0].Source != first.Source || len(first.Setup) != 1 {
		t.Error("the first candidate is not the plan Plan returns, with its packing setup launch")
	}
	for i, p := range cands {
		got, err := RunPlan(env.ctx, q, p, ins, c.out)
		if err != nil {
			t.Fatalf("candidate %d: %v", i, err)
		}
		compare(t, fmt.Sprintf("candidate %d", i), got[0], want[0])
	}
	geo, _ := convOp{}.geometry(c.attrs, c.in)
	for _, tc := range []struct {
		width, mg, want int
	}{{16, 40, 16}, {16, 8, 8}, {8, 40, 8}, {4, 40, 4}, {0, 40, 8}, {16, 3, 4}} {
		g := geo
		g.mg = tc.mg
		if got := cpuVec(g, DeviceInfo{FloatVectorWidth: tc.width}); got != tc.want {
			t.Errorf("cpuVec(width %d, %d channels) = %d, want %d", tc.width, tc.mg, got, tc.want)
		}
	}
	if got := bestPixelTile(14, 4, 7); got != 7 {
		t.Errorf("bestPixelTile(14, 4..7) = %d, want 7", got)
	}
	if got := bestPixelTile(56, 4, 7); got != 7 {
		t.Errorf("bestPixelTile(56, 4..7) = %d, want 7", got)
	}
	if got := bestPixelTile(3, 4, 7); got != 3 {
		t.Errorf("bestPixelTile(3, 4..7) = %d, want 3", got)
	}
	// Deep layers run three weight vectors first where they make eight work-items per
	// compute unit: ResNet-18's 7-wide layer at batch 8, not at batch 1; not from 64
	// channels, nor into 64.
	for _, c := range []struct {
		n, c, m, hw, stride int
		want                cpuConvTile
	}{
		{8, 512, 512, 7, 1, cpuConvTile{16, 3, 7}},
		{1, 512, 512, 7, 1, cpuConvTile{16, 2, 7}},
		{8, 128, 256, 28, 2, cpuConvTile{16, 3, 7}},
		{8, 64, 128, 56, 2, cpuConvTile{16, 2, 7}},
		{8, 256, 64, 14, 1, cpuConvTile{16, 2, 7}},
	} {
		attrs := Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{c.stride, c.stride}}
		g, err := convOp{}.geometry(attrs, shapes(sh(c.n, c.c, c.hw, c.hw), sh(c.m, c.c, 3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		if got := cpuConvCandidates(g, DeviceInfo{FloatVectorWidth: 16, ComputeUnits: 16})[0]; got != c.want {
			t.Errorf("%d × %d → %d on %d² stride %d: first tile %v, want %v", c.n, c.c, c.m, c.hw, c.stride, got, c.want)
		}
	}
	for _, c := range [][2]int{{56, 8}, {55, 8}, {112, 8}, {28, 7}, {14, 7}, {7, 7}, {13, 7}, {27, 7}, {3, 3}} {
		if got := widePixelTile(c[0]); got != c[1] {
			t.Errorf("widePixelTile(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

// BenchmarkConvCPU compares the CPU conv kernel with the scalar direct kernel on layer
// shapes of ResNet-18, MobileNetV2 and SqueezeNet (go test -bench ConvCPU
// ./builtin_kernels); each sub-benchmark reports GFLOP/s, and the direct kernel is the
// peer of the same run. 1×1 layers also run conv1x1 tiles beyond the tuner's two, and
// those on planes under 128 pixels channel tiles beyond the heuristic's (findings in
// docs/kernels/conv1x1-cpu.md#tile-sweeps).
func BenchmarkConvCPU(b *testing.B) {
	env := deviceEnvB(b)
	layers := []opCase{
		{name: "3x3_64_56", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 64, 56, 56), sh(64, 64, 3, 3), sh(64)), out: shapes(sh(1, 64, 56, 56))},
		{name: "3x3_16_55_b4", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(4, 16, 55, 55), sh(64, 16, 3, 3), sh(64)), out: shapes(sh(4, 64, 55, 55))},
		{name: "3x3_256_14", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 256, 14, 14), sh(256, 256, 3, 3), sh(256)), out: shapes(sh(1, 256, 14, 14))},
		{name: "3x3_64_56_b4", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(4, 64, 56, 56), sh(64, 64, 3, 3), sh(64)), out: shapes(sh(4, 64, 56, 56))},
		{name: "3x3_128_28_b4", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(4, 128, 28, 28), sh(128, 128, 3, 3), sh(128)), out: shapes(sh(4, 128, 28, 28))},
		{name: "3x3_256_14_b4", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(4, 256, 14, 14), sh(256, 256, 3, 3), sh(256)), out: shapes(sh(4, 256, 14, 14))},
		{name: "3x3_512_7_b4", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(4, 512, 7, 7), sh(512, 512, 3, 3), sh(512)), out: shapes(sh(4, 512, 7, 7))},
		{name: "1x1_96_56", attrs: Attrs{}, in: shapes(sh(1, 96, 56, 56), sh(24, 96, 1, 1), sh(24)), out: shapes(sh(1, 24, 56, 56))},
		{name: "1x1_16_112", attrs: Attrs{}, in: shapes(sh(1, 16, 112, 112), sh(96, 16, 1, 1), sh(96)), out: shapes(sh(1, 96, 112, 112))},
		{name: "1x1_96_14_b4", attrs: Attrs{}, in: shapes(sh(4, 96, 14, 14), sh(576, 96, 1, 1), sh(576)), out: shapes(sh(4, 576, 14, 14))},
		{name: "1x1_576_14_b4", attrs: Attrs{}, in: shapes(sh(4, 576, 14, 14), sh(96, 576, 1, 1), sh(96)), out: shapes(sh(4, 96, 14, 14))},
		{name: "1x1_320_7", attrs: Attrs{}, in: shapes(sh(1, 320, 7, 7), sh(1280, 320, 1, 1), sh(1280)), out: shapes(sh(1, 1280, 7, 7))},
		{name: "1x1_512_13_b16", attrs: Attrs{}, in: shapes(sh(16, 512, 13, 13), sh(1000, 512, 1, 1), sh(1000)), out: shapes(sh(16, 1000, 13, 13))},
		{name: "1x1_16_55_b16", attrs: Attrs{}, in: shapes(sh(16, 16, 55, 55), sh(64, 16, 1, 1), sh(64)), out: shapes(sh(16, 64, 55, 55))},
		{name: "1x1_128_55_b16", attrs: Attrs{}, in: shapes(sh(16, 128, 55, 55), sh(16, 128, 1, 1), sh(16)), out: shapes(sh(16, 16, 55, 55))},
		{name: "1x1_256_27_b16", attrs: Attrs{}, in: shapes(sh(16, 256, 27, 27), sh(32, 256, 1, 1), sh(32)), out: shapes(sh(16, 32, 27, 27))},
		{name: "1x1_64_55_b16", attrs: Attrs{}, in: shapes(sh(16, 64, 55, 55), sh(16, 64, 1, 1), sh(16)), out: shapes(sh(16, 16, 55, 55))},
		{name: "1x1_384_13_b16", attrs: Attrs{}, in: shapes(sh(16, 384, 13, 13), sh(48, 384, 1, 1), sh(48)), out: shapes(sh(16, 48, 13, 13))},
		{name: "1x1_512_13_64_b16", attrs: Attrs{}, in: shapes(sh(16, 512, 13, 13), sh(64, 512, 1, 1), sh(64)), out: shapes(sh(16, 64, 13, 13))},
		{name: "1x1_960_7_320_b16", attrs: Attrs{}, in: shapes(sh(16, 960, 7, 7), sh(320, 960, 1, 1), sh(320)), out: shapes(sh(16, 320, 7, 7))},
		{name: "1x1_576_7_b16", attrs: Attrs{}, in: shapes(sh(16, 576, 7, 7), sh(160, 576, 1, 1), sh(160)), out: shapes(sh(16, 160, 7, 7))},
		{name: "1x1_960_7_b16", attrs: Attrs{}, in: shapes(sh(16, 960, 7, 7), sh(160, 960, 1, 1), sh(160)), out: shapes(sh(16, 160, 7, 7))},
		{name: "1x1_576_14_b16", attrs: Attrs{}, in: shapes(sh(16, 576, 14, 14), sh(96, 576, 1, 1), sh(96)), out: shapes(sh(16, 96, 14, 14))},
		{name: "1x1_144_56_b16", attrs: Attrs{}, in: shapes(sh(16, 144, 56, 56), sh(24, 144, 1, 1), sh(24)), out: shapes(sh(16, 24, 56, 56))},
		{name: "1x1_32_112_b16", attrs: Attrs{}, in: shapes(sh(16, 32, 112, 112), sh(16, 32, 1, 1), sh(16)), out: shapes(sh(16, 16, 112, 112))},
		{name: "1x1_192_28_b16", attrs: Attrs{}, in: shapes(sh(16, 192, 28, 28), sh(32, 192, 1, 1), sh(32)), out: shapes(sh(16, 32, 28, 28))},
		{name: "1x1_384_14_b16", attrs: Attrs{}, in: shapes(sh(16, 384, 14, 14), sh(64, 384, 1, 1), sh(64)), out: shapes(sh(16, 64, 14, 14))},
		{name: "1x1_320_7_b16", attrs: Attrs{}, in: shapes(sh(16, 320, 7, 7), sh(1280, 320, 1, 1), sh(1280)), out: shapes(sh(16, 1280, 7, 7))},
		{name: "1x1_s2_64_56", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(4, 64, 56, 56), sh(128, 64, 1, 1), sh(128)), out: shapes(sh(4, 128, 28, 28))},
		{name: "3x3_s2_stem_b16", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(16, 3, 224, 224), sh(64, 3, 3, 3), sh(64)), out: shapes(sh(16, 64, 111, 111))},
		{name: "3x3_s2_mnv2_stem_b16", attrs: Attrs{"strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(16, 3, 224, 224), sh(32, 3, 3, 3), sh(32)), out: shapes(sh(16, 32, 112, 112))},
		{name: "7x7_s2", attrs: Attrs{"pads": []int{3, 3, 3, 3}, "strides": []int{2, 2}}, in: shapes(sh(1, 3, 224, 224), sh(64, 3, 7, 7), sh(64)), out: shapes(sh(1, 64, 112, 112))},
	}
	for _, c := range layers {
		ins := c.inputs()
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(numel(c.out[0])*geo.cg*geo.win.k[0]*geo.win.k[1])
		direct, _ := directConvPlan(geo, 4, 4, env.dev)
		vec, _ := cpuConvPlan(geo, heuristicCPUTile(geo, env.dev), env.dev)
		plans := []namedPlan{{"direct", direct}, {"vec", vec}}
		if geo.winograd() {
			if p, ok, _ := winoPlan(geo, chooseWinoTile(geo, env.dev), env.dev); ok {
				plans = append(plans, namedPlan{"wino", p})
			}
		}
		if !geo.pointwise() && geo.cg*geo.win.k[0]*geo.win.k[1] < 64 {
			for _, t := range cpuConvCandidates(geo, env.dev)[1:] {
				p, _ := cpuConvPlan(geo, t, env.dev)
				plans = append(plans, namedPlan{fmt.Sprintf("vec%v", t), p})
			}
			for _, t := range [][3]int{{8, 2, 8}, {8, 2, 16}, {16, 1, 16}} {
				if p, ok, _ := cpuWindowConvPlan(geo, t[0], t[1], t[2], env.dev); ok {
					plans = append(plans, namedPlan{fmt.Sprintf("window_mt%d_nr%d_vec%d", t[0], t[1], t[2]), p})
				}
			}
		}
		if geo.pointwise() && geo.win.out[0]*geo.win.out[1] < 128 {
			for _, t := range []cpuConvTile{{16, 1, 7}, {16, 3, 7}, {16, 4, 7}, {16, 2, 4}} {
				p, _ := cpuConvPlan(geo, t, env.dev)
				plans = append(plans, namedPlan{fmt.Sprint("vec", t), p})
			}
		}
		if geo.pointwise() || geo.strided1x1() {
			for _, t := range []cpu1x1Tile{{16, 8, 2, 0, 0}, {16, 12, 2, 0, 0}, {16, 8, 2, 0, 1 << 20}, {16, 12, 1, 0, 0}, {16, 4, 3, 0, 0}, {8, 8, 2, 0, 0}, {16, 4, 6, 0, 0}, {16, 6, 4, 0, 0}, {16, 8, 3, 0, 0}, {16, 4, 4, 0, 0}} {
				p, _ := cpu1x1Plan(geo, t, env.dev)
				plans = append(plans, namedPlan{fmt.Sprint("1x1", t), p})
			}
		}
		benchPlans(b, env, c.name, plans, ins, c.out, flops)
	}
}

// benchPlans times each plan as sub-benchmark name/plan's name, reporting GFLOP/s of
// flops by the median run and by the fastest (best-GFLOP/s).
func benchPlans(b *testing.B, env *testEnv, name string, plans []namedPlan, ins []*HostTensor, out [][]int, flops float64) {
	for _, v := range plans {
		b.Run(name+"/"+v.name, func(b *testing.B) {
			var fastest time.Duration
			d := timeLaunchesBest(b, env, v.plan, ins, out, b.N, &fastest)
			b.ReportMetric(flops/d.Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flops/fastest.Seconds()/1e9, "best-GFLOP/s")
		})
	}
}

// ownConvPlan is a Conv case's geometry and its own plan for dev, named "plan": the
// first of a sweep's plans, and their peer.
func ownConvPlan(b *testing.B, dev DeviceInfo, c opCase) (convGeom, []namedPlan) {
	geo, err := convOp{}.geometry(c.attrs, c.in)
	if err != nil {
		b.Fatal(err)
	}
	own, err := convOp{}.Plan(c.attrs, c.in, c.out, dev)
	if err != nil {
		b.Fatal(err)
	}
	return geo, []namedPlan{{"plan", own}}
}

// BenchmarkSqueezeNet1x1CPU sweeps conv1x1's tiles over SqueezeNet 1.1's 1×1 layers at
// batch 16, the squeezes (channels reduced) and the 1×1 expansions; "plan" is the layer's
// own plan, the peer of the same run (findings in docs/kernels/conv1x1-cpu.md#tile-sweeps).
func BenchmarkSqueezeNet1x1CPU(b *testing.B) {
	env := deviceEnvB(b)
	type layer struct{ c, m, hw int }
	var layers []layer
	for _, f := range [][4]int{{64, 16, 64, 55}, {128, 16, 64, 55}, {128, 32, 128, 27}, {256, 32, 128, 27}, {256, 48, 192, 13}, {384, 48, 192, 13}, {384, 64, 256, 13}, {512, 64, 256, 13}} {
		layers = append(layers, layer{f[0], f[1], f[3]}, layer{f[1], f[2], f[3]})
	}
	seen := map[layer]bool{}
	for _, l := range layers {
		if seen[l] {
			continue
		}
		seen[l] = true
		c := opCase{attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(16, l.c, l.hw, l.hw), sh(l.m, l.c, 1, 1), sh(l.m)), out: shapes(sh(16, l.m, l.hw, l.hw))}
		geo, plans := ownConvPlan(b, env.dev, c)
		for _, t := range []cpu1x1Tile{{16, 8, 2, 0, 0}, {16, 12, 2, 0, 0}, {16, 8, 3, 0, 0}, {16, 6, 4, 0, 0}, {16, 4, 6, 0, 0}, {16, 4, 3, 0, 0}, {16, 16, 1, 0, 0}, {16, 8, 1, 0, 0},
			{16, 8, 3, 0, 1 << 20}, {16, 8, 3, 1, 0}, {16, 8, 2, 1, 0}, {16, 6, 4, 1, 0}, {16, 8, 3, 0, 32}, {16, 8, 3, 0, 128}} {
			p, err := cpu1x1Plan(geo, t, env.dev)
			if err != nil {
				b.Fatal(err)
			}
			plans = append(plans, namedPlan{fmt.Sprint("1x1", t), p})
		}
		flops := 2.0 * float64(16*l.c*l.m*l.hw*l.hw)
		benchPlans(b, env, fmt.Sprintf("%d_%d_%d", l.c, l.m, l.hw), plans, c.inputs(), c.out, flops)
	}
}

// BenchmarkSqueezeNet3x3CPU sweeps conv2d_vec's tiles over SqueezeNet 1.1's 3×3
// expansions at batch 16 on 27- and 13-wide planes; "plan" is the layer's own plan (a
// Winograd one there), the peer of the same run. GFLOP/s count the direct convolution's
// multiply-adds (findings in docs/kernels/winograd.md#winopreferred).
func BenchmarkSqueezeNet3x3CPU(b *testing.B) {
	env := deviceEnvB(b)
	for _, l := range [][3]int{{32, 128, 27}, {48, 192, 13}, {64, 256, 13}} {
		c := opCase{attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(16, l[0], l[2], l[2]), sh(l[1], l[0], 3, 3), sh(l[1])), out: shapes(sh(16, l[1], l[2], l[2]))}
		geo, plans := ownConvPlan(b, env.dev, c)
		for _, t := range []cpuConvTile{{16, 2, 7}, {16, 3, 7}, {16, 4, 7}, {16, 4, 6}, {16, 4, 5}, {16, 3, 5}, {16, 3, 8}, {16, 2, 8}} {
			p, err := cpuConvPlan(geo, t, env.dev)
			if err != nil {
				b.Fatal(err)
			}
			plans = append(plans, namedPlan{fmt.Sprint("vec", t), p})
		}
		benchPlans(b, env, fmt.Sprintf("%d_%d_%d", l[0], l[1], l[2]), plans, c.inputs(), c.out, 2.0*float64(geo.macs()))
	}
}

// BenchmarkResNetCPU sweeps the plans of ResNet-18's 3×3 layers at batch 8, the half
// of batch 16 each launch runs on CPUs (batch split), planned for half the compute units
// as the network plans it, and some at batch 1 and 16: channel tiles (with
// CLHOST_BENCH_ROWS set, more of them and several output rows per work-item too), and
// for the stride-1 layers Winograd's two tile sizes. "plan" is the layer's own plan, the
// peer of the same run.
func BenchmarkResNetCPU(b *testing.B) {
	env := deviceEnvB(b)
	type layer struct{ n, c, m, hw, s int }
	tiles := []cpuConvTile{{16, 2, 7}, {16, 3, 7}, {16, 3, 8}, {16, 2, 8}}
	rowsList := []int{1}
	if os.Getenv("CLHOST_BENCH_ROWS") != "" {
		tiles = append(tiles, cpuConvTile{16, 2, 4}, cpuConvTile{16, 4, 7})
		rowsList = append(rowsList, 2, 7)
	}
	for _, l := range []layer{{8, 64, 128, 56, 2}, {8, 128, 256, 28, 2}, {8, 256, 512, 14, 2}, {8, 128, 128, 28, 1}, {8, 256, 256, 14, 1}, {8, 512, 512, 7, 1},
		{16, 256, 256, 14, 1}, {1, 64, 64, 56, 1}, {1, 128, 128, 28, 1}, {1, 512, 512, 7, 1}} {
		o := l.hw / l.s
		c := opCase{attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{l.s, l.s}, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(l.n, l.c, l.hw, l.hw), sh(l.m, l.c, 3, 3), sh(l.m)), out: shapes(sh(l.n, l.m, o, o))}
		// Batch 8 is a half of batch 16, planned for half the compute units as the
		// network plans it.
		dev := env.dev
		if l.n == 8 {
			dev.ComputeUnits = max(dev.ComputeUnits/2, 1)
		}
		geo, plans := ownConvPlan(b, dev, c)
		for _, t := range tiles {
			if t.tilePixels > o {
				continue
			}
			for _, rows := range rowsList {
				p, err := cpuConvRowsPlan(geo, t, rows, dev)
				if err != nil {
					b.Fatal(err)
				}
				plans = append(plans, namedPlan{fmt.Sprint("vec", t, "r", rows), p})
			}
		}
		if geo.winograd() {
			for _, ts := range []int{2, 4} {
				if p, ok, err := winoPlan(geo, chooseWinoTileOf(geo, ts, dev), dev); err != nil {
					b.Fatal(err)
				} else if ok {
					plans = append(plans, namedPlan{fmt.Sprint("wino", ts), p})
				}
			}
		}
		// The own plan again last: the first sub-benchmark of a process can run slow.
		plans = append(plans, namedPlan{"plan_again", plans[0].plan})
		benchPlans(b, env, fmt.Sprintf("b%d_%d_%d_%d_s%d", l.n, l.c, l.m, l.hw, l.s), plans, c.inputs(), c.out, 2.0*float64(geo.macs()))
	}
}

// BenchmarkConvPooledCPU compares a classifier head's 1×1 Conv with its global average
// pool folded in (conv1x1's POOL_AVG, two tiles) with the two apart (the Conv's plain
// plan, then global_avgpool: the peer of the same run), at batch 16: SqueezeNet's 512 →
// 1000 on 13×13 and MobileNetV2's 320 → 1280 on 7×7. GFLOP/s counts the Conv's work.
func BenchmarkConvPooledCPU(b *testing.B) {
	env := deviceEnvB(b)
	pool := Attrs{opspec.FusedGlobalAveragePoolAttr: 1, opspec.FusedActivationAttr: opspec.ActRelu}
	layers := []opCase{
		{name: "512_13_b16", attrs: pool, in: shapes(sh(16, 512, 13, 13), sh(1000, 512, 1, 1), sh(1000)), out: shapes(sh(16, 1000, 1, 1))},
		{name: "320_7_b16", attrs: pool, in: shapes(sh(16, 320, 7, 7), sh(1280, 320, 1, 1), sh(1280)), out: shapes(sh(16, 1280, 1, 1))},
	}
	for _, c := range layers {
		ins := c.inputs()
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(geo.n*geo.m*geo.in[0]*geo.in[1]*geo.cg)
		apart, err := pooledAfterPlan(geo, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		plans := []namedPlan{{"apart", apart}}
		for _, t := range []cpu1x1Tile{{16, 12, 2, 0, 0}, {16, 8, 2, 0, 0}} {
			p, err := cpu1x1Plan(geo, t, env.dev)
			if err != nil {
				b.Fatal(err)
			}
			plans = append(plans, namedPlan{fmt.Sprint("pooled", t), p})
		}
		benchPlans(b, env, c.name, plans, ins, c.out, flops)
	}
}

// BenchmarkConvMaxPoolCPU compares a Conv with its MaxPool folded in (conv2d_maxpool,
// conv_cpu.cl's first two tiles) with the two apart, at batch 16: SqueezeNet's stem
// (3 → 64, 3 × 3 at stride 2; 3 × 3 pool at stride 2, ceil_mode), ResNet-18's (3 → 64,
// 7 × 7 at stride 2; 3 × 3 pool at stride 2, padded), and SqueezeNet's expansions
// before a pool. Apart is two
// sub-benchmarks, the Conv's plain plan ("conv") and the pool's ("maxpool"): their times
// add up to the peer of the fused ones. GFLOP/s counts the Conv's work.
func BenchmarkConvMaxPoolCPU(b *testing.B) {
	env := deviceEnvB(b)
	sq := Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "ceil_mode": 1}
	r18 := Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}
	layers := []struct {
		name       string
		conv, pool Attrs
		in, mid    [][]int
		out        [][]int
	}{
		{"squeezenet_b16", Attrs{"strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu}, sq,
			shapes(sh(16, 3, 224, 224), sh(64, 3, 3, 3), sh(64)), shapes(sh(16, 64, 111, 111)), shapes(sh(16, 64, 55, 55))},
		{"resnet18_b16", Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}, opspec.FusedActivationAttr: opspec.ActRelu}, r18,
			shapes(sh(16, 3, 224, 224), sh(64, 3, 7, 7), sh(64)), shapes(sh(16, 64, 112, 112)), shapes(sh(16, 64, 56, 56))},
		// SqueezeNet's expansions before its pools (each Conv with its half of the pool
		// after the Concat): fire3's from 16 channels, fire5's from 32 (the 3×3 one a
		// Winograd layer when apart).
		{"fire3_1x1_b16", Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, sq,
			shapes(sh(16, 16, 55, 55), sh(64, 16, 1, 1), sh(64)), shapes(sh(16, 64, 55, 55)), shapes(sh(16, 64, 27, 27))},
		{"fire3_3x3_b16", Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}, sq,
			shapes(sh(16, 16, 55, 55), sh(64, 16, 3, 3), sh(64)), shapes(sh(16, 64, 55, 55)), shapes(sh(16, 64, 27, 27))},
		{"fire5_3x3_b16", Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu}, sq,
			shapes(sh(16, 32, 27, 27), sh(128, 32, 3, 3), sh(128)), shapes(sh(16, 128, 27, 27)), shapes(sh(16, 128, 13, 13))},
	}
	for _, c := range layers {
		ins := opCase{in: c.in}.inputs()
		fusedAttrs := Attrs{}
		for k, v := range c.conv {
			fusedAttrs[k] = v
		}
		for k, v := range c.pool {
			fusedAttrs[opspec.FusedMaxPoolPrefix+k] = v
		}
		geo, err := convOp{}.geometry(fusedAttrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(geo.macs())
		conv, err := convOp{}.Plan(c.conv, c.in, c.mid, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		benchPlans(b, env, c.name, []namedPlan{{"conv", conv}}, ins, c.mid, flops)
		pool, err := poolOp{typ: "MaxPool", max: true}.Plan(c.pool, c.mid, c.out, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		benchPlans(b, env, c.name, []namedPlan{{"maxpool", pool}}, opCase{in: c.mid}.inputs(), c.out, flops)
		var fused []namedPlan
		tiles := cpuConvCandidates(geo, env.dev)
		for _, t := range tiles[:min(2, len(tiles))] {
			p, ok, err := cpuConvMaxPoolPlan(geo, t, env.dev)
			if err != nil || !ok {
				b.Fatalf("tile %v: ok %v, %v", t, ok, err)
			}
			fused = append(fused, namedPlan{fmt.Sprintf("fused_%d_%d_%d", t.vec, t.weightVecs, t.tilePixels), p})
		}
		benchPlans(b, env, c.name, fused, ins, c.out, flops)
	}
}

// BenchmarkMaxPoolCPU compares window_cpu.cl's max pooling, at 8 and 16 lanes, with
// pool.cl's portable kernel (the peer of the same run) on the pools of SqueezeNet 1.1 and
// ResNet-18 at batch 16; each reports GB/s of input read.
func BenchmarkMaxPoolCPU(b *testing.B) {
	env := deviceEnvB(b)
	sq := Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "ceil_mode": 1}
	layers := []opCase{
		{name: "sq_64_111", attrs: sq, in: shapes(sh(16, 64, 111, 111)), out: shapes(sh(16, 64, 55, 55))},
		{name: "sq_128_55", attrs: sq, in: shapes(sh(16, 128, 55, 55)), out: shapes(sh(16, 128, 27, 27))},
		{name: "sq_256_27", attrs: sq, in: shapes(sh(16, 256, 27, 27)), out: shapes(sh(16, 256, 13, 13))},
		{name: "r18_64_112", attrs: Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}},
			in: shapes(sh(16, 64, 112, 112)), out: shapes(sh(16, 64, 56, 56))},
	}
	op := poolOp{typ: "MaxPool", max: true}
	for _, c := range layers {
		ins := c.inputs()
		g, err := op.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		want, _ := op.Reference(c.attrs, ins, c.out)
		portable, _ := op.Plan(c.attrs, c.in, c.out, DeviceInfo{IsGPU: true, MaxWorkGroupSize: 256})
		plans := []namedPlan{{"portable", portable}}
		for _, vec := range []int{8, 16} {
			p, ok, err := cpuMaxPoolPlan(g, windowRows(g.win.out[0]), vec, env.dev)
			if !ok || err != nil {
				b.Fatal(ok, err)
			}
			plans = append(plans, namedPlan{fmt.Sprintf("vec%d", vec), p})
		}
		for _, v := range plans {
			got, err := RunPlan(env.ctx, mustQueueB(b, env), v.plan, ins, c.out)
			if err != nil {
				b.Fatal(err)
			}
			compare(b, v.name, got[0], want[0])
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				d := timeLaunches(b, env, v.plan, ins, c.out, b.N)
				b.ReportMetric(float64(4*numel(c.in[0]))/d.Seconds()/1e9, "GB/s")
			})
		}
	}
}

func mustQueue(t *testing.T, env *testEnv) *cl.Queue { return mustQueueB(t, env) }

func mustQueueB(t testing.TB, env *testEnv) *cl.Queue {
	q, err := env.ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Release)
	return q
}

func BenchmarkConvDepthwiseCPU(b *testing.B) {
	env := deviceEnvB(b)
	layers := []opCase{
		{name: "dw_144_56_s1", attrs: Attrs{"group": 144, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 144, 56, 56), sh(144, 1, 3, 3), sh(144)), out: shapes(sh(1, 144, 56, 56))},
		{name: "dw_144_56_s2", attrs: Attrs{"group": 144, "pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}}, in: shapes(sh(1, 144, 56, 56), sh(144, 1, 3, 3), sh(144)), out: shapes(sh(1, 144, 28, 28))},
		{name: "dw_576_14_s1", attrs: Attrs{"group": 576, "pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 576, 14, 14), sh(576, 1, 3, 3), sh(576)), out: shapes(sh(1, 576, 14, 14))},
	}
	for _, c := range layers {
		ins := c.inputs()
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(numel(c.out[0])*geo.cg*geo.win.k[0]*geo.win.k[1])
		direct, _ := directConvPlan(geo, 1, 4, env.dev)
		vec, _, _ := cpuDepthwisePlan(geo, env.dev)
		for _, v := range []struct {
			name string
			plan *Plan
		}{{"direct", direct}, {"vec", vec}} {
			want, _ := convOp{}.Reference(c.attrs, ins, c.out)
			got, err := RunPlan(env.ctx, mustQueueB(b, env), v.plan, ins, c.out)
			if err != nil {
				b.Fatal(err)
			}
			compare(b, v.name, got[0], want[0])
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				d := timeLaunches(b, env, v.plan, ins, c.out, b.N)
				b.ReportMetric(flops/d.Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestConv1x1CPUPlan runs conv1x1 against the CPU reference: planes that are a multiple
// of the pixel tile, end in a partial tile, or are smaller than one tile; channel counts
// that leave a partial channel tile; groups; batches; and the fused work.
func TestConv1x1CPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	cases := []opCase{
		{name: "whole tiles", attrs: Attrs{}, in: shapes(sh(1, 5, 8, 8), sh(16, 5, 1, 1), sh(16)), out: shapes(sh(1, 16, 8, 8))},
		{name: "partial tile relu", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 7, 7, 7), sh(13, 7, 1, 1), sh(13)), out: shapes(sh(2, 13, 7, 7))},
		{name: "small plane residual", attrs: Attrs{}, in: shapes(sh(1, 9, 3, 5), sh(10, 9, 1, 1), nil, sh(1, 10, 3, 5)), out: shapes(sh(1, 10, 3, 5))},
		{name: "groups clip residual", attrs: Attrs{"group": 3, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(-0.2), opspec.FusedMaxAttr: float32(0.3)}, in: shapes(sh(2, 6, 6, 9), sh(9, 2, 1, 1), sh(9), sh(2, 9, 6, 9)), out: shapes(sh(2, 9, 6, 9))},
		// Strided: the subsampling copy first. Odd planes leave input rows and columns no
		// output reads; 2×3 strides tell the axes apart.
		{name: "stride2 odd residual", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(2, 6, 9, 11), sh(20, 6, 1, 1), sh(20), sh(2, 20, 5, 6)), out: shapes(sh(2, 20, 5, 6))},
		{name: "stride 2x3 groups relu", attrs: Attrs{"strides": []int{2, 3}, "group": 2, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(1, 8, 12, 20), sh(10, 4, 1, 1)), out: shapes(sh(1, 10, 6, 7))},
		// 130 input channels: in chunks of chunk1x1 (and a last one of 2) where a
		// work-item runs several channel tiles.
		{name: "chunked channels residual", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 130, 5, 7), sh(12, 130, 1, 1), sh(12), sh(2, 12, 5, 7)), out: shapes(sh(2, 12, 5, 7))},
	}
	tiles := []cpu1x1Tile{{16, 8, 2, 0, 0}, {8, 6, 2, 2, 0}, {4, 3, 3, 1, 0}, {16, 12, 1, 0, 0}, {8, 4, 2, 3, 3}, {4, 3, 1, 2, 4}}
	sw := newSweep(t, len(tiles), 2)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		if !geo.pointwise() && !geo.strided1x1() {
			return nil, fmt.Errorf("neither pointwise nor a strided 1x1")
		}
		var list []namedPlan
		for _, ti := range sw.pick(ci) {
			tile := tiles[ti]
			plan, err := cpu1x1Plan(geo, tile, env.dev)
			if err != nil {
				return nil, err
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %v", tile), plan})
		}
		return list, nil
	})
	// Layers that differ only in shape, or in how many channel tiles a work-item runs,
	// share one program, launched one work-item per group (the shape is in kernel
	// arguments; input channels that fit one chunk take the chunked program), and each
	// still matches the reference.
	relu := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
	shared := []opCase{
		{name: "shared 5x8x8 to 16", attrs: relu, in: shapes(sh(1, 5, 8, 8), sh(16, 5, 1, 1), sh(16)), out: shapes(sh(1, 16, 8, 8))},
		{name: "shared 2x7x9x7 to 13", attrs: relu, in: shapes(sh(2, 7, 9, 7), sh(13, 7, 1, 1), sh(13)), out: shapes(sh(2, 13, 9, 7))},
	}
	sharedTiles := []cpu1x1Tile{{8, 4, 2, 1, 0}, {8, 4, 2, 3, 0}}
	sharedPlans := func(geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, tile := range sharedTiles {
			plan, err := cpu1x1Plan(geo, tile, env.dev)
			if err != nil {
				return nil, err
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %v", tile), plan})
		}
		return list, nil
	}
	var sources []string
	for _, c := range shared {
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		plans, err := sharedPlans(geo)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plans {
			sources = append(sources, p.plan.Source)
			for _, l := range p.plan.Launches {
				if slices.ContainsFunc(l.Local, func(v int) bool { return v != 1 }) {
					t.Errorf("%s, %s: %s launches groups of %v, want one work-item", c.name, p.name, l.Kernel, l.Local)
				}
			}
		}
	}
	for i := 1; i < len(sources); i++ {
		if sources[i] != sources[0] {
			t.Errorf("1×1 layers of one tile and epilogue: program %d differs from program 0", i)
		}
	}
	checkConvPlans(t, shared, func(_ int, geo convGeom) ([]namedPlan, error) { return sharedPlans(geo) })
	// The chunks come with several channel tiles per work-item, and only then.
	chunked, err := convOp{}.geometry(cases[len(cases)-1].attrs, cases[len(cases)-1].in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tile cpu1x1Tile
		want bool
	}{{cpu1x1Tile{8, 6, 2, 2, 0}, true}, {cpu1x1Tile{8, 4, 2, 1, 0}, false}, {cpu1x1Tile{8, 6, 2, 2, 200}, false}} {
		plan, err := cpu1x1Plan(chunked, c.tile, env.dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(plan.Source, fmt.Sprintf("#define KC %d\n", chunk1x1)); got != c.want {
			t.Errorf("tile %v: KC defined = %v, want %v", c.tile, got, c.want)
		}
	}
	// Several pixel tiles per work-item (few input channels, one compute unit), the last
	// item's run ending early in a partial tile, and with a strided input.
	one := env.dev
	one.ComputeUnits = 1
	checkConvPlans(t, []opCase{
		{name: "tiles per item", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(1, 4, 20, 23), sh(12, 4, 1, 1), sh(12), sh(1, 12, 20, 23)), out: shapes(sh(1, 12, 20, 23))},
		{name: "tiles per item stride2", attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(2, 3, 39, 45), sh(5, 3, 1, 1), sh(5)), out: shapes(sh(2, 5, 20, 23))},
	}, func(_ int, geo convGeom) ([]namedPlan, error) {
		tile := cpu1x1Tile{8, 4, 2, 0, 0}
		plan, err := cpu1x1Plan(geo, tile, one)
		if err != nil {
			return nil, err
		}
		main := plan.Launches[len(plan.Launches)-1]
		if tiles := ceilDiv(20*23, 16); main.Global[0] >= tiles {
			return nil, fmt.Errorf("%d work-items along the %d tiles: want several tiles each", main.Global[0], tiles)
		}
		return []namedPlan{{"1 unit", plan}}, nil
	})
	// The GEMM prefetches where the device's compiler takes the builtin: PoCL's does
	// (the cases above ran with it there), oclgrind's does not.
	if d := env.ctx.Device; d.Platform != nil && env.dev.Prefetch != strings.Contains(d.Platform.Name, "Portable Computing Language") {
		t.Errorf("Prefetch = %v on platform %q", env.dev.Prefetch, d.Platform.Name)
	}
	first, err := convOp{}.geometry(cases[0].attrs, cases[0].in)
	if err != nil {
		t.Fatal(err)
	}
	for _, pf := range []bool{false, true} {
		plan, err := cpu1x1Plan(first, cpu1x1Tile{8, 4, 2, 0, 0}, DeviceInfo{ComputeUnits: 1, Prefetch: pf})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("#define PREFETCH_BUILTIN %d\n", map[bool]int{false: 0, true: 1}[pf]); !strings.Contains(plan.Source, want) {
			t.Errorf("Prefetch %v: the program lacks %q", pf, want)
		}
	}
	for _, c := range []struct {
		in, w   []int
		width   int
		mt, vec int
	}{
		{sh(16, 512, 13, 13), sh(1000, 512, 1, 1), 16, 12, 16}, // SqueezeNet's classifier at batch 16
		{sh(1, 576, 14, 14), sh(96, 576, 1, 1), 16, 8, 16},     // 7 pixel tiles × 8 channel tiles < 8 × 16
		{sh(4, 576, 14, 14), sh(96, 576, 1, 1), 16, 12, 16},
		{sh(16, 128, 55, 55), sh(16, 128, 1, 1), 16, 8, 16}, // 12 × 2 would compute 24 channels for 16
		{sh(16, 16, 55, 55), sh(64, 16, 1, 1), 16, 8, 16},   // 72 for 64
		{sh(16, 960, 7, 7), sh(160, 960, 1, 1), 16, 12, 16}, // 168 for 160
		{sh(16, 96, 4, 4), sh(96, 96, 1, 1), 16, 4, 8},      // 16 pixels: 8-wide vectors
		{sh(16, 96, 14, 14), sh(96, 96, 1, 1), 8, 4, 8},
	} {
		geo, err := convOp{}.geometry(Attrs{}, shapes(c.in, c.w))
		if err != nil {
			t.Fatal(err)
		}
		got := heuristic1x1Tile(geo, DeviceInfo{FloatVectorWidth: c.width, ComputeUnits: 16})
		if got.tileChannels != c.mt || got.vec != c.vec || got.tilePixelVecs != 2 {
			t.Errorf("heuristic1x1Tile(%v × %v, width %d) = %v, want %d channels × 2 vectors of %d", c.in, c.w, c.width, got, c.mt, c.vec)
		}
	}
	for _, c := range []struct{ fmas, tiles, rows, units, want int }{
		{256, 95, 128, 16, 95},  // SqueezeNet's first expansion at batch 16: 128 items of a row each
		{256, 95, 8, 16, 13},    // at batch 1: 8 items per row of tiles keep 4 per unit
		{8192, 95, 8, 16, 8},    // 8 tiles reach minItemFMAs
		{1 << 16, 95, 8, 16, 1}, // enough work in one tile
		{32, 29, 3, 1, 28},
		{32, 3, 1, 4, 1},
	} {
		if got := tilesPerItem(c.fmas, c.tiles, c.rows, DeviceInfo{ComputeUnits: c.units}); got != c.want {
			t.Errorf("tilesPerItem(%d, %d, %d, %d units) = %d, want %d", c.fmas, c.tiles, c.rows, c.units, got, c.want)
		}
	}
	for _, c := range []struct{ cg, mg, mt1, items, units, want int }{
		{144, 24, 3, 1568, 16, 3}, // MobileNetV2's projection at batch 16: all three tiles
		{64, 16, 2, 95, 16, 2},    // SqueezeNet's squeeze at batch 1
		{960, 160, 20, 2, 16, 1},  // 2 pixel columns × 20 tiles of one keep 40 work-items ≥ 4 × 16
		{960, 160, 20, 8, 16, 2},  // 8 × 10 blocks of two
		{960, 160, 20, 5, 16, 1},  // 13 blocks would be needed: tiles of one
		{16, 64, 8, 1520, 16, 1},  // an expansion: one
	} {
		if got := channelTilesPerItem(c.cg, c.mg, c.mt1, c.items, DeviceInfo{ComputeUnits: c.units}); got != c.want {
			t.Errorf("channelTilesPerItem(%d, %d, %d, %d, %d units) = %d, want %d", c.cg, c.mg, c.mt1, c.items, c.units, got, c.want)
		}
	}
	pad, _ := convOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}}, shapes(sh(1, 2, 4, 4), sh(3, 2, 1, 1)))
	stride, _ := convOp{}.geometry(Attrs{"strides": []int{2, 2}}, shapes(sh(1, 2, 4, 4), sh(3, 2, 1, 1)))
	if pad.pointwise() || stride.pointwise() {
		t.Error("a padded or strided 1x1 conv counts as pointwise")
	}
	if pad.strided1x1() || !stride.strided1x1() {
		t.Error("strided1x1 is wrong about a padded or a strided 1x1 conv")
	}
	// ResNet's downsampling shortcut gets the GEMM over its subsampled input first.
	ds := opCase{attrs: Attrs{"strides": []int{2, 2}}, in: shapes(sh(16, 64, 56, 56), sh(128, 64, 1, 1), sh(128)), out: shapes(sh(16, 128, 28, 28))}
	plan, err := convOp{}.Plan(ds.attrs, ds.in, ds.out, DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16, MaxWorkGroupSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Launches) != 1 || plan.Launches[0].Kernel != "conv2d_vec" {
		t.Errorf("the downsampling shortcut runs %v, want the channel tiles first", plan.Launches)
	}
	geo, _ := convOp{}.geometry(ds.attrs, ds.in)
	cands, err := cpuConvCandidatePlans(geo, DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16, MaxWorkGroupSize: 4096}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) < 2 || len(cands[1].Launches) != 2 || cands[1].Launches[0].Kernel != "conv1x1_subsample" || cands[1].Launches[1].Kernel != "conv1x1" {
		t.Errorf("the tuner's second candidate for the downsampling shortcut is not the subsampling GEMM")
	}
}

// TestConcatCPUPlan runs concat_rows against the reference: rows of several blocks with
// a partial last block and a tail shorter than a vector, inputs of one row (axis 0) and
// rows shorter than a vector (the last axis).
func TestConcatCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	cases := []opCase{
		{name: "channels", attrs: Attrs{"axis": 1}, in: shapes(sh(3, 5, 17, 31), sh(3, 2, 17, 31)), out: shapes(sh(3, 7, 17, 31))},
		{name: "axis0", attrs: Attrs{"axis": 0}, in: shapes(sh(1, 3, 700), sh(2, 3, 700)), out: shapes(sh(3, 3, 700))},
		{name: "last axis", attrs: Attrs{"axis": -1}, in: shapes(sh(2, 3, 4), sh(2, 3, 19)), out: shapes(sh(2, 3, 23))},
	}
	for _, c := range cases {
		ins := c.inputs()
		want, err := concatOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		for _, dev := range []DeviceInfo{{ComputeUnits: 64}, {ComputeUnits: 1}} {
			plan, err := concatOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if plan.Launches[0].Kernel != "concat_rows" {
				t.Fatalf("%s: CPU plan runs %s", c.name, plan.Launches[0].Kernel)
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s units %d", c.name, dev.ComputeUnits), got[0], want[0])
		}
	}
	if b := concatBlock(3*5*17*31, DeviceInfo{ComputeUnits: 64}); b != 1024 {
		t.Errorf("concatBlock = %d, want the 1024 floor (so that the channels case splits its rows)", b)
	}
}

// TestGemmCPUPlan runs fully connected Gemms on the CPU conv kernel against the
// reference (one and several images, output counts that leave a partial channel tile,
// bias as [N] or [1, N] or none, a fused activation) and checks that the other Gemm
// forms keep gemm.cl.
func TestGemmCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	tb := Attrs{"transB": 1}
	cases := []struct {
		c    opCase
		conv bool
	}{
		{opCase{name: "fc b1", attrs: tb, in: shapes(sh(1, 67), sh(37, 67), sh(37)), out: shapes(sh(1, 37))}, true},
		{opCase{name: "fc b5 row bias relu", attrs: Attrs{"transB": 1, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(5, 40), sh(70, 40), sh(1, 70)), out: shapes(sh(5, 70))}, true},
		{opCase{name: "fc no c", attrs: tb, in: shapes(sh(3, 9), sh(16, 9)), out: shapes(sh(3, 16))}, true},
		// Several images per work-item, the last group partial, and a partial last
		// channel vector.
		{opCase{name: "fc b11 clip", attrs: Attrs{"transB": 1, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(-0.5), opspec.FusedMaxAttr: float32(0.5)}, in: shapes(sh(11, 23), sh(41, 23), sh(41)), out: shapes(sh(11, 41))}, true},
		{opCase{name: "alpha", attrs: Attrs{"transB": 1, "alpha": 0.5}, in: shapes(sh(2, 9), sh(16, 9), sh(16)), out: shapes(sh(2, 16))}, false},
		{opCase{name: "B as K×N", attrs: Attrs{}, in: shapes(sh(2, 9), sh(9, 16), sh(16)), out: shapes(sh(2, 16))}, true},
		{opCase{name: "full C", attrs: tb, in: shapes(sh(2, 9), sh(16, 9), sh(2, 16)), out: shapes(sh(2, 16))}, false},
	}
	devs := []DeviceInfo{{ComputeUnits: 2, FloatVectorWidth: 16}, {ComputeUnits: 8, FloatVectorWidth: 4}, {ComputeUnits: 1, FloatVectorWidth: 8}}
	sw := newSweep(t, len(devs), 1)
	for ci, tc := range cases {
		c := tc.c
		ins := c.inputs()
		want, err := gemmOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		picked := sw.pick(ci)
		if tc.conv && c.in[0][0] >= 8 && !slices.Contains(picked, 2) {
			picked = append(picked, 2) // the one-unit device, where images group per work-item
		}
		for _, di := range picked {
			dev := devs[di]
			plan, err := gemmOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := plan.Launches[0].Kernel == "fc_vec"; got != tc.conv {
				t.Fatalf("%s: CPU plan runs %s", c.name, plan.Launches[0].Kernel)
			}
			if rows := plan.Launches[0].Global[0]; tc.conv && c.in[0][0] >= 8 && dev.ComputeUnits == 1 && rows >= c.in[0][0] {
				t.Errorf("%s: %d work-items along %d images, want several images each", c.name, rows, c.in[0][0])
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s width %d", c.name, dev.FloatVectorWidth), got[0], want[0])
		}
	}
}

// TestConv1x1PooledCPUPlan runs conv1x1 with the global average pool folded in
// (FusedGlobalAveragePoolAttr) against the CPU reference: planes that end in a partial
// pixel tile (the tile moved left, whose old pixels must not count twice), planes
// narrower than one tile, channels that leave a partial channel tile, groups, the fused
// work and an output batch stride; and where conv1x1 does not run it (a padded or
// strided Conv, a GPU's plan), the plain plan and a second launch.
func TestConv1x1PooledCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	pool := func(a Attrs) Attrs {
		a[opspec.FusedGlobalAveragePoolAttr] = 1
		return a
	}
	cases := []opCase{
		{name: "13x13 relu", attrs: pool(Attrs{opspec.FusedActivationAttr: opspec.ActRelu}), in: shapes(sh(2, 9, 13, 13), sh(20, 9, 1, 1), sh(20)), out: shapes(sh(2, 20, 1, 1))},
		{name: "small plane residual clip", attrs: pool(Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(-0.1), opspec.FusedMaxAttr: float32(0.2)}), in: shapes(sh(1, 5, 3, 5), sh(10, 5, 1, 1), nil, sh(1, 10, 3, 5)), out: shapes(sh(1, 10, 1, 1))},
		{name: "groups 7x7", attrs: pool(Attrs{"group": 2}), in: shapes(sh(2, 6, 7, 7), sh(8, 3, 1, 1), sh(8)), out: shapes(sh(2, 8, 1, 1))},
		{name: "batch stride", attrs: pool(Attrs{opspec.OutputBatchStrideAttr: 13 + 4}), in: shapes(sh(3, 4, 6, 10), sh(13, 4, 1, 1), sh(13)), out: shapes(sh(3, 13, 1, 1))},
		{name: "blocked head batch stride", attrs: pool(Attrs{opspec.FusedActivationAttr: opspec.ActRelu, opspec.OutputBatchStrideAttr: 40}), in: shapes(sh(2, 70, 5, 5), sh(35, 70, 1, 1), sh(35)), out: shapes(sh(2, 35, 1, 1))},
	}
	tiles := []cpu1x1Tile{{16, 8, 2, 0, 0}, {16, 12, 2, 0, 0}, {8, 6, 2, 3, 0}, {4, 3, 3, 1, 2}}
	sw := newSweep(t, len(tiles), 1)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, ti := range sw.pick(ci) {
			tile := tiles[ti]
			plan, err := cpu1x1Plan(geo, tile, env.dev)
			if err != nil {
				return nil, err
			}
			if int64(plan.OutputBatchStride) != cases[ci].attrs.Int(opspec.OutputBatchStrideAttr, 0) {
				return nil, fmt.Errorf("plan's OutputBatchStride %d", plan.OutputBatchStride)
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %v", tile), plan})
		}
		if ci > 0 && !fullSweeps {
			return list, nil // the tuner's candidates of one case; every case's under make test-full
		}
		cands, err := convOp{}.Candidates(cases[ci].attrs, cases[ci].in, cases[ci].out, env.dev)
		for i, p := range cands {
			list = append(list, namedPlan{fmt.Sprintf("candidate %d", i), p})
		}
		return list, err
	})
	// The reference's pooled Conv is its Conv and GlobalAveragePool.
	c := cases[0]
	ins := c.inputs()
	plain, _ := convOp{}.Reference(Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, ins, shapes(sh(2, 20, 13, 13)))
	pooled, _ := globalPoolOp{typ: "GlobalAveragePool"}.Reference(nil, plain, c.out)
	fused, err := convOp{}.Reference(c.attrs, ins, c.out)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "reference", fused[0], pooled[0])

	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256, FloatVectorWidth: 1}
	after := []opCase{
		{name: "3x3 padded relu", attrs: pool(Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu, opspec.OutputBatchStrideAttr: 9}), in: shapes(sh(2, 4, 6, 6), sh(8, 4, 3, 3), sh(8)), out: shapes(sh(2, 8, 1, 1))},
		{name: "1x1 strided", attrs: pool(Attrs{"strides": []int{2, 2}}), in: shapes(sh(1, 4, 7, 7), sh(6, 4, 1, 1)), out: shapes(sh(1, 6, 1, 1))},
		{name: "1x1 gpu", attrs: pool(Attrs{}), in: shapes(sh(2, 5, 6, 6), sh(7, 5, 1, 1), sh(7)), out: shapes(sh(2, 7, 1, 1))},
	}
	checkConvPlans(t, after, func(ci int, geo convGeom) ([]namedPlan, error) {
		c := after[ci]
		var list []namedPlan
		for _, dev := range []DeviceInfo{env.dev, gpu} {
			plan, err := convOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				return nil, err
			}
			last := plan.Launches[len(plan.Launches)-1].Kernel
			if want := pooledIn1x1(geo, dev); (last == "conv1x1") != want || !want && (last != "global_avgpool" || plan.OutputBatchStride != 0) {
				return nil, fmt.Errorf("GPU %v: the plan ends in %s, OutputBatchStride %d", dev.IsGPU, last, plan.OutputBatchStride)
			}
			list = append(list, namedPlan{fmt.Sprintf("GPU %v", dev.IsGPU), plan})
		}
		return list, nil
	})
	if _, err := (convOp{}).OutputShapes(Attrs{opspec.FusedGlobalAveragePoolAttr: 2}, shapes(sh(1, 4, 6, 6), sh(8, 4, 1, 1))); err == nil || !strings.Contains(err.Error(), "want 0 or 1") {
		t.Errorf("%s 2: error %v", opspec.FusedGlobalAveragePoolAttr, err)
	}
}

// TestConvMaxPoolCPUPlan runs conv2d_maxpool, a Conv with the max pool after it folded
// in (FusedMaxPoolPrefix), against the CPU reference: SqueezeNet's and ResNet-18's stem
// shapes in small (3 × 3 windows at stride 2, ceil_mode, padding; the kept conv row),
// 2 × 2 windows and dilated windows (no row kept), channels that leave a partial channel
// tile, groups, every activation path, rows of 8 pooled pixels and more (the transposed
// stores) and fewer, an output batch stride, and bands of pooled rows from one per image
// to many. Where the kernel does not run the layer (a residual, a 1-D Conv, a GPU's
// plan), the plain plan and maxpool_after.
func TestConvMaxPoolCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	pooled := func(a Attrs, pool Attrs) Attrs {
		for k, v := range pool {
			a[opspec.FusedMaxPoolPrefix+k] = v
		}
		return a
	}
	sq := Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "ceil_mode": 1}
	r18 := Attrs{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}
	cases := []opCase{
		{name: "squeezenet stem", attrs: pooled(Attrs{"strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu}, sq), in: shapes(sh(2, 3, 25, 26), sh(20, 3, 3, 3), sh(20)), out: shapes(sh(2, 20, 6, 6))},
		{name: "resnet stem", attrs: pooled(Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}, opspec.FusedActivationAttr: opspec.ActRelu}, r18), in: shapes(sh(1, 3, 20, 18), sh(16, 3, 7, 7), sh(16)), out: shapes(sh(1, 16, 5, 5))},
		{name: "wide rows 2x2 clip", attrs: pooled(Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(-0.2), opspec.FusedMaxAttr: float32(0.3)}, Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}}), in: shapes(sh(2, 4, 9, 38), sh(32, 4, 3, 3), sh(32)), out: shapes(sh(2, 32, 4, 19))},
		{name: "groups dilated pool leaky", attrs: pooled(Attrs{"group": 2, opspec.FusedActivationAttr: opspec.ActLeakyRelu, opspec.FusedAlphaAttr: float32(0.1)}, Attrs{"kernel_shape": []int{3, 3}, "dilations": []int{2, 2}, "pads": []int{0, 1, 2, 1}}), in: shapes(sh(1, 6, 13, 11), sh(12, 3, 3, 3)), out: shapes(sh(1, 12, 9, 7))},
		{name: "batch stride", attrs: pooled(Attrs{"strides": []int{2, 2}, opspec.OutputBatchStrideAttr: 24*3*9 + 5}, sq), in: shapes(sh(3, 3, 15, 39), sh(24, 3, 3, 3), sh(24)), out: shapes(sh(3, 24, 3, 9))},
	}
	tiles := []cpuConvTile{{16, 2, 8}, {16, 1, 5}, {8, 1, 4}, {4, 2, 3}}
	cpu := env.dev
	cpu.IsGPU = false // planned as for a CPU, whatever device the kernels run on
	many := cpu
	many.ComputeUnits = 64
	devs := []DeviceInfo{cpu, many}
	sw := newSweep(t, len(tiles)*len(devs), 2)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		var list []namedPlan
		for _, v := range sw.pick(ci) {
			tile, dev := tiles[v/len(devs)], devs[v%len(devs)]
			plan, ok, err := cpuConvMaxPoolPlan(geo, tile, dev)
			if err != nil || !ok {
				return nil, fmt.Errorf("tile %v: ok %v, %v", tile, ok, err)
			}
			if int64(plan.OutputBatchStride) != cases[ci].attrs.Int(opspec.OutputBatchStrideAttr, 0) {
				return nil, fmt.Errorf("plan's OutputBatchStride %d", plan.OutputBatchStride)
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %v on %d units", tile, dev.ComputeUnits), plan})
		}
		if ci > 0 && !fullSweeps {
			return list, nil // the tuner's candidates of one case; every case's under make test-full
		}
		cands, err := convOp{}.Candidates(cases[ci].attrs, cases[ci].in, cases[ci].out, cpu)
		for i, p := range cands {
			if k := p.Launches[len(p.Launches)-1].Kernel; k != "conv2d_maxpool" {
				return nil, fmt.Errorf("candidate %d runs %s", i, k)
			}
			list = append(list, namedPlan{fmt.Sprintf("candidate %d", i), p})
		}
		return list, err
	})
	// The reference's pooled Conv is its Conv and MaxPool.
	c := cases[1]
	ins := c.inputs()
	plain, _ := convOp{}.Reference(Attrs{"strides": []int{2, 2}, "pads": []int{3, 3, 3, 3}, opspec.FusedActivationAttr: opspec.ActRelu}, ins, shapes(sh(1, 16, 10, 9)))
	want, _ := poolOp{typ: "MaxPool", max: true}.Reference(r18, plain, c.out)
	fused, err := convOp{}.Reference(c.attrs, ins, c.out)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "reference", fused[0], want[0])

	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256, FloatVectorWidth: 1}
	after := []opCase{
		{name: "residual", attrs: pooled(Attrs{"pads": []int{1, 1, 1, 1}, opspec.OutputBatchStrideAttr: 8 * 4 * 4}, r18), in: shapes(sh(2, 4, 7, 8), sh(8, 4, 3, 3), sh(8), sh(2, 8, 7, 8)), out: shapes(sh(2, 8, 4, 4))},
		{name: "1-D", attrs: pooled(Attrs{}, Attrs{"kernel_shape": []int{3}, "strides": []int{2}}), in: shapes(sh(2, 3, 20), sh(5, 3, 3)), out: shapes(sh(2, 5, 8))},
		{name: "gpu", attrs: pooled(Attrs{"strides": []int{2, 2}, opspec.FusedActivationAttr: opspec.ActRelu}, sq), in: shapes(sh(2, 3, 25, 26), sh(20, 3, 3, 3), sh(20)), out: shapes(sh(2, 20, 6, 6))},
	}
	checkConvPlans(t, after, func(ci int, geo convGeom) ([]namedPlan, error) {
		c := after[ci]
		var list []namedPlan
		for _, dev := range []DeviceInfo{cpu, gpu} {
			plan, err := convOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				return nil, err
			}
			_, fused, _ := cpuConvMaxPoolPlan(geo, heuristicCPUTile(geo, dev), dev)
			last := plan.Launches[len(plan.Launches)-1].Kernel
			if (last == "conv2d_maxpool") != fused || !fused && (last != "maxpool_after" || plan.OutputBatchStride != 0) {
				return nil, fmt.Errorf("GPU %v: the plan ends in %s, OutputBatchStride %d", dev.IsGPU, last, plan.OutputBatchStride)
			}
			list = append(list, namedPlan{fmt.Sprintf("GPU %v", dev.IsGPU), plan})
		}
		return list, nil
	})
	if _, err := (convOp{}).OutputShapes(pooled(Attrs{opspec.FusedGlobalAveragePoolAttr: 1}, sq), shapes(sh(1, 4, 6, 6), sh(8, 4, 1, 1))); err == nil || !strings.Contains(err.Error(), "one pool") {
		t.Errorf("both pools: error %v", err)
	}
	if _, err := (convOp{}).OutputShapes(pooled(Attrs{}, Attrs{"kernel_shape": []int{3}}), shapes(sh(1, 4, 6, 6), sh(8, 4, 1, 1))); err == nil || !strings.Contains(err.Error(), opspec.FusedMaxPoolPrefix) {
		t.Errorf("a 1-D pool on a 2-D Conv: error %v", err)
	}
}

// TestConvOutputBatchStride runs every CPU conv kernel with its output's images spread
// apart (OutputBatchStrideAttr, as the host asks for when the output lies inside a
// Concat's): RunPlan fails on any write between the images, and the values must match
// the reference. The residual stays contiguous. The GPU's implicit GEMM runs too, with
// and without a split K.
func TestConvOutputBatchStride(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	with := func(a Attrs, per, extra int) Attrs {
		a[opspec.OutputBatchStrideAttr] = per + extra
		return a
	}
	p1 := []int{1, 1, 1, 1}
	cases := []opCase{
		{name: "3x3 rows", attrs: with(Attrs{"pads": p1, opspec.FusedActivationAttr: opspec.ActRelu}, 32*6*16, 5*6*16), in: shapes(sh(2, 8, 6, 16), sh(32, 8, 3, 3), sh(32), sh(2, 32, 6, 16)), out: shapes(sh(2, 32, 6, 16))},
		{name: "3x3 partial", attrs: with(Attrs{"pads": p1}, 20*5*7, 17), in: shapes(sh(3, 6, 5, 7), sh(20, 6, 3, 3), sh(20)), out: shapes(sh(3, 20, 5, 7))},
		{name: "1x1", attrs: with(Attrs{}, 24*8*8, 64), in: shapes(sh(2, 12, 8, 8), sh(24, 12, 1, 1), sh(24), sh(2, 24, 8, 8)), out: shapes(sh(2, 24, 8, 8))},
		{name: "1x1 stride2", attrs: with(Attrs{"strides": []int{2, 2}}, 18*4*5, 40), in: shapes(sh(2, 6, 8, 9), sh(18, 6, 1, 1), sh(18)), out: shapes(sh(2, 18, 4, 5))},
		{name: "stem", attrs: with(Attrs{"strides": []int{2, 2}}, 16*7*9, 3), in: shapes(sh(2, 3, 15, 19), sh(16, 3, 3, 3), sh(16)), out: shapes(sh(2, 16, 7, 9))},
		{name: "depthwise", attrs: with(Attrs{"group": 5, "pads": p1}, 5*6*11, 6*11), in: shapes(sh(2, 5, 6, 11), sh(5, 1, 3, 3), sh(5), sh(2, 5, 6, 11)), out: shapes(sh(2, 5, 6, 11))},
		{name: "1-D", attrs: with(Attrs{"pads": []int{1, 1}}, 7*9, 2), in: shapes(sh(2, 4, 9), sh(7, 4, 3), sh(7)), out: shapes(sh(2, 7, 9))},
	}
	// Every case runs its own Plan; each other kernel runs on the first case it fits
	// (on every one under make test-full).
	ran := map[string]bool{}
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		c := cases[ci]
		var list []namedPlan
		add := func(name string, p *Plan, err error) error {
			if err != nil {
				return err
			}
			if int64(p.OutputBatchStride) != c.attrs.Int(opspec.OutputBatchStrideAttr, 0) {
				return fmt.Errorf("%s: plan's OutputBatchStride %d, asked for %d", name, p.OutputBatchStride, c.attrs.Int(opspec.OutputBatchStrideAttr, 0))
			}
			if name == "Plan" || fullSweeps || !ran[name] {
				list = append(list, namedPlan{name, p})
			}
			ran[name] = true
			return nil
		}
		p, err := convOp{}.Plan(c.attrs, c.in, c.out, env.dev)
		if err := add("Plan", p, err); err != nil {
			return nil, err
		}
		if geo.nsp == 2 && geo.cg > 1 {
			p, err = cpuConvPlan(geo, cpuConvTile{16, 2, 8}, env.dev)
			if err := add("tile 16 2 8", p, err); err != nil {
				return nil, err
			}
			p, err = directConvPlan(geo, 4, 4, env.dev)
			if err := add("direct", p, err); err != nil {
				return nil, err
			}
		}
		if geo.pointwise() || geo.strided1x1() {
			p, err = cpu1x1Plan(geo, cpu1x1Tile{8, 4, 2, 0, 0}, env.dev)
			if err := add("gemm", p, err); err != nil {
				return nil, err
			}
		}
		if geo.nsp == 2 && geo.g == 1 {
			gpu := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024, FloatVectorWidth: 1}
			p, err = convOp{}.Plan(c.attrs, c.in, c.out, gpu)
			if err := add("gpu", p, err); err != nil {
				return nil, err
			}
			tile, _ := heuristicTile(geo, gpu)
			p, err = implicitGemmTiled(geo, false, tile, 3, gpu)
			if err := add("gpu split K", p, err); err != nil {
				return nil, err
			}
		}
		return list, nil
	})
	if _, err := (convOp{}).Plan(Attrs{opspec.OutputBatchStrideAttr: 5}, cases[2].in, cases[2].out, env.dev); err == nil {
		t.Error("a stride shorter than one output image is accepted")
	}
}

// TestCPULaunchGroups checks how small CPU kernels gather their work-items into about one
// work-group per compute unit, and runs every CPU conv kernel with its global size padded
// to whole groups (the padding's work-items must do nothing) against the reference.
func TestCPULaunchGroups(t *testing.T) {
	t.Parallel()
	dev := DeviceInfo{ComputeUnits: 16, MaxWorkGroupSize: 4096}
	for _, c := range []struct {
		global []int
		macs   int
		local  []int
	}{
		{[]int{1, 7, 35}, 1 << 20, []int{1, 7, 2}},  // 18 groups of 14
		{[]int{64}, 1 << 20, []int{4}},              // 16 groups of 4
		{[]int{100, 3}, 1 << 20, []int{19, 1}},      // 6 × 3 groups of 19
		{[]int{1, 7, 35}, 32 << 20, []int{1, 1, 1}}, // enough work for many groups
		{[]int{12}, 1, []int{1}},                    // fewer items than units
		{[]int{16 * 5000}, 1 << 20, []int{1}},       // groups over the size limit
	} {
		l := cpuLaunch("k", c.global, c.macs, nil, dev)
		if !slices.Equal(l.Local, c.local) {
			t.Errorf("global %v, %d MACs: local %v, want %v", c.global, c.macs, l.Local, c.local)
		}
		for i := range l.Global {
			if l.Global[i]%l.Local[i] != 0 || l.Global[i] < c.global[i] || l.Global[i]-c.global[i] >= l.Local[i] {
				t.Errorf("global %v, local %v: padded to %v", c.global, l.Local, l.Global)
			}
		}
	}

	two := DeviceInfo{ComputeUnits: 2, MaxWorkGroupSize: 4096, FloatVectorWidth: 8}
	padded := func(p *Plan) bool {
		l := p.Launches[len(p.Launches)-1]
		total := 1
		for i := range l.Global {
			total *= l.Global[i]
		}
		return total > 2 && l.Local[0]*l.Local[len(l.Local)-1] > 1
	}
	checkConvPlans(t, []opCase{
		{name: "channel tiles", attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(1, 3, 5, 9), sh(20, 3, 3, 3), sh(20)), out: shapes(sh(1, 20, 5, 9))},
		{name: "gemm", attrs: Attrs{}, in: shapes(sh(1, 4, 7, 9), sh(21, 4, 1, 1), sh(21)), out: shapes(sh(1, 21, 7, 9))},
		{name: "depthwise", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 5}, in: shapes(sh(1, 5, 9, 11), sh(5, 1, 3, 3), sh(5)), out: shapes(sh(1, 5, 9, 11))},
		// 3 items, 2 to a work-item: the last work-item runs out of items.
		{name: "gemm odd items", attrs: Attrs{}, in: shapes(sh(1, 4, 2, 3), sh(12, 4, 1, 1), sh(12)), out: shapes(sh(1, 12, 2, 3))},
	}, func(ci int, geo convGeom) ([]namedPlan, error) {
		gemm := ci == 1 || ci == 3
		var p *Plan
		var err error
		switch ci {
		case 0:
			p, err = cpuConvPlan(geo, cpuConvTile{8, 1, 4}, two)
		case 1, 3:
			p, err = cpu1x1Plan(geo, cpu1x1Tile{8, 4, 1, 0, 0}, two)
		default:
			var ok bool
			p, ok, err = cpuDepthwisePlan(geo, two)
			if err == nil && !ok {
				err = fmt.Errorf("no depthwise plan")
			}
		}
		// conv1x1 launches one work-item per group at every size, so that its layers
		// share one compiled work-group function, and gathers its items in the
		// work-items instead (its last argument, IPW; cpu1x1Plan).
		if err == nil && padded(p) != !gemm {
			err = fmt.Errorf("launch %+v: gathered into groups %v, want %v", p.Launches[len(p.Launches)-1], padded(p), !gemm)
		}
		if l := p.Launches[len(p.Launches)-1]; err == nil && gemm && l.Args[len(l.Args)-1].Int < 2 {
			err = fmt.Errorf("launch %+v: items not gathered into work-items", l)
		}
		return []namedPlan{{"grouped", p}}, err
	})
}

// TestOutputSpan: a buffer for a plan's output spans its images at the plan's batch
// stride (output 0 only), else the shape's elements.
func TestOutputSpan(t *testing.T) {
	strided := &Plan{OutputBatchStride: 100}
	for _, c := range []struct {
		plan  *Plan
		i     int
		shape []int
		want  int
	}{
		{strided, 0, []int{3, 4, 5}, 300},
		{strided, 1, []int{3, 4, 5}, 60},
		{&Plan{}, 0, []int{3, 4, 5}, 60},
		{strided, 0, []int{0, 4, 5}, 0},
	} {
		if got := c.plan.OutputSpan(c.i, c.shape); got != c.want {
			t.Errorf("stride %d, output %d of %v: %d, want %d", c.plan.OutputBatchStride, c.i, c.shape, got, c.want)
		}
	}
}
