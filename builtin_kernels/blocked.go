package builtinkernels

import "fmt"

// Channel-blocked tensors (NCHW{B}c): an (N, C, H, W) tensor stored as (N, ceil(C/B),
// H, W, B), the B channels of one pixel side by side as one vector of the device, and
// the channels past C zero. A CPU convolution reads a pixel's input channels as a few
// contiguous runs rather than one plane each (far more planes than a core's prefetcher
// follows), which is how ONNX Runtime's CPU kernels store activations (NCHWc).

// blockedTile is conv1x1_blk's blocking (its defines in capitals): blockChannels (B)
// channels per block (the vector width), tileBlocks (MT) output blocks × tilePixels (NP)
// pixels per register tile.
type blockedTile struct{ blockChannels, tileBlocks, tilePixels int }

// blockedIO says which of conv1x1_blk's tensors are in NCHW rather than blocked: an NCHW
// input is reordered into a blocked scratch copy first, or with readInPlace read where
// it lies (each channel's pixels from its own plane); an NCHW output is stored lane by
// lane. A residual is laid out as the output. A layer with a fused global average pool
// writes its (N, M) output as NCHW does.
type blockedIO struct{ nchwIn, nchwOut, readInPlace bool }

// blockReorderPixels is how many pixels of one block a conv1x1_blk_reorder work-item
// moves.
const blockReorderPixels = 64

// cpu1x1BlockedPlan plans conv1x1_blk for a 1×1 conv at stride 1, group 1, without
// padding: a setup launch packs W into scratch buffer 0; where the input is NCHW, a
// launch reorders it into scratch buffer 1; then the convolution.
func cpu1x1BlockedPlan(g convGeom, t blockedTile, io blockedIO, dev DeviceInfo) (*Plan, error) {
	if g.win.k != [2]int{1, 1} || g.win.s != [2]int{1, 1} || g.g != 1 || g.mpool != nil ||
		g.win.pb != [2]int{} || g.win.pe != [2]int{} || g.nsp != 2 {
		return nil, fmt.Errorf("conv1x1_blk: needs a 2-D 1×1 conv at stride 1, group 1, unpadded, not max pooled")
	}
	if g.pool && g.hasResidual {
		return nil, fmt.Errorf("conv1x1_blk: a pooled layer takes no residual")
	}
	if t.blockChannels <= 0 || t.tileBlocks <= 0 || t.tilePixels <= 0 {
		return nil, fmt.Errorf("conv1x1_blk: bad tile %+v", t)
	}
	cb, mb := ceilDiv(g.c, t.blockChannels), ceilDiv(g.m, t.blockChannels)
	t.tileBlocks = min(t.tileBlocks, mb) // a tile of more blocks than the layer has would only compute zeros
	var d defines
	g.define(&d)
	d.int("B", t.blockChannels)
	d.int("MT", t.tileBlocks)
	d.int("NP", t.tilePixels)
	p := g.in[0] * g.in[1]
	mbt := ceilDiv(mb, t.tileBlocks)
	tiles := ceilDiv(p, t.tilePixels)
	tpi := tilesPerItem(cb*t.blockChannels*t.tileBlocks*t.tilePixels, tiles, mbt*g.n, dev)
	if g.pool {
		tpi = tiles
		d.int("POOL_AVG", 1)
	}
	d.int("TPI", tpi)
	d.int("RP", blockReorderPixels)
	d.bool("OUT_NCHW", io.nchwOut && !g.pool)
	d.bool("X_NCHW", io.nchwIn && io.readInPlace)
	src, err := d.program("conv1x1_blocked_cpu.cl")
	if err != nil {
		return nil, err
	}
	packGlobal, packLocal := launchSize([]int{t.tileBlocks * t.blockChannels, cb * t.blockChannels, mbt}, dev)
	plan := &Plan{
		Source:  src,
		Scratch: []int{4 * mbt * cb * t.blockChannels * t.tileBlocks * t.blockChannels},
		Setup: []Launch{{Kernel: "conv1x1_blk_pack", Global: packGlobal, Local: packLocal,
			Args: []Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}}}},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}
	args := g.kernelArgs(Arg{Kind: ArgScratch, Index: 0})
	if io.nchwIn && !io.readInPlace {
		// The reorder's work, counted as multiply-adds for cpuLaunch, is one per value.
		plan.Scratch = append(plan.Scratch, 4*g.n*cb*p*t.blockChannels)
		plan.Launches = append(plan.Launches, cpuLaunch("conv1x1_blk_reorder", []int{ceilDiv(p, blockReorderPixels), cb, g.n},
			g.n*cb*t.blockChannels*p, []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgScratch, Index: 1}}, dev))
		args[0] = Arg{Kind: ArgScratch, Index: 1}
	}
	plan.Launches = append(plan.Launches, cpuLaunch("conv1x1_blk", []int{ceilDiv(tiles, tpi), mbt, g.n}, g.macs(), args, dev))
	return plan, nil
}

// pooledBlocked says whether a Conv that carries FusedGlobalAveragePoolAttr runs as
// conv1x1_blk reading its NCHW input in place: a plain 2-D 1×1 convolution of group 1
// without a residual on a CPU device, with at least two output blocks for
// pooledBlockedTile, 64 input channels or more, and a plane of 12 to 256 pixels, the
// classifier heads of SqueezeNet (512 → 1000 on 13 × 13) and MobileNetV2 (320 → 1280 on
// 7 × 7). There each pixel's output channels are vectors of their own, so a tile wastes
// no lanes on the plane's odd width, and its 24 accumulators take 12 pixels of 32
// channels from 12 broadcasts and 2 weight vectors per input channel. It measured faster
// than conv1x1's POOL_AVG on both heads (docs/kernels/conv1x1-cpu.md#pooledblocked).
func pooledBlocked(g convGeom, dev DeviceInfo) bool {
	if !g.pool || !pooledIn1x1(g, dev) || g.g != 1 || g.hasResidual || g.c < 64 {
		return false
	}
	t := pooledBlockedTile(dev)
	p := g.in[0] * g.in[1]
	return g.m >= 2*t.blockChannels && p >= t.tilePixels && p <= 256
}

// pooledBlockedTile is conv1x1_blk's tile for a pooled layer: 2 blocks × 12 pixels on
// AVX-512 (24 accumulators, 2 running sums, 2 weight vectors and the broadcast in its 32
// registers; 3 × 8 needs 31 and ran slower), 2 × 5 in AVX2's 16.
func pooledBlockedTile(dev DeviceInfo) blockedTile {
	if dev.FloatVectorWidth == 16 {
		return blockedTile{16, 2, 12}
	}
	return blockedTile{8, 2, 5}
}

// pooledBlockedPlan is pooledBlocked's plan.
func pooledBlockedPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	return cpu1x1BlockedPlan(g, pooledBlockedTile(dev), blockedIO{nchwIn: true, readInPlace: true}, dev)
}
