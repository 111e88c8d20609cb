package builtinkernels

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/opspec"
)

// TestInvertedResidualPlan runs the fused 1×1 + depthwise layer against the two
// convolutions' references: the tiled CPU kernel over vector widths of 4, 8 and 16
// lanes, bands of one row to the whole plane (each band recomputing its neighbours'
// rows), strides 1 and 2, windows of 3 and 5, no padding and uneven padding, a partial
// last channel block and a partial last pixel step, each half's bias and activation, an
// output batch stride; whole blocks (pwdwp: the projection with and without its bias,
// residual and activation, partial channel blocks, stride 2); and the plain launches
// (GPUs, dilated windows).
func TestInvertedResidualPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	clip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(6)}
	blockClip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	type tcase struct {
		c     opCase
		tiled bool
	}
	cases := []tcase{
		{opCase{name: "mobile s1 partial channels", gen: "rwrwr", attrs: mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 21}),
			in: shapes(sh(2, 6, 10, 13), sh(21, 6, 1, 1), sh(21), sh(21, 1, 3, 3), sh(21)), out: shapes(sh(2, 21, 10, 13))}, true},
		{opCase{name: "s2 relu no biases", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "group": 16,
			opspec.ExpansionActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu},
			in: shapes(sh(1, 5, 17, 35), sh(16, 5, 1, 1), nil, sh(16, 1, 3, 3), nil), omit: []int{2, 4}, out: shapes(sh(1, 16, 9, 18))}, true},
		{opCase{name: "5x5 hardswish leaky", attrs: Attrs{"pads": []int{2, 2, 2, 2}, "group": 8, opspec.FusedActivationAttr: opspec.ActHardSwish,
			opspec.ExpansionActivationAttr: opspec.ActLeakyRelu, opspec.ExpansionAlphaAttr: float32(0.1)},
			in: shapes(sh(1, 3, 6, 40), sh(8, 3, 1, 1), sh(8), sh(8, 1, 5, 5), sh(8)), out: shapes(sh(1, 8, 6, 40))}, true},
		{opCase{name: "7x7 s2 from 14", attrs: mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "group": 40}),
			in: shapes(sh(2, 12, 14, 14), sh(40, 12, 1, 1), sh(40), sh(40, 1, 3, 3), sh(40)), out: shapes(sh(2, 40, 7, 7))}, true},
		{opCase{name: "no padding, even width at stride 2", attrs: Attrs{"group": 6, "strides": []int{2, 2}},
			in: shapes(sh(1, 4, 8, 8), sh(6, 4, 1, 1), sh(6), sh(6, 1, 3, 3), sh(6)), out: shapes(sh(1, 6, 3, 3))}, true},
		{opCase{name: "uneven pads", attrs: Attrs{"pads": []int{0, 2, 1, 0}, "group": 9},
			in: shapes(sh(1, 7, 9, 11), sh(9, 7, 1, 1), sh(9), sh(9, 1, 3, 3), sh(9)), out: shapes(sh(1, 9, 8, 11))}, true},
		{opCase{name: "output batch stride", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 6, opspec.OutputBatchStrideAttr: 6*8*9 + 13},
			in: shapes(sh(2, 5, 8, 9), sh(6, 5, 1, 1), sh(6), sh(6, 1, 3, 3), sh(6)), out: shapes(sh(2, 6, 8, 9))}, true},
		{opCase{name: "dilated", attrs: Attrs{"pads": []int{2, 2, 2, 2}, "dilations": []int{2, 2}, "group": 5},
			in: shapes(sh(1, 3, 9, 10), sh(5, 3, 1, 1), sh(5), sh(5, 1, 3, 3), sh(5)), out: shapes(sh(1, 5, 9, 10))}, false},
		// Whole blocks: the projection and its residual too.
		{opCase{name: "block s1 residual", gen: "rwrwrrrr", attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 20}),
			in: shapes(sh(2, 8, 9, 11), sh(20, 8, 1, 1), sh(20), sh(20, 1, 3, 3), sh(20), sh(8, 20, 1, 1), sh(8), sh(2, 8, 9, 11)), out: shapes(sh(2, 8, 9, 11))}, true},
		{opCase{name: "block s2 no biases relu", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}, "group": 40,
			opspec.ExpansionActivationAttr: opspec.ActRelu, opspec.DepthwiseActivationAttr: opspec.ActRelu, opspec.FusedActivationAttr: opspec.ActRelu},
			in: shapes(sh(1, 5, 13, 17), sh(40, 5, 1, 1), nil, sh(40, 1, 3, 3), nil, sh(11, 40, 1, 1), nil), omit: []int{2, 4, 6}, out: shapes(sh(1, 11, 7, 9))}, true},
		{opCase{name: "block 7x7 many channels", attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 70}),
			in: shapes(sh(1, 16, 7, 7), sh(70, 16, 1, 1), sh(70), sh(70, 1, 3, 3), sh(70), sh(19, 70, 1, 1), sh(19), sh(1, 19, 7, 7)), out: shapes(sh(1, 19, 7, 7))}, true},
		{opCase{name: "block output batch stride", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "group": 6, opspec.OutputBatchStrideAttr: 4*8*9 + 13},
			in: shapes(sh(2, 5, 8, 9), sh(6, 5, 1, 1), sh(6), sh(6, 1, 3, 3), sh(6), sh(4, 6, 1, 1), sh(4)), out: shapes(sh(2, 4, 8, 9))}, true},
		// A stem (a 3×3 stride-2 Conv of 3 channels) as the expansion, alone and with a
		// projection; uneven padding in both windows.
		{opCase{name: "stem s2 then depthwise", attrs: mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 24,
			opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3}, opspec.ExpansionWindowPrefix + "strides": []int{2, 2}, opspec.ExpansionWindowPrefix + "pads": []int{1, 1, 1, 1}}),
			in: shapes(sh(2, 3, 17, 21), sh(24, 3, 3, 3), sh(24), sh(24, 1, 3, 3), sh(24)), out: shapes(sh(2, 24, 9, 11))}, true},
		{opCase{name: "stem block uneven pads", gen: "rwrwrrr", attrs: mergeAttrs(blockClip, Attrs{"pads": []int{0, 1, 1, 0}, "strides": []int{2, 2}, "group": 40,
			opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3}, opspec.ExpansionWindowPrefix + "strides": []int{2, 2}, opspec.ExpansionWindowPrefix + "pads": []int{1, 0, 0, 1}}),
			in: shapes(sh(2, 3, 30, 27), sh(40, 3, 3, 3), sh(40), sh(40, 1, 3, 3), sh(40), sh(12, 40, 1, 1), sh(12)), out: shapes(sh(2, 12, 7, 6))}, true},
		{opCase{name: "block dilated", attrs: Attrs{"pads": []int{2, 2, 2, 2}, "dilations": []int{2, 2}, "group": 5},
			in: shapes(sh(1, 3, 9, 10), sh(5, 3, 1, 1), sh(5), sh(5, 1, 3, 3), sh(5), sh(3, 5, 1, 1), nil, sh(1, 3, 9, 10)), omit: []int{6}, out: shapes(sh(1, 3, 9, 10))}, false},
	}
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 8, MaxWorkGroupSize: 256}
	devices := []DeviceInfo{env.dev, gpu}
	// Made-up CPUs for the other vector widths, and a many-core one whose bands shrink to
	// single rows.
	for _, v := range []int{4, 8, 16} {
		d := env.dev
		d.FloatVectorWidth, d.ComputeUnits = v, 2
		devices = append(devices, d)
	}
	wide := env.dev
	wide.ComputeUnits = 64
	devices = append(devices, wide)
	// Every device's plan is checked for its kernel; the kernels run on one device per
	// case in turn (all under make test-full), and the tiles below on three per block.
	devSweep := newSweep(t, len(devices), 1)
	blocks := 0
	tileSweep := newSweep(t, 15, 3)
	for ci, tc := range cases {
		c := tc.c
		c.typ = opspec.InvertedResidualType
		ins := c.inputs()
		for _, i := range c.omit {
			c.in[i] = nil
		}
		want, err := invResOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		var g invResGeom
		if g, err = (invResOp{}).geometry(paramsOr(c.attrs), c.in); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		run := devSweep.pick(ci)
		for di, dev := range devices {
			plan, err := invResOp{}.Plan(c.attrs, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			tiled := plan.Launches[0].Kernel == "pwdw" || plan.Launches[0].Kernel == "pwdwp" || plan.Launches[0].Kernel == "pwdwr"
			if tiled != (tc.tiled && !dev.IsGPU) {
				t.Errorf("%s (GPU %v): runs %s", c.name, dev.IsGPU, plan.Launches[0].Kernel)
			}
			if !slices.Contains(run, di) {
				continue
			}
			tile, _ := chooseInvResTile(g, dev)
			devIn := placeholders(t, plan, ins, c.omit)
			got, err := RunPlan(env.ctx, q, plan, devIn, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s %s %+v", c.name, plan.Launches[0].Kernel, tile), got[0], want[0])
		}
		if g.proj == nil || !tc.tiled {
			continue
		}
		// Tiles beyond the chosen ones. pwdwr: bands of one row to the whole plane, groups
		// that leave a partial last group, projection tiles that leave partial channel
		// tiles and partial vectors, each vector width. pwdwp (no group of rows), which
		// runs where only its smaller buffers fit: bands of one and of several rows.
		oh := g.dw.win.out[0]
		tiles := []invResTile{
			{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 1, groupRows: 1, projChannels: 3, projPixels: 2},
			{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: oh, groupRows: 3, projChannels: 5, projPixels: 1},
			{vec: 4, chanVecs: 2, stepPixels: 8, bandRows: 3, groupRows: 2, projChannels: 7, projPixels: 3},
			{vec: 16, chanVecs: 1, stepPixels: 8, bandRows: 2, groupRows: 2, projChannels: 24, projPixels: 1},
			// Output channels in the lanes: tiles of whole and partial vectors of
			// channels, pixel tiles that straddle groups' ends.
			{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: oh, groupRows: 3, projChannels: 16, projPixels: 5, outLanes: true},
			{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 2, groupRows: 2, projChannels: 16, projPixels: 3, outLanes: true},
			{vec: 4, chanVecs: 2, stepPixels: 8, bandRows: 3, groupRows: 2, projChannels: 8, projPixels: 7, outLanes: true},
			{vec: 16, chanVecs: 1, stepPixels: 8, bandRows: 1, groupRows: 1, projChannels: 32, projPixels: 1, outLanes: true},
			// Three channel vectors per block (a partial last block where the channels
			// are not a multiple of 3V), in both projection layouts.
			{vec: 16, chanVecs: 3, stepPixels: 9, bandRows: oh, groupRows: 2, projChannels: 32, projPixels: 9, outLanes: true},
			{vec: 4, chanVecs: 3, stepPixels: 5, bandRows: 2, groupRows: 1, projChannels: 6, projPixels: 2},
			{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 1},
			{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 3},
			// Groups claimed at run time (DYN): bands of several groups, whole planes,
			// single rows, both projection layouts.
			{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 3, groupRows: 1, projChannels: 16, projPixels: 5, outLanes: true, claimGroups: true},
			{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: oh, groupRows: 2, projChannels: 3, projPixels: 2, claimGroups: true},
			{vec: 4, chanVecs: 2, stepPixels: 8, bandRows: 1, groupRows: 1, projChannels: 8, projPixels: 7, outLanes: true, claimGroups: true},
		}
		if len(tiles) != tileSweep.n {
			t.Fatalf("%d tiles, the sweep is of %d", len(tiles), tileSweep.n)
		}
		picked := tileSweep.pick(blocks)
		blocks++
		for _, ti := range picked {
			tile := tiles[ti]
			kernel := "pwdwp"
			if tile.groupRows > 0 {
				kernel = "pwdwr"
			}
			plan, err := invResOp{}.plan(c.attrs, c.in, c.out, env.dev, &tile)
			if err != nil {
				t.Fatalf("%s %+v: %v", c.name, tile, err)
			}
			if plan.Launches[0].Kernel != kernel {
				t.Fatalf("%s %+v: runs %s, want %s", c.name, tile, plan.Launches[0].Kernel, kernel)
			}
			got, err := RunPlan(env.ctx, q, plan, placeholders(t, plan, ins, c.omit), c.out)
			if err != nil {
				t.Fatalf("%s %+v: %v", c.name, tile, err)
			}
			compare(t, fmt.Sprintf("%s %s %+v", c.name, kernel, tile), got[0], want[0])
		}
	}

	// Inputs that are not a 1×1 and a depthwise convolution are refused by name.
	bad := []struct {
		attrs Attrs
		in    [][]int
		want  string
	}{
		{Attrs{"group": 2}, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 3, 3, 3)), "group = input channels"},
		{Attrs{"group": 6}, shapes(sh(1, 4, 5, 5), sh(6, 4, 3, 3), nil, sh(6, 1, 3, 3)), "1×1 W"},
		{Attrs{"group": 6}, shapes(sh(1, 4, 5, 5), sh(6, 5, 1, 1), nil, sh(6, 1, 3, 3)), "expansion (1×1 or stem) half"},
		{Attrs{"group": 6, opspec.ExpansionWindowPrefix + "kernel_shape": []int{2, 2}}, shapes(sh(1, 4, 5, 5), sh(6, 4, 3, 3), nil, sh(6, 1, 3, 3)), "kernel_shape [2 2] does not match"},
		{Attrs{"group": 6, opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3}, opspec.ExpansionWindowPrefix + "strides": []int{0, 0}}, shapes(sh(1, 4, 5, 5), sh(6, 4, 3, 3), nil, sh(6, 1, 3, 3)), "strides [0 0]"},
		{Attrs{"group": 6}, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1)), "4 to 8"},
		{Attrs{"group": 6}, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 1, 3, 3), nil, sh(3, 6, 3, 3)), "projection W"},
		{Attrs{"group": 6}, shapes(sh(1, 4, 5, 5), sh(6, 4, 1, 1), nil, sh(6, 1, 3, 3), nil, nil, sh(3)), "4 to 8"},
	}
	for _, b := range bad {
		if _, err := (invResOp{}).OutputShapes(b.attrs, b.in); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v: error %v, want one naming %q", b.in, err, b.want)
		}
	}
}

