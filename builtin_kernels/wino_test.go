package builtinkernels

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestConvWinogradCPUPlan runs wino_cpu.cl against the Conv reference (1e-4 relative,
// as every kernel) over every vector width and segment width: rows that segments fill,
// overlap (the last moved left) or overrun (narrower than a segment), odd output sizes
// (a half tile at the right and bottom), bands whose last rows lie past the output,
// partial channel chunks and channel blocks, several register tiles, asymmetric and no
// padding, batches, the fused work, and an output batch stride.
func TestConvWinogradCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	pad1 := []int{1, 1, 1, 1}
	cases := []opCase{
		{name: "28 wide", attrs: Attrs{"pads": pad1}, in: shapes(sh(1, 8, 6, 28), sh(20, 8, 3, 3), sh(20)), out: shapes(sh(1, 20, 6, 28))},
		{name: "odd relu batch2", attrs: Attrs{"pads": pad1, opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(2, 5, 9, 11), sh(12, 5, 3, 3), sh(12)), out: shapes(sh(2, 12, 9, 11))},
		{name: "asym pads", attrs: Attrs{"pads": []int{0, 2, 2, 0}}, in: shapes(sh(1, 3, 7, 13), sh(10, 3, 3, 3), sh(10)), out: shapes(sh(1, 10, 7, 13))},
		{name: "residual clip nobias", attrs: Attrs{"pads": pad1, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(-0.5), opspec.FusedMaxAttr: float32(1)},
			in: shapes(sh(1, 40, 6, 7), sh(24, 40, 3, 3), nil, sh(1, 24, 6, 7)), out: shapes(sh(1, 24, 6, 7))},
		{name: "no pad partial block", attrs: Attrs{}, in: shapes(sh(1, 4, 10, 10), sh(33, 4, 3, 3), sh(33)), out: shapes(sh(1, 33, 8, 8))},
		{name: "70 wide", attrs: Attrs{"pads": pad1}, in: shapes(sh(1, 3, 4, 70), sh(8, 3, 3, 3), sh(8)), out: shapes(sh(1, 8, 4, 70))},
		{name: "2x2", attrs: Attrs{"pads": pad1}, in: shapes(sh(3, 2, 2, 2), sh(5, 2, 3, 3), sh(5)), out: shapes(sh(3, 5, 2, 2))},
		{name: "batch stride residual", attrs: Attrs{"pads": pad1, opspec.OutputBatchStrideAttr: 18 * 14 * 14, opspec.FusedActivationAttr: opspec.ActRelu},
			in: shapes(sh(2, 17, 14, 14), sh(9, 17, 3, 3), sh(9), sh(2, 9, 14, 14)), out: shapes(sh(2, 9, 14, 14))},
	}
	// Each case runs the device's own choice and some of the layouts, in turn.
	layouts := [][5]int{{16, 16, 0, 1, 2}, {16, 8, 16, 2, 4}, {16, 4, 8, 1, 2}, {8, 8, 0, 3, 4}, {8, 4, 8, 1, 2}, {4, 4, 4, 4, 4}, {16, 16, 8, 1, 4}, {16, 4, 0, 2, 2}, {16, 4, 0, 1, 4}, {16, 8, 8, 1, 2}}
	sw := newSweep(t, len(layouts), 2)
	checkConvPlans(t, cases, func(ci int, geo convGeom) ([]namedPlan, error) {
		if !geo.winograd() {
			return nil, fmt.Errorf("not a Winograd layer")
		}
		tiles := []winoTile{chooseWinoTile(geo, env.dev)}
		for _, li := range sw.pick(ci) {
			l := layouts[li]
			tiles = append(tiles, winoBlocks(geo, winoLayout(geo, l[4], l[0], l[1], l[3]), l[2], env.dev))
		}
		var list []namedPlan
		for _, tile := range tiles {
			plan, ok, err := winoPlan(geo, tile, env.dev)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("tile %+v refused", tile)
			}
			list = append(list, namedPlan{fmt.Sprintf("tile %+v", tile), plan})
		}
		return list, nil
	})
}

