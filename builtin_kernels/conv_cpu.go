package builtinkernels

import "slices"

// The CPU plans of a Conv: the candidates across kernel families, in the order the tuner
// tries them (cpuConvCandidatePlans), and conv_cpu.cl's channel tiles (conv2d_vec, fc_vec).

// cpuConvTile is one register tile of conv_cpu.cl (its defines in capitals): weightVecs
// (NV) vectors of vec (VEC) output channels by tilePixels (PXT) pixels per work-item.
type cpuConvTile struct{ vec, weightVecs, tilePixels int }

// cpuVec is the vector width the CPU kernels use: the device's native float width, at
// most the group's channel count rounded up to a power of two (a 16-lane vector for 8
// channels would idle half its lanes).
func cpuVec(g convGeom, dev DeviceInfo) int {
	v := dev.FloatVectorWidth
	if v != 4 && v != 8 && v != 16 {
		v = 8
	}
	return max(min(v, nextPow2(g.mg)), 4)
}

// widePixelTile is the pixel tile of two weight vectors: the widest of 8 down to 4 pixels
// that wastes at most 1/32 of the row on its last tile, else the one that wastes least.
// Wider tiles load fewer values per multiply-add and store fewer, longer rows, but a
// mostly empty last tile costs more than that saves (docs/kernels/conv-cpu.md#widepixeltile).
func widePixelTile(ow int) int {
	for p := min(8, ow); p >= 4; p-- {
		if 32*(ceilDiv(ow, p)*p-ow) <= ow {
			return p
		}
	}
	return bestPixelTile(ow, 4, 7)
}

// heuristicCPUTile chooses a tile without measuring. Two weight vectors by up to 8
// pixels keep 16 accumulators and 2 weights in the 32 registers of AVX-512 (16 of
// AVX2 hold the one-vector tiles); a single vector serves layers with few channels.
func heuristicCPUTile(g convGeom, dev DeviceInfo) cpuConvTile {
	vec := cpuVec(g, dev)
	if g.mg > vec && vec == 16 {
		return cpuConvTile{vec, 2, widePixelTile(g.win.out[1])}
	}
	return cpuConvTile{vec, 1, bestPixelTile(g.win.out[1], 6, 8)}
}

// deepCPUTile is the three-vector tile (48 output channels × the heuristic's pixels)
// that deep layers run first: 21 accumulators and 3 weights of AVX-512's 32 registers,
// so each broadcast input feeds three multiply-adds, not two. It takes layers of at
// least 128 output channels (so that the last tile's unused lanes are few against the
// rest) and 128 × 3 × 3 products per output, and only with eight work-items per compute
// unit or more, as it makes fewer of them. The thresholds follow ResNet-18's deep layers,
// where it measured faster than two vectors (docs/kernels/conv-cpu.md#deepcputile).
func deepCPUTile(g convGeom, t cpuConvTile, dev DeviceInfo) (cpuConvTile, bool) {
	if t.vec != 16 || t.weightVecs != 2 || g.mg < 128 || g.cg*g.win.k[0]*g.win.k[1] < 128*9 {
		return t, false
	}
	t.weightVecs = 3
	items := g.n * g.g * ceilDiv(g.mg, t.vec*t.weightVecs) * g.win.out[0] * ceilDiv(g.win.out[1], min(t.tilePixels, g.win.out[1]))
	return t, items >= 8*max(dev.ComputeUnits, 1)
}

// cpuConvCandidates are the tiles the tuner times, the heuristic's first: the other
// number of weight vectors, and the same one with a longer or shorter pixel tile. Few,
// because CPU drivers compile slowly (PoCL takes seconds per program, one at a time).
func cpuConvCandidates(g convGeom, dev DeviceInfo) []cpuConvTile {
	first := heuristicCPUTile(g, dev)
	list := []cpuConvTile{first}
	if deep, ok := deepCPUTile(g, first, dev); ok {
		list = []cpuConvTile{deep, first}
	}
	seen := map[cpuConvTile]bool{}
	for _, t := range list {
		seen[t] = true
	}
	add := func(t cpuConvTile) {
		t.tilePixels = min(t.tilePixels, g.win.out[1])
		if !seen[t] {
			seen[t] = true
			list = append(list, t)
		}
	}
	ow := g.win.out[1]
	if first.weightVecs == 2 {
		add(cpuConvTile{first.vec, 1, bestPixelTile(ow, 6, 8)})
		add(cpuConvTile{first.vec, 2, bestPixelTile(ow, 4, 7)})
		add(cpuConvTile{first.vec, 2, 4})
	} else {
		if g.mg > first.vec {
			add(cpuConvTile{first.vec, 2, widePixelTile(ow)})
		}
		add(cpuConvTile{first.vec, 1, 4})
	}
	return list
}