// invResTestGeom is the geometry of a 1×1 convolution from c to m channels of an n×h×w
// input and a 3×3 depthwise one (padding 1, stride s) after it, with a projection to o
// channels where o is above 0.
func invResTestGeom(t *testing.T, n, c, m, h, w, s, o int) invResGeom {
	t.Helper()
	p := Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{s, s}, "group": m}
	in := shapes(sh(n, c, h, w), sh(m, c, 1, 1), nil, sh(m, 1, 3, 3))
	if o > 0 {
		in = append(in, nil, sh(o, m, 1, 1))
	}
	g, err := invResOp{}.geometry(p, in)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestChooseInvResTile: bands as tall as the buffer allows, halved until every compute
// unit has two work-items; no tile where the buffer cannot hold the window's rows.
func TestChooseInvResTile(t *testing.T) {
	geom := func(n, c, m, h, w, s int) invResGeom { return invResTestGeom(t, n, c, m, h, w, s, 0) }
	cpu := DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16}
	type tileCase struct {
		name string
		g    invResGeom
		dev  DeviceInfo
		want invResTile
		ok   bool
	}
	cases := []tileCase{
		// 144 channels take two vectors (32 channels, 5 blocks); 58 columns × 128 bytes:
		// 13 rows of the 96 KB fit, 11 output rows; 16 images need no more bands.
		{"56x56 b16", geom(16, 24, 144, 56, 56, 1), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 11}, true},
		// At batch 1, 5 blocks × 6 bands = 30 items < 32: bands of 6 rows make 50.
		{"56x56 b1", geom(1, 24, 144, 56, 56, 1), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 6}, true},
		// 14×14 at batch 1: 18 blocks; bands of 7 rows make 36.
		{"14x14 b1", geom(1, 96, 576, 14, 14, 1), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 7}, true},
		// 12 blocks: bands of 7 rows make 24, of 4 rows 48.
		{"14x14 384 b1", geom(1, 64, 384, 14, 14, 1), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 4}, true},
		// Stride 2 from 112 wide: 113 columns (14464 bytes), 6 rows, 2 output rows.
		{"112 s2", geom(1, 16, 96, 112, 112, 2), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 2}, true},
		// 8 channels take 8 lanes.
		{"8 channels", geom(1, 4, 8, 10, 10, 1), cpu, invResTile{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 1}, true},
		{"gpu", geom(1, 4, 8, 10, 10, 1), DeviceInfo{IsGPU: true, FloatVectorWidth: 1}, invResTile{}, false},
		{"row too wide", geom(1, 4, 64, 4, 300, 1), cpu, invResTile{}, false},
	}
	// A stem (3×3 at stride 2 of 3 channels) as the expansion.
	stemGeom := func(m, h, w int) invResGeom {
		g, err := invResOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}, "group": m, opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3},
			opspec.ExpansionWindowPrefix + "strides": []int{2, 2}, opspec.ExpansionWindowPrefix + "pads": []int{1, 1, 1, 1}},
			shapes(sh(1, 3, h, w), sh(m, 3, 3, 3), nil, sh(m, 1, 3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// A stem of 16 channels over a row of 1000 pixels: the buffer holds three expanded
	// rows (502 columns × 64 bytes), but the copy of the input rows a row's windows reach
	// would take 3 × 3 × 1009 columns × 4 bytes = 36 KB, over maxStemStage.
	wide := stemGeom(16, 8, 1000)
	if tl, ok := invResTileFor(wide, cpu); !ok || stemStageBytes(wide, tl.stepPixels) != 3*3*1009*4 {
		t.Errorf("wide stem: tile %+v %v, stage %d bytes; want a tile of the buffer's bounds, 36324 bytes", tl, ok, stemStageBytes(wide, tl.stepPixels))
	}
	cases = append(cases, tileCase{"wide stem", wide, cpu, invResTile{}, false},
		// MobileNetV2's stem (3 → 32 channels from 224): its 32 channels take two
		// vectors, so one channel block reads each input tap once, 8 pixels per step.
		// 114 columns × 128 bytes: 6 rows of the 96 KB fit, 4 output rows; 28 bands,
		// fewer than two per unit, so bands of 2 rows.
		tileCase{"stem", stemGeom(32, 224, 224), cpu, invResTile{vec: 16, chanVecs: 2, stepPixels: 8, bandRows: 2}, true})
	for _, c := range cases {
		got, ok := chooseInvResTile(c.g, c.dev)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestChooseRollingTile: a block (with its projection) runs as pwdwr in bands that give
// every compute unit two, in the group of rows and projection tile that waste the fewest
// lanes and loads within opspec.InvResRollingBuffer and the registers, its groups
// claimed at run time (claimGroups) where a band holds more than one; as pwdwp where
// only its smaller buffers fit.
func TestChooseRollingTile(t *testing.T) {
	geom := func(n, c, m, hw, s, o int) invResGeom { return invResTestGeom(t, n, c, m, hw, hw, s, o) }
	avx512 := DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 16}
	avx := DeviceInfo{ComputeUnits: 16, FloatVectorWidth: 8}
	cases := []struct {
		name string
		g    invResGeom
		dev  DeviceInfo
		want invResTile
	}{
		// 16 images, 2 bands each of 28 rows. 144 channels take three vectors (3 blocks
		// of 48; two would compute 160). The 24 outputs fill three quarters of two
		// vectors: they take the lanes, 2 vectors × 12 pixels. 144 channels × 58 columns:
		// groups of 4 rows reach 6 input rows, 4 × 56 = 224 depthwise results (228 for
		// whole pixel tiles), 331 KB; 5 rows would take 400 KB.
		{"56x56 b16", geom(16, 24, 144, 56, 1, 24), avx512, invResTile{vec: 16, chanVecs: 3, stepPixels: 9, bandRows: 28, groupRows: 4, projChannels: 32, projPixels: 12, outLanes: true, claimGroups: true}},
		// 16 input channels: three channel vectors though two fit the 96 channels too.
		// 96 channels × 113 columns: groups of 3 rows reach 7 input rows, 168
		// depthwise results (176 for whole vectors), 371 KB; 4 rows would take 478 KB.
		{"112 s2 b16", geom(16, 16, 96, 112, 2, 24), avx512, invResTile{vec: 16, chanVecs: 3, stepPixels: 9, bandRows: 28, groupRows: 3, projChannels: 32, projPixels: 12, outLanes: true, claimGroups: true}},
		// 32 input channels keep two.
		{"28x28 b16 s2", geom(16, 32, 192, 28, 2, 64), avx512, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 7, groupRows: 6, projChannels: 32, projPixels: 12, outLanes: true, claimGroups: true}},
		// With 8 lanes the 24 outputs are 3 whole vectors: they stay in the lanes, one
		// vector × 12 pixels (12 registers), groups as tall as the buffers allow.
		{"56x56 b16 AVX", geom(16, 24, 144, 56, 1, 24), avx, invResTile{vec: 8, chanVecs: 2, stepPixels: 6, bandRows: 28, groupRows: 4, projChannels: 8, projPixels: 12, outLanes: true, claimGroups: true}},
		// 64 outputs, 4 whole vectors: two of them × 12 pixels; bands of 7 rows (16
		// images × 2 bands), one group per band: 384 channels × (9 rows × 16 columns
		// + 112 pixels) × 4 bytes = 384 KB.
		{"14x14 b16", geom(16, 64, 384, 14, 1, 64), avx512, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 7, groupRows: 7, projChannels: 32, projPixels: 12, outLanes: true}},
		// 32 outputs of 28-wide rows: groups of 7 rows (359 KB; 8 would take 393).
		{"28x28 b16", geom(16, 32, 192, 28, 1, 32), avx512, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 14, groupRows: 7, projChannels: 32, projPixels: 12, outLanes: true, claimGroups: true}},
		// One image: 14 bands of one row; a row of 14 pixels fills one vector of 16, and
		// 24 channels at a time (96 = 4 × 24) use every register. Output channels in the
		// lanes would compute 24 pixels for the row's 14.
		{"14x14 b1", geom(1, 96, 576, 14, 1, 96), avx512, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 1, groupRows: 1, projChannels: 24, projPixels: 1}},
		// 512 channels of 57 columns at stride 2: one output row's buffers take 406 KB,
		// more than pwdwr's 384; pwdwp's (a 32-channel block's rows, the row's depthwise
		// results) take 85 KB.
		{"wide stride 2", geom(1, 32, 512, 56, 2, 64), avx512, invResTile{vec: 16, chanVecs: 2, stepPixels: 12, bandRows: 1}},
	}
	for _, c := range cases {
		got, ok := chooseInvResTile(c.g, c.dev)
		if got != c.want || !ok {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, ok, c.want)
		}
		if got.groupRows > 0 {
			if b := rollingBytes(c.g, got, got.groupRows, got.projPixels); b > opspec.InvResRollingBuffer {
				t.Errorf("%s: %d bytes of buffers, over %d", c.name, b, opspec.InvResRollingBuffer)
			}
		}
	}
}

