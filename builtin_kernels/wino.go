package builtinkernels

// winoTile is the blocking of wino_cpu.cl (its defines in capitals): output tiles of
// tileSize (TS) × tileSize pixels (F(2×2, 3×3) or F(4×4, 3×3)), lane vectors of vec
// (VEC) tiles made of segments of segmentTiles (TWL) neighbouring tiles, rowSegments (NS)
// segments per tile row, tileRows (TRB) tile rows and laneVecs (NT) lane vectors per
// work-item, itemChannels (KB) output channels per work-item, input channels transformed
// chunkChannels (CB) at a time, and a register tile of regChannels (RK) output channels ×
// regLaneVecs (NTR) lane vectors.
type winoTile struct {
	tileSize, vec, segmentTiles, rowSegments, tileRows, laneVecs int
	itemChannels, chunkChannels, regChannels, regLaneVecs        int
}

// positions is the number of positions of a transformed tile, (tileSize+2)².
func (t winoTile) positions() int { return (t.tileSize + 2) * (t.tileSize + 2) }

// Private memory bounds of a wino work-item, in floats: M (positions × itemChannels ×
// laneVecs lane vectors) and the transformed chunk V (positions × chunkChannels ×
// laneVecs). Both live in the core's second-level cache, and PoCL holds such private
// arrays. M is read and written once per chunk, so larger chunks save passes over it,
// and a larger M lets a work-item take more output channels; both bounds were chosen by
// measurement
// (docs/kernels/winograd.md#private-memory-bounds).
const (
	maxWinoAccumulators = 64 << 10
	maxWinoChunk        = 32 << 10
)

// winograd reports whether a conv is one wino_cpu.cl computes: a 2-D 3×3 window at stride
// 1 without dilation or groups (any padding), on outputs of at least 2×2.
func (g convGeom) winograd() bool {
	w := g.win
	return g.nsp == 2 && g.g == 1 && w.k == [2]int{3, 3} && w.s == [2]int{1, 1} && w.d == [2]int{1, 1} &&
		w.out[0] >= 2 && w.out[1] >= 2
}