// cpuConvCandidatePlans lists the CPU plans of a (non-depthwise) conv, the heuristic's
// choice first: the window kernel for layers with few products per output,
// channel-vectorised tiles, and for 1×1 layers the pixel-vectorised GEMM,
// which wins on large planes (stores whole vectors, no transposition) and loses on
// small ones (7×7 = 49 pixels fill few vectors). limit > 0 keeps that many.
func cpuConvCandidatePlans(g convGeom, dev DeviceInfo, limit int) ([]*Plan, error) {
	var plans []*Plan
	// 1×1 layers, strided or not, also get conv1x1's GEMM (see cpu1x1Plan).
	gemm := g.pointwise() || g.strided1x1()
	if gemm {
		gp, err := cpu1x1Candidates(g, dev)
		if err != nil {
			return nil, err
		}
		plans = append(plans, gp...)
	}
	var vec []*Plan
	for i, t := range cpuConvCandidates(g, dev) {
		if gemm && i > 0 {
			break // the GEMM tiles take the place of the other channel tiles
		}
		p, err := cpuConvPlan(g, t, dev)
		if err != nil {
			return nil, err
		}
		vec = append(vec, p)
	}
	// The channel tiles go first on small planes (7×7 = 49 pixels fill few of the
	// GEMM's vectors), and for strided 1×1 layers, where they measured as fast as the
	// subsampling copy and GEMM on many cores and the GEMM is the tuner's to pick
	// (docs/kernels/conv-cpu.md#strided-pointwise-layers).
	if gp := g.gemm1x1(); gemm && (gp.in[0]*gp.in[1] < 128 || g.strided1x1()) {
		plans = append(vec, plans...)
	} else {
		plans = append(plans, vec...)
	}
	// 3×3 layers at stride 1 also get Winograd's F(2×2, 3×3) (see wino_cpu.cl), first
	// where their tile rows fill the device.
	if g.winograd() {
		t := chooseWinoTile(g, dev)
		p, ok, err := winoPlan(g, t, dev)
		if err != nil {
			return nil, err
		}
		if ok && winoPreferred(g, t, dev) {
			plans = append([]*Plan{p}, plans...)
		} else if ok {
			plans = append(plans, p)
		}
	}
	// Few products per output (a stem's 3 channels × 3×3): the row-vectorised window
	// kernel is the tuner's second candidate; the channel tiles, transposed in registers,
	// measured faster (docs/kernels/conv-cpu.md#stems-channel-tiles-before-the-window-kernel).
	if !gemm && g.cg*g.win.k[0]*g.win.k[1] < 64 {
		p, ok, err := cpuWindowConvPlan(g, 8, 2, windowVec(g.win.out[1], dev), dev)
		if err != nil {
			return nil, err
		}
		if ok {
			plans = slices.Insert(plans, min(1, len(plans)), p)
		}
	}
	if limit > 0 && len(plans) > limit {
		plans = plans[:limit]
	}
	return plans, nil
}

// cpuConvPlan plans conv_cpu.cl: a setup launch packs the weights into scratch buffer 0
// (once per network, as the weights are constants), then the vectorised convolution runs
// with one work-item per work-group: each work-item is a long register-blocked loop, and
// small layers still spread over every core.
func cpuConvPlan(g convGeom, t cpuConvTile, dev DeviceInfo) (*Plan, error) {
	return cpuConvRowsPlan(g, t, vecRows(g, t, dev), dev)
}