// BenchmarkBlockCPU compares MobileNetV2's inverted residual blocks at batch 16 run as
// one pwdwr launch ("rolling") with the expansion and depthwise layer as pwdw followed by
// the projection's own conv1x1 plan (two sub-benchmarks, "pwdw" and "proj", whose times
// add up to the peer), and with pwdwp where it applies. GFLOP/s counts the block's work.
func BenchmarkBlockCPU(b *testing.B) {
	env := deviceEnvB(b)
	clip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	blocks := []struct {
		name              string
		c, m, hw, s, o, n int
		residual          bool
	}{
		{"16_96_112_s2_24", 16, 96, 112, 2, 24, 16, false},
		{"24_144_56_24", 24, 144, 56, 1, 24, 16, true},
		{"24_144_56_s2_32", 24, 144, 56, 2, 32, 16, false},
		{"32_192_28_32", 32, 192, 28, 1, 32, 16, true},
		{"64_384_14_64", 64, 384, 14, 1, 64, 16, true},
		{"96_576_14_96", 96, 576, 14, 1, 96, 16, true},
		{"160_960_7_160", 160, 960, 7, 1, 160, 16, true},
		{"160_960_7_320", 160, 960, 7, 1, 320, 16, false},
		{"24_144_56_24_b1", 24, 144, 56, 1, 24, 1, true},
		{"160_960_7_160_b1", 160, 960, 7, 1, 160, 1, true},
	}
	for _, bl := range blocks {
		oh := (bl.hw-1)/bl.s + 1
		attrs := mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{bl.s, bl.s}, "group": bl.m})
		in := shapes(sh(bl.n, bl.c, bl.hw, bl.hw), sh(bl.m, bl.c, 1, 1), sh(bl.m), sh(bl.m, 1, 3, 3), sh(bl.m), sh(bl.o, bl.m, 1, 1), sh(bl.o))
		if bl.residual {
			in = append(in, sh(bl.n, bl.o, oh, oh))
		}
		out := shapes(sh(bl.n, bl.o, oh, oh))
		c := opCase{name: bl.name, typ: opspec.InvertedResidualType, attrs: attrs, in: in, out: out}
		ins := c.inputs()
		g, err := invResOp{}.geometry(paramsOr(attrs), in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(g.pw.macs()+g.dw.macs()+g.proj.macs())
		mid := shapes(sh(bl.n, bl.m, oh, oh))
		pwdwAttrs := mergeAttrs(attrs, Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(6)})
		pwdw, err := invResOp{}.Plan(pwdwAttrs, in[:5], mid, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		benchPlans(b, env, bl.name, []namedPlan{{"pwdw", pwdw}}, ins[:5], mid, flops)
		projIn := append(shapes(mid[0]), in[5:]...)
		proj, err := convOp{}.Plan(Attrs{}, projIn, out, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		benchPlans(b, env, bl.name, []namedPlan{{"proj", proj}}, opCase{name: bl.name + "p", in: projIn}.inputs(), out, flops)
		rolling, err := invResOp{}.Plan(attrs, in, out, env.dev)
		if err != nil {
			b.Fatal(err)
		}
		t, _ := chooseInvResTile(g, env.dev)
		plans := []namedPlan{{fmt.Sprintf("rolling_%d_%d_%d_%d", t.bandRows, t.groupRows, t.projChannels, t.projPixels), rolling}}
		if rows := bandedBlockRows(g, t.vec, t.chanVecs, env.dev); rows > 0 {
			pt := t
			pt.bandRows, pt.groupRows = rows, 0
			p, err := invResOp{}.plan(attrs, in, out, env.dev, &pt)
			if err != nil {
				b.Fatal(err)
			}
			plans = append(plans, namedPlan{fmt.Sprintf("pwdwp_%d", rows), p})
		}
		benchPlans(b, env, bl.name, plans, ins, out, flops)
	}
}

