package builtinkernels

// conv1x1_cpu.cl's plans: a 1×1 convolution (or a strided one over its subsampled input)
// as a GEMM over contiguous pixels.

// pointwise says whether a conv is a plain 1×1 convolution (stride 1, no padding), which
// conv1x1 runs as a GEMM over contiguous pixels.
func (g convGeom) pointwise() bool {
	w := g.win
	return w.k == [2]int{1, 1} && w.s == [2]int{1, 1} && w.pb == [2]int{} && w.pe == [2]int{}
}

// strided1x1 says whether a conv is a 1×1 window at a stride above 1 without padding
// (ResNet's downsampling shortcuts), which runs as a subsampling copy and conv1x1.
func (g convGeom) strided1x1() bool {
	w := g.win
	return w.k == [2]int{1, 1} && w.s != [2]int{1, 1} && w.pb == [2]int{} && w.pe == [2]int{}
}

// gemm1x1 is the geometry of the plain 1×1 convolution that conv1x1 runs for a
// pointwise or strided 1×1 conv: the latter's over its subsampled input.
func (g convGeom) gemm1x1() convGeom {
	if g.strided1x1() {
		g.in = g.win.out
		g.win.s = [2]int{1, 1}
	}
	return g
}

// cpu1x1Tile is one register tile of conv1x1 (its defines in capitals): tileChannels
// (MT) output channels by tilePixelVecs (NP) vectors of vec (VEC) pixels.
// itemChannelTiles (MTI) channel tiles run one after another in each work-item (0: as
// many as leave every compute unit four work-items), over chunks of chunkChannels (KC)
// input channels (0: chunk1x1 where a work-item runs several channel tiles, else all of
// them).
type cpu1x1Tile struct{ vec, tileChannels, tilePixelVecs, itemChannelTiles, chunkChannels int }

// chunk1x1 is conv1x1's chunk of input channels where a work-item runs several channel
// tiles over its pixel tile: 64 channels of 32 pixels are 8 KB, which stay in the L1
// cache while every channel tile reads them, where the whole column (576 channels in
// MobileNetV2's 14×14 projections, 74 KB) would be read from L2 once per channel tile
// (docs/kernels/conv1x1-cpu.md#chunk1x1).
const chunk1x1 = 64

// maxChunkPartials bounds the partial sums (floats) a chunked conv1x1 work-item keeps in
// private memory between chunks: 64 KB, beyond which they would no longer stay in cache
// next to the chunk they serve.
const maxChunkPartials = 16 << 10

// heuristic1x1Tile: 12 channels × 2 vectors is 24 accumulators of AVX-512's 32
// registers, leaving room for the two pixel vectors and the broadcast weight; AVX2's 16
// registers take 4 × 2 (12 × 2 loads 14 values per 24 multiply-adds, 8 × 2 10 per 16).
// Wider tiles make fewer work-items, so layers with too few for eight per compute unit
// (batch 1) keep 8 × 2, and so do layers whose channels 12 divides badly: a last,
// partial tile computes its missing channels all the same, and 12 × 2 gains only a
// little, so it is taken where it computes at most a tenth more channels (SqueezeNet's
// squeezes to 16 channels would compute 24 with it, its 64-channel expansions 72).
// Measured against 8 × 2: docs/kernels/conv1x1-cpu.md#heuristic1x1tile.
func heuristic1x1Tile(g convGeom, dev DeviceInfo) cpu1x1Tile {
	vec := dev.FloatVectorWidth
	if vec != 4 && vec != 8 && vec != 16 {
		vec = 8
	}
	p := g.gemm1x1().in[0] * g.gemm1x1().in[1]
	for vec > 4 && 2*vec > p {
		vec /= 2
	}
	if vec == 16 {
		padded12, padded8 := ceilDiv(g.mg, 12)*12, ceilDiv(g.mg, 8)*8
		if ceilDiv(p, 2*vec)*ceilDiv(g.mg, 12)*g.n*g.g >= 8*max(dev.ComputeUnits, 1) && 10*padded12 <= 11*padded8 {
			return cpu1x1Tile{vec, 12, 2, 0, 0}
		}
		return cpu1x1Tile{vec, 8, 2, 0, 0}
	}
	return cpu1x1Tile{vec, 4, 2, 0, 0}
}