// winoLayout lays the ts×ts tiles of the output out in lane vectors of vec lanes made of
// segments of twl tiles: ns segments cover a tile row, and a work-item takes the fewest
// tile rows whose segments fill whole lane vectors, times rowsPer.
func winoLayout(g convGeom, ts, vec, twl, rowsPer int) winoTile {
	tw := ceilDiv(g.win.out[1], ts)
	ns := ceilDiv(tw, twl)
	lv := vec / twl
	trb := lv / gcd(ns, lv) * max(rowsPer, 1)
	return winoTile{tileSize: ts, vec: vec, segmentTiles: twl, rowSegments: ns, tileRows: trb, laneVecs: trb * ns / lv}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// winoTiles is how many tiles a layout computes over all images, with the lanes of
// segments past a row's end, moved-left segments that overlap, and the rows of the last
// band past the last image.
func winoTiles(g convGeom, t winoTile) int {
	rows := g.n * ceilDiv(g.win.out[0], t.tileSize)
	return ceilDiv(rows, t.tileRows) * t.tileRows * t.rowSegments * t.segmentTiles
}

// winoLanes is how many tiles a layout computes for every tile of the output.
func winoLanes(g convGeom, t winoTile) float64 {
	rows, tw := g.n*ceilDiv(g.win.out[0], t.tileSize), ceilDiv(g.win.out[1], t.tileSize)
	return float64(winoTiles(g, t)) / float64(rows*tw)
}

// chooseWinoTile picks wino_cpu.cl's blocking for a device: the segment width that wastes
// the fewest lanes with at most two lane vectors of 16 per work-item (a tie goes to the
// widest that fits in the row, whose outputs are stored as whole vectors), then as many
// output channels per work-item as the accumulators hold, fewer where the layer would
// leave compute units idle, since the input transform is repeated for each block of them.
// Layouts of one lane vector stay so: twice the tile rows (each weight loaded feeding
// two vectors, half the channels per work-item) measured slower.
//
// F(4×4) does 2.25 multiply-adds per output and input channel where F(2×2) does 4, but
// its transforms cost more per multiply-add, it holds half the output channels per
// work-item, and its wider tiles waste more of small planes. It is chosen where its
// multiply-adds per computed output, weighted by winoF4Cost, are fewer: ResNet-18's 56-,
// 28- and 14-wide layers, not its 7-wide ones (docs/kernels/winograd.md#f44-or-f22).
// A layout that winoPreferred accepts goes before one it does not (at batch 1, 56 rows of
// 2×2 tiles fill 16 compute units where 14 rows of 4×4 tiles would not).
func chooseWinoTile(g convGeom, dev DeviceInfo) winoTile {
	f2, f4 := chooseWinoTileOf(g, 2, dev), chooseWinoTileOf(g, 4, dev)
	if p2, p4 := winoPreferred(g, f2, dev), winoPreferred(g, f4, dev); p2 != p4 {
		if p4 {
			return f4
		}
		return f2
	}
	if winoCost(g, f4)*winoF4Cost < winoCost(g, f2) {
		return f4
	}
	return f2
}

// winoF4Cost weighs F(4×4)'s multiply-adds against F(2×2)'s in chooseWinoTile.
const winoF4Cost = 1.3

// winoCost is a layout's GEMM multiply-adds per output pixel and input channel, with
// every lane it computes, used or not.
func winoCost(g convGeom, t winoTile) float64 {
	return float64(winoTiles(g, t)*t.positions()) / float64(g.n*g.win.out[0]*g.win.out[1])
}

// chooseWinoTileOf is chooseWinoTile for tiles of ts×ts outputs.
func chooseWinoTileOf(g convGeom, ts int, dev DeviceInfo) winoTile {
	vec := dev.FloatVectorWidth
	if vec != 4 && vec != 8 && vec != 16 {
		vec = 8
	}
	tw := ceilDiv(g.win.out[1], ts)
	var best winoTile
	bestLanes := 0.0
	for twl := 4; twl <= vec; twl *= 2 {
		t := winoLayout(g, ts, vec, twl, 1)
		if t.laneVecs*vec > 32 && twl < vec {
			continue
		}
		lanes := winoLanes(g, t)
		better := best.vec == 0 || lanes < bestLanes-1e-9 ||
			(lanes < bestLanes+1e-9 && (twl <= tw || best.segmentTiles > tw))
		if better {
			best, bestLanes = t, lanes
		}
	}
	return winoBlocks(g, best, 0, dev)
}

// winoPreferred reports whether a Winograd layer should run wino_cpu.cl rather than the
// direct kernels: where it has 32 input channels or more, planes of 8 × 8 or more, and
// its bands of tile rows alone give every compute unit one. With fewer bands each
// work-item transforms the whole input again for a small block of channels; with few
// input channels the transforms outweigh the multiply-adds saved; on smaller planes 2×2
// tiles waste lanes and deepCPUTile ran faster (docs/kernels/winograd.md#winopreferred).
func winoPreferred(g convGeom, t winoTile, dev DeviceInfo) bool {
	return g.c >= 32 && min(g.win.out[0], g.win.out[1]) >= 8 &&
		ceilDiv(g.n*ceilDiv(g.win.out[0], t.tileSize), t.tileRows) >= max(dev.ComputeUnits, 1)
}

// winoBlocks completes a layout with the channel blocking: kb output channels per
// work-item (0: as many as the accumulators hold and the compute units allow), the
// register tile, and the chunk of input channels.
func winoBlocks(g convGeom, t winoTile, kb int, dev DeviceInfo) winoTile {
	t.regLaneVecs = 1
	for _, r := range []int{4, 2} {
		if t.laneVecs%r == 0 {
			t.regLaneVecs = r
			break
		}
	}
	// Accumulators held in registers: 16 of the 32 vector registers of AVX-512, 8 of 16.
	regs := 8
	if t.vec == 16 {
		regs = 16
	}
	t.regChannels = max(regs/t.regLaneVecs, 1)
	if kb <= 0 {
		kb = t.regChannels
		for kb*2*t.positions()*t.laneVecs*t.vec <= maxWinoAccumulators && kb < g.m {
			kb *= 2
		}
		rows := g.n * ceilDiv(g.win.out[0], t.tileSize)
		items := func(kb int) int { return ceilDiv(rows, t.tileRows) * ceilDiv(g.m, kb) }
		cu := max(dev.ComputeUnits, 1)
		for kb > t.regChannels && items(kb) < 2*cu {
			kb /= 2
		}
	}
	t.itemChannels = ceilDiv(kb, t.regChannels) * t.regChannels
	t.chunkChannels = max(min(maxWinoChunk/(t.positions()*t.laneVecs*t.vec), g.c), 1)
	return t
}

// winoPlan plans wino_cpu.cl for a conv that winograd accepts: the weights are
// transformed once into scratch buffer 0 (a setup launch), then one launch computes the
// layer. ok is false where a row is too wide for the private buffers.
func winoPlan(g convGeom, t winoTile, dev DeviceInfo) (plan *Plan, ok bool, err error) {
	rows, tw := g.n*ceilDiv(g.win.out[0], t.tileSize), ceilDiv(g.win.out[1], t.tileSize)
	// The transform reads tileSize*segmentTiles values from column tileSize*x + j
	// (j ≤ tileSize+1) of the padded rows for a segment starting at tile
	// x ≤ max(tw - segmentTiles, 0).
	pw := ceilDiv(max(g.win.pb[1]+g.in[1], t.tileSize*max(tw, t.segmentTiles)+t.tileSize+1), 4) * 4
	nx := t.positions()
	if 4*(t.tileSize+2)*t.tileRows*pw > maxWindowBuffer || nx*t.itemChannels*t.laneVecs*t.vec > 2*maxWinoAccumulators {
		return nil, false, nil
	}
	bands := ceilDiv(rows, t.tileRows)
	kblk := ceilDiv(g.m, t.itemChannels)
	var d defines
	g.define(&d)
	d.int("TS", t.tileSize)
	d.int("VEC", t.vec)
	d.int("TWL", t.segmentTiles)
	d.int("NS", t.rowSegments)
	d.int("TRB", t.tileRows)
	d.int("BANDS", bands)
	d.int("NT", t.laneVecs)
	d.int("KB", t.itemChannels)
	d.int("KBLK", kblk)
	d.int("CB", t.chunkChannels)
	d.int("RK", t.regChannels)
	d.int("NTR", t.regLaneVecs)
	d.int("PW", pw)
	src, err := d.program("wino_cpu.cl")
	if err != nil {
		return nil, false, err
	}
	packGlobal, packLocal := launchSize([]int{kblk * t.itemChannels, g.c}, dev)
	args := g.kernelArgs(Arg{Kind: ArgScratch, Index: 0})
	// The GEMM's multiply-adds, for the grouping of small launches.
	macs := winoTiles(g, t) * nx * g.c * kblk * t.itemChannels
	return &Plan{
		Source:  src,
		Scratch: []int{4 * nx * g.c * kblk * t.itemChannels},
		Setup: []Launch{{Kernel: "wino_pack", Global: packGlobal, Local: packLocal,
			Args: []Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}}}},
		Launches:          []Launch{cpuLaunch("wino", []int{bands, kblk}, macs, args, dev)},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}, true, nil
}