// BenchmarkBlockTilesCPU runs MobileNetV2's blocks with projections (the stem and first
// block, the 112-, 56-, 28- and 14-row ones, strided or not) as the network runs them at
// batch 16 split in halves: batch 8, planned for half the compute units. "plan" is the
// block's own plan, "pixel" pwdwr with pixels in the projection's lanes
// (rollingPixelLanesTile), "lanes" output channels in the lanes; cvC_gG_MxN names C
// channel vectors per block (where the plan takes three, the choices with two run too),
// groups of G rows and projection tiles of M channels × N pixels (vectors of them for
// "pixel").
// Findings of earlier sweeps: docs/kernels/invres.md#rollingpixellanestile-pixels-in-the-lanes.
func BenchmarkBlockTilesCPU(b *testing.B) {
	env := deviceEnvB(b)
	dev := env.dev
	dev.ComputeUnits = max(dev.ComputeUnits/2, 1)
	clip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	const n = 8
	for _, bl := range []struct {
		c, m, hw, s, o int
		stem, residual bool
	}{
		{3, 32, 224, 1, 16, true, false},
		{16, 96, 112, 2, 24, false, false},
		{24, 144, 56, 1, 24, false, true},
		{24, 144, 56, 2, 32, false, false},
		{32, 192, 28, 1, 32, false, true},
		{32, 192, 28, 2, 64, false, false},
		{64, 384, 14, 1, 64, false, true},
		{64, 384, 14, 1, 96, false, false},
		{96, 576, 14, 1, 96, false, true},
	} {
		attrs := mergeAttrs(clip, Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{bl.s, bl.s}, "group": bl.m})
		ih, kw := bl.hw, 1
		if bl.stem {
			attrs = mergeAttrs(attrs, Attrs{opspec.ExpansionWindowPrefix + "kernel_shape": []int{3, 3},
				opspec.ExpansionWindowPrefix + "strides": []int{2, 2}, opspec.ExpansionWindowPrefix + "pads": []int{1, 1, 1, 1}})
			ih, kw = bl.hw/2, 3
		}
		oh := (ih-1)/bl.s + 1
		in := shapes(sh(n, bl.c, bl.hw, bl.hw), sh(bl.m, bl.c, kw, kw), sh(bl.m), sh(bl.m, 1, 3, 3), sh(bl.m), sh(bl.o, bl.m, 1, 1), sh(bl.o))
		if bl.residual {
			in = append(in, sh(n, bl.o, oh, oh))
		}
		out := shapes(sh(n, bl.o, oh, oh))
		name := fmt.Sprintf("%d_%d_%d_s%d_%d", bl.c, bl.m, bl.hw, bl.s, bl.o)
		cs := opCase{name: name, typ: opspec.InvertedResidualType, attrs: attrs, in: in, out: out}
		g, err := invResOp{}.geometry(paramsOr(attrs), in)
		if err != nil {
			b.Fatal(err)
		}
		own, err := invResOp{}.Plan(attrs, in, out, dev)
		if err != nil {
			b.Fatal(err)
		}
		plans := []namedPlan{{"plan", own}}
		t, _ := chooseInvResTile(g, dev)
		tiles := []invResTile{}
		if pt, ok := rollingPixelLanesTile(g, t); ok {
			tiles = append(tiles, pt)
		}
		if t.chanVecs == 3 {
			// The same choice with two channel vectors per block.
			t2 := t
			t2.chanVecs, t2.stepPixels = 2, 12
			if rt, ok := rollingTile(g, t2, dev); ok {
				tiles = append(tiles, rt)
				if pt, ok := rollingPixelLanesTile(g, rt); ok {
					tiles = append(tiles, pt)
				}
			}
		}
		if t.outLanes {
			for _, v := range [][2]int{{1, 24}, {2, 12}, {3, 8}, {4, 6}, {6, 4}} {
				vt := t
				vt.projChannels, vt.projPixels = v[0]*t.vec, v[1]
				if vt.projChannels <= ceilDiv(bl.o, t.vec)*t.vec && vt != t && rollingBytes(g, vt, vt.groupRows, vt.projPixels) <= 2*opspec.InvResRollingBuffer {
					tiles = append(tiles, vt)
				}
			}
		}
		if t.claimGroups {
			// The same bands each taken whole by its work-item.
			st := t
			st.claimGroups = false
			tiles = append(tiles, st)
		}
		for _, vt := range tiles {
			p, err := invResOp{}.plan(attrs, in, out, dev, &vt)
			if err != nil {
				b.Fatal(err)
			}
			label := fmt.Sprintf("pixel_cv%d_g%d_%dx%d", vt.chanVecs, vt.groupRows, vt.projChannels, vt.projPixels)
			if vt.outLanes {
				label = fmt.Sprintf("lanes_cv%d_g%d_%dx%d", vt.chanVecs, vt.groupRows, vt.projChannels, vt.projPixels)
			}
			if vt.groupRows > 0 && !vt.claimGroups {
				label = "static_" + label
			}
			plans = append(plans, namedPlan{label, p})
		}
		plans = append(plans, namedPlan{"plan_again", own})
		flops := 2.0 * float64(g.pw.macs()+g.dw.macs()+g.proj.macs())
		benchPlans(b, env, name, plans, cs.inputs(), out, flops)
	}
}