// alt1x1Tile is the tuner's alternative to conv1x1's heuristic tile: the other of
// AVX-512's 12 × 2 and 8 × 2, or 6 × 2.
func alt1x1Tile(big cpu1x1Tile) cpu1x1Tile {
	alt := cpu1x1Tile{big.vec, 6, 2, 0, 0}
	if big.vec == 16 && big.tileChannels == 12 {
		alt.tileChannels = 8
	} else if big.vec == 16 {
		alt.tileChannels = 12
	}
	return alt
}

// cpu1x1Candidates are conv1x1's plans for the tuner, the heuristic's tile and its
// alternative: for 1×1 layers, and for a Conv that carries FusedGlobalAveragePoolAttr
// where conv1x1's POOL_AVG runs it (pooledIn1x1).
func cpu1x1Candidates(g convGeom, dev DeviceInfo) ([]*Plan, error) {
	big := heuristic1x1Tile(g, dev)
	var plans []*Plan
	for _, t := range []cpu1x1Tile{big, alt1x1Tile(big)} {
		p, err := cpu1x1Plan(g, t, dev)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// minItemFMAs is the least number of vector multiply-adds worth a work-item of its own
// on a CPU driver: PoCL pays a few microseconds per work-group, and conv1x1's tile over
// 16 input channels (SqueezeNet's expansions) is only 256 of them. Long runs of tiles
// also let conv1x1's prefetches land in the thread that issued them. Chosen by
// measurement (docs/kernels/conv1x1-cpu.md#minitemfmas).
const minItemFMAs = 65536

// tilesPerItem is how many tiles of fmas vector multiply-adds each to give a work-item,
// out of tiles per row of work and rows such rows: enough to reach minItemFMAs, but
// never so many that fewer than four work-items per compute unit remain.
func tilesPerItem(fmas, tiles, rows int, dev DeviceInfo) int {
	tpi := min(ceilDiv(minItemFMAs, max(fmas, 1)), tiles)
	for tpi > 1 && ceilDiv(tiles, tpi)*rows < 4*max(dev.ComputeUnits, 1) {
		tpi--
	}
	return max(tpi, 1)
}

// channelTilesPerItem is how many of mt1 channel tiles each conv1x1 work-item runs over
// its pixel tiles, out of items pixel-tile columns (tiles × images × groups). Running
// them together reads each pixel tile's input from memory once rather than once per
// channel tile, but writes as many output planes at once. So layers that reduce channels
// (cg ≥ mg, MobileNetV2's projections, SqueezeNet's squeezes) run as many as leave four
// work-items per compute unit, and the rest one: expansions measured slower that way
// (docs/kernels/conv1x1-cpu.md#channeltilesperitem).
func channelTilesPerItem(cg, mg, mt1, items int, dev DeviceInfo) int {
	if cg < mg {
		return 1
	}
	blocks := min(mt1, ceilDiv(4*max(dev.ComputeUnits, 1), max(items, 1)))
	return max(1, mt1/blocks)
}

// cpu1x1Plan plans conv1x1: a setup launch packs W into scratch buffer 0, then the GEMM.
// A strided 1×1 conv first copies its subsampled input into scratch buffer 1, which the
// GEMM then reads as its X. The program's defines are the tile and the epilogue only;
// the shape goes in kernel arguments, so that layers with the same tile share a program
// and launch it at one work-group size (one work-item, which runs gatheredItems of the
// layer's items), which PoCL compiles once.
func cpu1x1Plan(g convGeom, t cpu1x1Tile, dev DeviceInfo) (*Plan, error) {
	gemm := g.gemm1x1()
	mt1 := ceilDiv(g.mg, t.tileChannels)
	var d defines
	d.int("VEC", t.vec)
	d.int("MT", t.tileChannels)
	d.int("NP", t.tilePixelVecs)
	p := gemm.in[0] * gemm.in[1]
	tiles := ceilDiv(p, t.vec*t.tilePixelVecs)
	d.bool("SMALL_PLANE", p < t.vec*t.tilePixelVecs)
	mti := t.itemChannelTiles
	if g.pool {
		mti = 1 // POOL_AVG: one channel tile per work-item, over the whole plane
	} else if mti <= 0 {
		mti = channelTilesPerItem(g.cg, g.mg, mt1, tiles*g.n*g.g, dev)
	}
	mtb := ceilDiv(mt1, mti)
	parts := max(maxChunkPartials/(t.tileChannels*t.tilePixelVecs*t.vec), mti)
	kc := t.chunkChannels
	if kc == 0 && mti > 1 && mti*t.tileChannels*t.tilePixelVecs*t.vec <= maxChunkPartials {
		kc = chunk1x1
	}
	if kc <= 0 || kc >= g.cg {
		kc = 0
		// Input channels that fit in one chunk run the chunked program all the same (one
		// chunk, no partial sums kept), so that such layers share it with the chunked
		// layers of their tile.
		if t.chunkChannels == 0 && g.cg <= chunk1x1 {
			kc = chunk1x1
		}
	}
	if kc > 0 {
		d.int("KC", kc)
		d.int("PARTS", parts)
	}
	tpi := tilesPerItem(g.cg*t.tileChannels*t.tilePixelVecs*mti, tiles, mtb*g.n*g.g, dev)
	yn := g.yn
	if yn == 0 {
		yn = g.m * p
	}
	if g.pool {
		tpi = tiles
		d.int("POOL_AVG", 1)
		if g.yn == 0 {
			yn = g.m
		}
	}
	d.bool("PREFETCH_BUILTIN", dev.Prefetch)
	if g.half && g.strided1x1() {
		// The GEMM reads the subsampled copy in the storage type, not a float x.
		d.int("SUBSAMPLED", 1)
	}
	g.defineEpilogue(&d)
	src, err := d.program("conv1x1_cpu.cl")
	if err != nil {
		return nil, err
	}
	packGlobal, packLocal := launchSize([]int{t.tileChannels, g.cg, g.g * mt1}, dev)
	items := ceilDiv(tiles, tpi) * mtb * g.n * g.g
	ipw := gatheredItems(items, g.macs(), dev)
	args := append(g.kernelArgs(Arg{Kind: ArgScratch, Index: 0}),
		intArgs(g.n, g.c, g.g, g.cg, g.m, g.mg, p, mt1, tpi, mti, yn, ipw)...)
	plan := &Plan{
		Source:  src,
		Scratch: []int{4 * g.g * mt1 * g.cg * t.tileChannels},
		Setup: []Launch{{Kernel: "conv1x1_pack", Global: packGlobal, Local: packLocal,
			Args: append([]Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}},
				intArgs(g.g, g.cg, g.mg, mt1)...)}},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}
	if g.strided1x1() {
		elem := 4
		if g.half {
			// The copy is in the storage type (SUBSAMPLED, defined above).
			elem = 2
			plan.HalfScratch = append(plan.HalfScratch, len(plan.Scratch))
		}
		plan.Scratch = append(plan.Scratch, elem*g.n*g.c*p)
		sg, sl := launchSize([]int{gemm.in[0], g.n * g.c}, dev)
		plan.Launches = append(plan.Launches, Launch{Kernel: "conv1x1_subsample", Global: sg, Local: sl,
			Args: append([]Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgScratch, Index: 1}},
				intArgs(g.n*g.c, gemm.in[0], gemm.in[1], g.in[0], g.in[1], g.win.s[0], g.win.s[1])...)})
		args[0] = Arg{Kind: ArgScratch, Index: 1}
	}
	plan.Launches = append(plan.Launches, cpuLaunchSingle("conv1x1", []int{ceilDiv(items, ipw)}, args))
	return plan, nil
}