// cpuConvRowsPlan is cpuConvPlan with rows output rows per work-item, over chunks of
// vecChannelChunk input channels where above 1.
func cpuConvRowsPlan(g convGeom, t cpuConvTile, rows int, dev DeviceInfo) (*Plan, error) {
	pxt := min(t.tilePixels, g.win.out[1])
	rows = max(min(rows, g.win.out[0]), 1)
	global := []int{ceilDiv(g.win.out[1], pxt), ceilDiv(g.win.out[0], rows), g.n * g.g * ceilDiv(g.mg, t.vec*t.weightVecs)}
	return paddedConvPlan(g, t, "conv2d_vec", global, func(d *defines) {
		if rows > 1 {
			d.int("RPW", rows)
			d.int("KCH", vecChannelChunk)
		}
	}, dev)
}

// paddedConvPlan is packedConvPlan, over a zero-padded copy of the input where the
// layer takes one (padsCopy): conv_pad writes it into scratch buffer 1 first, and the
// kernel reads it as its x.
func paddedConvPlan(g convGeom, t cpuConvTile, kernel string, global []int, more func(*defines), dev DeviceInfo) (*Plan, error) {
	if !g.padsCopy() {
		return packedConvPlan(g, t, kernel, global, more, dev)
	}
	conv := g.paddedGeom(min(t.tilePixels, g.win.out[1]))
	plan, err := packedConvPlan(conv, t, kernel, global, func(d *defines) {
		if more != nil {
			more(d)
		}
		d.int("XH", g.in[0])
		d.int("XW", g.in[1])
		d.int("XPT", g.win.pb[0])
		d.int("XPL", g.win.pb[1])
	}, dev)
	if err != nil {
		return nil, err
	}
	elem := 4
	if g.half {
		// The copy is in the storage type.
		elem = 2
		plan.HalfScratch = append(plan.HalfScratch, len(plan.Scratch))
	}
	plan.Scratch = append(plan.Scratch, elem*g.n*g.c*conv.in[0]*conv.in[1])
	pg, pl := launchSize([]int{conv.in[0], g.n * g.c}, dev)
	pad := Launch{Kernel: "conv_pad", Global: pg, Local: pl,
		Args: []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgScratch, Index: 1}}}
	plan.Launches[0].Args[0] = Arg{Kind: ArgScratch, Index: 1}
	plan.Launches = append([]Launch{pad}, plan.Launches...)
	return plan, nil
}

// padsCopy says whether conv2d_vec reads a zero-padded copy of a padded conv's input
// (conv_pad) rather than checking each tap against the edges: for windows above 3 × 3
// (ResNet's 7×7 stem), whose edge checks convTile cannot hoist out of its unrolled
// loop (see there). The copy costs one pass over the input, small against the window's
// KH*KW multiply-adds per input value and output channel. Half storage pads every
// padded layer: reads inside the plane convert whole vectors of halves, where the
// edge checks read and convert one value at a time.
func (g convGeom) padsCopy() bool {
	w := g.win
	return (w.k[0]*w.k[1] > 9 || g.half) && (w.pb != [2]int{} || w.pe != [2]int{})
}

// paddedGeom is g over its input padded with zeros: no padding left, and a plane large
// enough that every tile of pxt pixels, the last one's pixels past the output's width
// included, reads inside it (conv_cpu.cl's ALL_INSIDE).
func (g convGeom) paddedGeom(pxt int) convGeom {
	w := g.win
	owt := ceilDiv(w.out[1], pxt) * pxt
	g.in = [2]int{
		max(g.in[0]+w.pb[0]+w.pe[0], (w.out[0]-1)*w.s[0]+(w.k[0]-1)*w.d[0]+1),
		max(g.in[1]+w.pb[1]+w.pe[1], (owt-1)*w.s[1]+(w.k[1]-1)*w.d[1]+1),
	}
	g.win.pb, g.win.pe = [2]int{}, [2]int{}
	return g
}

// vecChannelChunk is the chunk of input channels conv2d_vec runs over all its rows
// before the next (KCH): 64 channels of two 16-lane weight vectors are 8 KB, which stay
// in the L1 cache next to the rows' inputs and partial sums.
const vecChannelChunk = 64