// TestRollingClaims runs pwdwr with its groups claimed at run time (DYN) three times on the
// same buffers, a new input and residual each time: every run must match the reference
// (a launch that found its counters left over from the run before would claim nothing
// and leave the last run's output), and leave its counters zero. The thieves' tile takes
// every group from a range's back, expanding its rows afresh, whatever order PoCL runs
// the work-items in.
func TestRollingClaims(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	blockClip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	c := opCase{name: "claims", typ: opspec.InvertedResidualType, attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 24}),
		in:  shapes(sh(3, 8, 11, 9), sh(24, 8, 1, 1), sh(24), sh(24, 1, 3, 3), sh(24), sh(12, 24, 1, 1), sh(12), sh(3, 12, 11, 9)),
		out: shapes(sh(3, 12, 11, 9))}
	for _, tile := range []invResTile{
		{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 4, groupRows: 1, projChannels: 16, projPixels: 5, outLanes: true, claimGroups: true},
		{vec: 8, chanVecs: 2, stepPixels: 8, bandRows: 6, groupRows: 2, projChannels: 3, projPixels: 2, claimGroups: true},
		{vec: 8, chanVecs: 1, stepPixels: 8, bandRows: 4, groupRows: 1, projChannels: 16, projPixels: 5, outLanes: true, claimGroups: true, thieves: true},
		{vec: 4, chanVecs: 2, stepPixels: 8, bandRows: 11, groupRows: 3, projChannels: 5, projPixels: 1, claimGroups: true, thieves: true},
	} {
		plan, err := invResOp{}.plan(c.attrs, c.in, c.out, env.dev, &tile)
		if err != nil {
			t.Fatalf("%+v: %v", tile, err)
		}
		if len(plan.Counters) != 1 {
			t.Fatalf("%+v: counters %v, want one buffer", tile, plan.Counters)
		}
		prog, err := env.ctx.BuildProgram(plan.Source, strings.TrimSpace(plan.Options+" "+testBuildOptions))
		if err != nil {
			t.Fatal(err)
		}
		var bufs []*cl.Buffer
		mk := func(bytes int) *cl.Buffer {
			b, err := env.ctx.NewBuffer(cl.MemReadWrite, max(bytes, 4))
			if err != nil {
				t.Fatal(err)
			}
			bufs = append(bufs, b)
			if err := q.Write(b, 0, make([]byte, max(bytes, 4)), nil); err != nil {
				t.Fatal(err)
			}
			return b
		}
		ins := c.inputs()
		inB := make([]*cl.Buffer, len(ins))
		for i, in := range ins {
			inB[i] = mk(4 * len(in.Data))
			if err := q.Write(inB[i], 0, floatsToBytes(in.Data), nil); err != nil {
				t.Fatal(err)
			}
		}
		outB := []*cl.Buffer{mk(4 * numel(c.out[0]))}
		var scr []*cl.Buffer
		for _, s := range plan.Scratch {
			scr = append(scr, mk(s))
		}
		run := func(ls []Launch) {
			for _, l := range ls {
				k, err := prog.Kernel(l.Kernel)
				if err != nil {
					t.Fatal(err)
				}
				if err := SetArgs(k, l.Args, Refs(inB), Refs(outB), Refs(scr)); err != nil {
					t.Fatal(err)
				}
				ev, err := q.EnqueueNDRange(k, l.Global, l.Local, nil)
				if err != nil {
					t.Fatal(err)
				}
				ev.Release()
				if err := q.Finish(); err != nil {
					t.Fatal(err)
				}
				k.Release()
			}
		}
		run(plan.Setup)
		for r := 0; r < 3; r++ {
			// A new image batch and residual each run.
			for _, i := range []int{0, 7} {
				for j := range ins[i].Data {
					ins[i].Data[j] = float32(math.Sin(float64(j*(r+3)+i))) * 1.5
				}
				if err := q.Write(inB[i], 0, floatsToBytes(ins[i].Data), nil); err != nil {
					t.Fatal(err)
				}
			}
			run(plan.Launches)
			want, err := invResOp{}.Reference(c.attrs, ins, c.out)
			if err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, 4*numel(c.out[0]))
			if err := q.Read(outB[0], 0, raw, nil); err != nil {
				t.Fatal(err)
			}
			compare(t, fmt.Sprintf("%+v run %d", tile, r), &HostTensor{Shape: c.out[0], Data: bytesToFloats(raw)}, want[0])
			ctr := make([]byte, plan.Scratch[plan.Counters[0]])
			if err := q.Read(scr[plan.Counters[0]], 0, ctr, nil); err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(ctr, func(b byte) bool { return b != 0 }) {
				t.Errorf("%+v run %d: counters left at % x", tile, r, ctr)
			}
		}
		for _, b := range bufs {
			b.Release()
		}
		prog.Release()
	}
}