// TestChooseWinoTile checks the blocking chosen for ResNet-18's and SqueezeNet's 3×3
// layers on a 16-lane, 16-unit CPU (4×4 tiles except on 7×7 planes; segments that fit
// the rows; the most output channels per work-item that still give every unit two
// work-items), and which of them Conv's plan runs as Winograd: those with 32 input
// channels or more on planes of 8 × 8 or more whose bands of tile rows fill the units.
func TestChooseWinoTile(t *testing.T) {
	dev := DeviceInfo{FloatVectorWidth: 16, ComputeUnits: 16}
	for _, c := range []struct {
		n, ch, hw int
		want      winoTile
		wino      bool
	}{
		{16, 64, 56, winoTile{tileSize: 4, vec: 16, segmentTiles: 8, rowSegments: 2, tileRows: 1, laneVecs: 1, itemChannels: 64, chunkChannels: 56, regChannels: 16, regLaneVecs: 1}, true},
		// 2×2 tiles: 28 bands fill the units, 14 of 4×4 would not.
		{1, 64, 56, winoTile{tileSize: 2, vec: 16, segmentTiles: 16, rowSegments: 2, tileRows: 1, laneVecs: 2, itemChannels: 32, chunkChannels: 64, regChannels: 8, regLaneVecs: 2}, true},
		{16, 128, 28, winoTile{tileSize: 4, vec: 16, segmentTiles: 4, rowSegments: 2, tileRows: 2, laneVecs: 1, itemChannels: 64, chunkChannels: 56, regChannels: 16, regLaneVecs: 1}, true},
		{1, 128, 28, winoTile{tileSize: 4, vec: 16, segmentTiles: 4, rowSegments: 2, tileRows: 2, laneVecs: 1, itemChannels: 16, chunkChannels: 56, regChannels: 16, regLaneVecs: 1}, false},
		{16, 256, 14, winoTile{tileSize: 4, vec: 16, segmentTiles: 4, rowSegments: 1, tileRows: 4, laneVecs: 1, itemChannels: 64, chunkChannels: 56, regChannels: 16, regLaneVecs: 1}, true},
		// A 7 × 7 plane runs direct (deepCPUTile).
		{16, 512, 7, winoTile{tileSize: 2, vec: 16, segmentTiles: 4, rowSegments: 1, tileRows: 4, laneVecs: 1, itemChannels: 256, chunkChannels: 128, regChannels: 16, regLaneVecs: 1}, false},
		{1, 512, 7, winoTile{tileSize: 2, vec: 16, segmentTiles: 4, rowSegments: 1, tileRows: 4, laneVecs: 1, itemChannels: 16, chunkChannels: 128, regChannels: 16, regLaneVecs: 1}, false},
		// Too few input channels.
		{16, 16, 55, winoTile{tileSize: 4, vec: 16, segmentTiles: 8, rowSegments: 2, tileRows: 1, laneVecs: 1, itemChannels: 16, chunkChannels: 16, regChannels: 16, regLaneVecs: 1}, false},
		{16, 32, 27, winoTile{tileSize: 4, vec: 16, segmentTiles: 4, rowSegments: 2, tileRows: 2, laneVecs: 1, itemChannels: 32, chunkChannels: 32, regChannels: 16, regLaneVecs: 1}, true},
		{16, 64, 13, winoTile{tileSize: 4, vec: 16, segmentTiles: 4, rowSegments: 1, tileRows: 4, laneVecs: 1, itemChannels: 32, chunkChannels: 56, regChannels: 16, regLaneVecs: 1}, true},
	} {
		attrs := Attrs{"pads": []int{1, 1, 1, 1}}
		in := shapes(sh(c.n, c.ch, c.hw, c.hw), sh(c.ch, c.ch, 3, 3))
		geo, err := convOp{}.geometry(attrs, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := chooseWinoTile(geo, dev); got != c.want {
			t.Errorf("%d×%d×%d²: got %+v, want %+v", c.n, c.ch, c.hw, got, c.want)
		}
		plan, err := convOp{}.Plan(attrs, in, shapes(sh(c.n, c.ch, c.hw, c.hw)), dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Launches[len(plan.Launches)-1].Kernel == "wino"; got != c.wino {
			t.Errorf("%d×%d×%d²: Conv runs %s, want Winograd %v", c.n, c.ch, c.hw, plan.Launches[0].Kernel, c.wino)
		}
	}
}

// BenchmarkWinoCPU times wino_cpu.cl's blockings on ResNet-18's and SqueezeNet's 3×3
// layer shapes against conv2d_vec's heuristic tile, the peer of the same run (go test
// -bench WinoCPU ./builtin_kernels; CLHOST_BENCH_BATCH sets the batch, 4 by default);
// GFLOP/s count the direct convolution's multiply-adds. Blockings: the device's choice,
// then larger input chunks, half and twice the output channels per work-item, and
// F(4×4, 3×3) with the channels its accumulators hold and twice that.
func BenchmarkWinoCPU(b *testing.B) {
	env := deviceEnvB(b)
	batch := 4
	if v := os.Getenv("CLHOST_BENCH_BATCH"); v != "" {
		batch, _ = strconv.Atoi(v)
	}
	for _, l := range [][3]int{{64, 64, 56}, {128, 128, 28}, {256, 256, 14}, {512, 512, 7}, {16, 64, 55}, {32, 128, 27}, {64, 256, 13}} {
		c := opCase{attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(batch, l[0], l[2], l[2]), sh(l[1], l[0], 3, 3), sh(l[1])), out: shapes(sh(batch, l[1], l[2], l[2]))}
		name := fmt.Sprintf("%d_%d_%d_b%d", l[0], l[1], l[2], batch)
		ins := c.inputs()
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		flops := 2.0 * float64(geo.macs())
		vec, _ := cpuConvPlan(geo, heuristicCPUTile(geo, env.dev), env.dev)
		plans := []namedPlan{{"vec", vec}}
		chosen := chooseWinoTile(geo, env.dev)
		tiles := []winoTile{chosen}
		for _, cb := range []int{2 * chosen.chunkChannels, 4 * chosen.chunkChannels} {
			if cb <= geo.c {
				t := chosen
				t.chunkChannels = cb
				tiles = append(tiles, t)
			}
		}
		for _, kb := range []int{chosen.itemChannels / 2, chosen.itemChannels * 2} {
			if kb >= chosen.regChannels && kb < 2*geo.m {
				tiles = append(tiles, winoBlocks(geo, chosen, kb, env.dev))
			}
		}
		f4 := chooseWinoTileOf(geo, 4, env.dev)
		tiles = append(tiles, f4, winoBlocks(geo, f4, 2*f4.itemChannels, env.dev))
		for _, t := range tiles {
			p, ok, err := winoPlan(geo, t, env.dev)
			if err != nil || !ok {
				b.Fatal(t, err)
			}
			plans = append(plans, namedPlan{fmt.Sprintf("wino%d_nt%d_kb%d_cb%d", t.tileSize, t.laneVecs, t.itemChannels, t.chunkChannels), p})
		}
		for _, v := range plans {
			b.Run(name+"/"+v.name, func(b *testing.B) {
				d := timeLaunches(b, env, v.plan, ins, c.out, b.N)
				b.ReportMetric(flops/d.Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