// vecRows is conv2d_vec's output rows per work-item: a whole plane for a 1×1 layer on a
// small plane (under 128 pixels: MobileNetV2's 7×7 layers), where the channel tiles
// run first (cpuConvCandidatePlans) and one row per work-item would read the tile's
// weights once per row, from L3 when many cores do so at once
// (docs/kernels/conv-cpu.md#vecrows-whole-planes-on-small-planes). One row elsewhere, and
// wherever whole planes would leave under four work-items per compute unit (batch 1).
func vecRows(g convGeom, t cpuConvTile, dev DeviceInfo) int {
	oh, ow := g.win.out[0], g.win.out[1]
	if !g.pointwise() || oh*ow >= 128 {
		return 1
	}
	items := g.n * g.g * ceilDiv(g.mg, t.vec*t.weightVecs) * ceilDiv(ow, min(t.tilePixels, ow))
	if items < 4*max(dev.ComputeUnits, 1) {
		return 1
	}
	return oh
}

// packedConvPlan is a plan of conv_cpu.cl's kernel over global with tile t, after
// conv_pack's setup launch; more, if not nil, adds the kernel's own defines.
func packedConvPlan(g convGeom, t cpuConvTile, kernel string, global []int, more func(*defines), dev DeviceInfo) (*Plan, error) {
	tile := t.vec * t.weightVecs
	mb := ceilDiv(g.mg, tile)
	var d defines
	g.define(&d)
	d.int("VEC", t.vec)
	d.int("NV", t.weightVecs)
	d.int("PXT", min(t.tilePixels, g.win.out[1]))
	d.int("MB", mb)
	if more != nil {
		more(&d)
	}
	src, err := d.program("conv_cpu.cl")
	if err != nil {
		return nil, err
	}
	kk := g.cg * g.win.k[0] * g.win.k[1]
	packGlobal, packLocal := launchSize([]int{tile, kk, g.g * mb}, dev)
	args := g.kernelArgs(Arg{Kind: ArgScratch, Index: 0})
	return &Plan{
		Source:  src,
		Scratch: []int{4 * g.g * mb * kk * tile},
		Setup: []Launch{{Kernel: "conv_pack", Global: packGlobal, Local: packLocal,
			Args: []Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}}}},
		Launches:          []Launch{cpuLaunch(kernel, global, g.macs(), args, dev)},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}, nil
}

// cpuFCPlan plans fc_vec for a fully connected layer in gemmAsConv's geometry (N images
// of one pixel): conv_pack packs the weights once, then each work-item runs the
// heuristic's weight vectors for up to 8 images, fewer where that would leave under four
// work-items per compute unit. conv2d_vec ran such a layer one image per work-item,
// reading every weight once per image, far slower
// (docs/kernels/conv-cpu.md#fc_vec-fully-connected-layers). With kn the weights are
// (K, N), a MatMul's right operand, and conv_pack transposes them as it packs.
func cpuFCPlan(g convGeom, kn bool, dev DeviceInfo) (*Plan, error) {
	t := heuristicCPUTile(g, dev)
	tile := t.vec * t.weightVecs
	mb := ceilDiv(g.mg, tile)
	rows := min(max(g.n*mb/(4*max(dev.ComputeUnits, 1)), 1), 8, g.n)
	var d defines
	g.define(&d)
	d.int("VEC", t.vec)
	d.int("NV", t.weightVecs)
	d.int("PXT", 1)
	d.int("MB", mb)
	d.int("FC_ROWS", rows)
	d.bool("PACK_KN", kn)
	src, err := d.program("conv_cpu.cl")
	if err != nil {
		return nil, err
	}
	packGlobal, packLocal := launchSize([]int{tile, g.cg, mb}, dev)
	args := g.kernelArgs(Arg{Kind: ArgScratch, Index: 0})
	return &Plan{
		Source:  src,
		Scratch: []int{4 * mb * g.cg * tile},
		Setup: []Launch{{Kernel: "conv_pack", Global: packGlobal, Local: packLocal,
			Args: []Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}}}},
		Launches:   []Launch{cpuLaunch("fc_vec", []int{ceilDiv(g.n, rows), mb}, g.macs(), args, dev)},
		AliasInput: -1,
	}, nil
}

// macs is the number of multiply-adds a conv performs.
func (g convGeom) macs() int {
	return g.n * g.m * g.win.out[0] * g.win.out[1] * g.cg * g.win.k[0] * g.win.k[1]
}