// TestFusedBlockOneItemPerGroup: the fused block kernels launch one work-item per group
// even where the block is small for the device's compute units (MobileNetV2's blocks at
// batch 1 on 16 cores), where other CPU kernels gather theirs into groups: PoCL compiles
// a grouped launch of these long bodies far slower, for no speed.
func TestFusedBlockOneItemPerGroup(t *testing.T) {
	blockClip := Attrs{opspec.ExpansionActivationAttr: opspec.ActClip, opspec.ExpansionMinAttr: float32(0), opspec.ExpansionMaxAttr: float32(6),
		opspec.DepthwiseActivationAttr: opspec.ActClip, opspec.DepthwiseMinAttr: float32(0), opspec.DepthwiseMaxAttr: float32(6)}
	// MobileNetV2's features.4: 32 channels at 28×28, expanded to 192, projected to 32.
	block := opCase{attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 192}),
		in:  shapes(sh(1, 32, 28, 28), sh(192, 32, 1, 1), sh(192), sh(192, 1, 3, 3), sh(192), sh(32, 192, 1, 1), sh(32), sh(1, 32, 28, 28)),
		out: shapes(sh(1, 32, 28, 28))}
	noProj := opCase{attrs: mergeAttrs(blockClip, Attrs{"pads": []int{1, 1, 1, 1}, "group": 192}),
		in:  shapes(sh(1, 32, 28, 28), sh(192, 32, 1, 1), sh(192), sh(192, 1, 3, 3), sh(192)),
		out: shapes(sh(1, 192, 28, 28))}
	dev := DeviceInfo{ComputeUnits: 16, MaxWorkGroupSize: 4096, LocalMemBytes: 1 << 20, FloatVectorWidth: 16}
	for _, c := range []opCase{block, noProj} {
		plan, err := invResOp{}.Plan(c.attrs, c.in, c.out, dev)
		if err != nil {
			t.Fatal(err)
		}
		l := plan.Launches[0]
		if !strings.HasPrefix(l.Kernel, "pwdw") {
			t.Fatalf("runs %s, want a fused block kernel", l.Kernel)
		}
		for _, v := range l.Local {
			if v != 1 {
				t.Errorf("%s: local %v (global %v), want one work-item per group", l.Kernel, l.Local, l.Global)
				break
			}
		}
	}
	// A plain convolution of the same size is grouped on that device: the case is one
	// where cpuLaunch would group.
	if l := cpuLaunch("k", []int{28, 1}, 11<<20, nil, dev); l.Local[0] == 1 {
		t.Errorf("cpuLaunch of 11M multiply-adds on 16 units: local %v, want grouped", l.Local)
	}
}
