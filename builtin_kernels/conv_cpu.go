package builtinkernels

import "slices"

// cpuConvTile is one register tile of conv_cpu.cl: nv vectors of vec output channels
// by pxt pixels per work-item.
type cpuConvTile struct{ vec, nv, pxt int }

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

// bestPixelTile picks, from lo to hi, the pixel tile that wastes the fewest lanes on the
// row's last tile, the larger on a tie.
func bestPixelTile(ow, lo, hi int) int {
	best, waste := hi, ceilDiv(ow, hi)*hi-ow
	for p := hi - 1; p >= lo; p-- {
		if w := ceilDiv(ow, p)*p - ow; w < waste {
			best, waste = p, w
		}
	}
	return min(best, ow)
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
	if t.vec != 16 || t.nv != 2 || g.mg < 128 || g.cg*g.win.k[0]*g.win.k[1] < 128*9 {
		return t, false
	}
	t.nv = 3
	items := g.n * g.g * ceilDiv(g.mg, t.vec*t.nv) * g.win.out[0] * ceilDiv(g.win.out[1], min(t.pxt, g.win.out[1]))
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
		t.pxt = min(t.pxt, g.win.out[1])
		if !seen[t] {
			seen[t] = true
			list = append(list, t)
		}
	}
	ow := g.win.out[1]
	if first.nv == 2 {
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
	pxt := min(t.pxt, g.win.out[1])
	rows = max(min(rows, g.win.out[0]), 1)
	global := []int{ceilDiv(g.win.out[1], pxt), ceilDiv(g.win.out[0], rows), g.n * g.g * ceilDiv(g.mg, t.vec*t.nv)}
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
	conv := g.paddedGeom(min(t.pxt, g.win.out[1]))
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
	plan.Scratch = append(plan.Scratch, 4*g.n*g.c*conv.in[0]*conv.in[1])
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
// KH*KW multiply-adds per input value and output channel.
func (g convGeom) padsCopy() bool {
	w := g.win
	return w.k[0]*w.k[1] > 9 && (w.pb != [2]int{} || w.pe != [2]int{})
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
	items := g.n * g.g * ceilDiv(g.mg, t.vec*t.nv) * ceilDiv(ow, min(t.pxt, ow))
	if items < 4*max(dev.ComputeUnits, 1) {
		return 1
	}
	return oh
}

// packedConvPlan is a plan of conv_cpu.cl's kernel over global with tile t, after
// conv_pack's setup launch; more, if not nil, adds the kernel's own defines.
func packedConvPlan(g convGeom, t cpuConvTile, kernel string, global []int, more func(*defines), dev DeviceInfo) (*Plan, error) {
	tile := t.vec * t.nv
	mb := ceilDiv(g.mg, tile)
	var d defines
	g.define(&d)
	d.int("VEC", t.vec)
	d.int("NV", t.nv)
	d.int("PXT", min(t.pxt, g.win.out[1]))
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

// maxPoolRowBuffer bounds conv2d_maxpool's two private rows of channel vectors (bytes),
// which must stay in the core's cache next to the input rows: beyond it the Conv and its
// pool run apart.
const maxPoolRowBuffer = 64 << 10

// minPoolBandRows is the fewest pooled rows of a conv2d_maxpool work-item. Each band
// computes again the conv row its first window shares with the band before it: at 4
// rows (8 conv rows at stride 2), one conv row in 9.
const minPoolBandRows = 4

// cpuConvMaxPoolPlan plans conv2d_maxpool, tile t of conv_cpu.cl, for a Conv that
// carries a max pool: the weights packed once as for conv2d_vec, then one launch over
// bands of pooled rows, as many as give every compute unit eight work-items, each of at
// least minPoolBandRows rows. ok is false where the kernel does not run the layer: GPUs,
// 1-D convolutions, a residual, conv rows too long for its buffers.
func cpuConvMaxPoolPlan(g convGeom, t cpuConvTile, dev DeviceInfo) (plan *Plan, ok bool, err error) {
	if dev.IsGPU || g.nsp != 2 || g.hasResidual || g.mpool == nil {
		return nil, false, nil
	}
	pxt := min(t.pxt, g.win.out[1])
	if 2*ceilDiv(g.win.out[1], pxt)*pxt*t.vec*t.nv*4 > maxPoolRowBuffer {
		return nil, false, nil
	}
	poh, pow := g.mpool.win.out[0], g.mpool.win.out[1]
	planes := g.n * g.g * ceilDiv(g.mg, t.vec*t.nv)
	bands := max(min(ceilDiv(8*max(dev.ComputeUnits, 1), planes), ceilDiv(poh, minPoolBandRows)), 1)
	rows := ceilDiv(poh, bands)
	bands = ceilDiv(poh, rows)
	plan, err = paddedConvPlan(g, t, "conv2d_maxpool", []int{bands, planes}, func(d *defines) {
		g.mpool.defineFused(d)
		d.int("MP_ROWS", rows) // not MP_PR: the pool's right padding has that name
		d.int("MP_NB", bands)
		if g.yn == 0 {
			d.int("YN", g.m*poh*pow)
		}
	}, dev)
	return plan, err == nil, err
}

// cpuConvMaxPoolCandidates are the tuner's plans for a Conv that carries a max pool:
// conv2d_maxpool with conv_cpu.cl's first two tiles where it runs the layer, plan (the
// Conv and its pool apart) elsewhere.
func cpuConvMaxPoolCandidates(g convGeom, plan *Plan, dev DeviceInfo) ([]*Plan, error) {
	tiles := cpuConvCandidates(g, dev)
	var plans []*Plan
	for _, t := range tiles[:min(2, len(tiles))] {
		p, ok, err := cpuConvMaxPoolPlan(g, t, dev)
		if err != nil {
			return nil, err
		}
		if ok {
			plans = append(plans, p)
		}
	}
	if len(plans) == 0 {
		return []*Plan{plan}, nil
	}
	return plans, nil
}

// cpuFCPlan plans fc_vec for a fully connected layer in gemmAsConv's geometry (N images
// of one pixel): conv_pack packs the weights once, then each work-item runs the
// heuristic's weight vectors for up to 8 images, fewer where that would leave under four
// work-items per compute unit. conv2d_vec ran such a layer one image per work-item,
// reading every weight once per image, far slower
// (docs/kernels/conv-cpu.md#fc_vec-fully-connected-layers).
func cpuFCPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	t := heuristicCPUTile(g, dev)
	tile := t.vec * t.nv
	mb := ceilDiv(g.mg, tile)
	rows := min(max(g.n*mb/(4*max(dev.ComputeUnits, 1)), 1), 8, g.n)
	var d defines
	g.define(&d)
	d.int("VEC", t.vec)
	d.int("NV", t.nv)
	d.int("PXT", 1)
	d.int("MB", mb)
	d.int("FC_ROWS", rows)
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

// windowVec is the row vector width of window_cpu.cl: the widest of 4 and 8 lanes that
// fits in an output row.
func windowVec(ow int, dev DeviceInfo) int {
	if ow >= 8 && dev.FloatVectorWidth >= 8 {
		return 8
	}
	return 4
}

// smallKernelMACs is the number of multiply-adds (or comparisons) per compute unit below
// which a CPU kernel runs as one work-group per compute unit: PoCL wakes a worker thread
// for each work-group it hands out, which the layers at batch 1 do too little work to
// pay for. Chosen by measurement (docs/kernels/conv-cpu.md#small-launches-smallkernelmacs).
const smallKernelMACs = 2 << 20

// macs is the number of multiply-adds a conv performs.
func (g convGeom) macs() int {
	return g.n * g.m * g.win.out[0] * g.win.out[1] * g.cg * g.win.k[0] * g.win.k[1]
}

// cpuLaunch is a launch of one work-item per work-group, as the CPU kernels are written,
// unless the kernel does less than smallKernelMACs of work per compute unit: then the
// work-items are gathered into about one work-group per compute unit (the global size
// padded to whole groups; every CPU kernel returns early outside its range).
func cpuLaunch(kernel string, global []int, macs int, args []Arg, dev DeviceInfo) Launch {
	l := Launch{Kernel: kernel, Global: cloneShape(global), Local: make([]int, len(global)), Args: args}
	for i := range l.Local {
		l.Local[i] = 1
	}
	cu := max(dev.ComputeUnits, 1)
	items := 1
	for _, v := range global {
		items *= v
	}
	per := ceilDiv(items, cu)
	if macs >= smallKernelMACs*cu || per <= 1 || (dev.MaxWorkGroupSize > 0 && per > dev.MaxWorkGroupSize) {
		return l
	}
	// Fill the group along the first dimensions (neighbouring pixel tiles or planes share
	// input rows), rounding down: a few more groups than units rather than fewer.
	size := 1
	for i, v := range global {
		loc := max(1, min(v, per/size))
		size *= loc
		l.Local[i] = loc
		l.Global[i] = ceilDiv(v, loc) * loc
	}
	return l
}

// planesPerItem groups units of work into work-items: enough items for every compute
// unit four times over, and no more items than that, as each costs the driver a
// work-group of its own.
func planesPerItem(planes int, dev DeviceInfo) int {
	return max(min(planes/(4*max(dev.ComputeUnits, 1)), 16), 1)
}

// windowRows is how many output rows window_cpu.cl computes at a time: 4 to 6 (enough
// independent accumulators to hide the latency of a fused multiply-add, few enough to
// stay in registers), the count that wastes the fewest rows on the last step.
func windowRows(oh int) int {
	return bestPixelTile(oh, 4, 6)
}

// maxWindowBuffer bounds window_cpu.cl's private row buffer (bytes): beyond it, rows so
// long that the buffer would not stay in cache, the portable kernels run instead.
const maxWindowBuffer = 64 << 10

// windowPlan plans a kernel of window_cpu.cl over planes units of xch input channels
// each, nr output rows at a time (d holds the layer's own defines), that does macs
// multiply-adds or comparisons in all; ok is false when its row buffer would be too large.
func windowPlan(d *defines, kernel string, planes, xch, nr, vec int, win window, in [2]int, macs int, args []Arg, dev DeviceInfo) (plan *Plan, ok bool, err error) {
	oh, ow := win.out[0], win.out[1]
	// One phase holds every position a vector of the row reads (a row narrower than a
	// vector computes a whole one) and every input column.
	lb := max(max(ow, vec)+(win.k[1]-1)*win.d[1]/win.s[1], ceilDiv(win.pb[1]+in[1], win.s[1]))
	nr = min(nr, oh)
	ring := (nr-1)*win.s[0] + (win.k[0]-1)*win.d[0] + 1
	if 4*xch*(ring+1)*win.s[1]*lb > maxWindowBuffer {
		return nil, false, nil
	}
	// Too few planes for the compute units are split into bands of rows, each band
	// copying the rows it shares with the one above again.
	cu := max(dev.ComputeUnits, 1)
	bands := 1
	if planes < 4*cu {
		bands = min(ceilDiv(oh, nr), ceilDiv(4*cu, planes))
	}
	rows := ceilDiv(ceilDiv(oh, bands), nr) * nr
	bands = ceilDiv(oh, rows)
	per := planesPerItem(planes*bands, dev)
	d.int("VEC", vec)
	d.int("NR", nr)
	d.int("LB", lb)
	d.int("RING", ring)
	d.int("ROWS", rows)
	d.int("BANDS", bands)
	d.int("PLANES", per)
	src, err := d.program("window_cpu.cl")
	if err != nil {
		return nil, false, err
	}
	return &Plan{
		Source:     src,
		Launches:   []Launch{cpuLaunch(kernel, []int{ceilDiv(planes*bands, per)}, macs, args, dev)},
		AliasInput: -1,
	}, true, nil
}

// cpuDepthwisePlan plans window_cpu.cl's convolution for a depthwise conv: each unit
// computes up to 4 of a group's output channels (a channel multiplier above 1) from its
// one input plane. ok is false where the rows are too long for its buffer.
func cpuDepthwisePlan(g convGeom, dev DeviceInfo) (*Plan, bool, error) {
	return cpuWindowConvPlan(g, min(g.mg, 4), depthwiseRows(g.win.out[0]), depthwiseVec(g, dev), dev)
}

// depthwiseVec is the row vector width of a depthwise conv: 16 lanes where the device
// has them, the stride is 1 and the row holds a whole vector, else windowVec's; strided
// layers measured no faster with 16 (docs/kernels/window-cpu.md#depthwisevec).
func depthwiseVec(g convGeom, dev DeviceInfo) int {
	if ow := g.win.out[1]; ow >= 16 && g.win.s[1] == 1 && dev.FloatVectorWidth >= 16 {
		return 16
	}
	return windowVec(g.win.out[1], dev)
}

// depthwiseRows is how many output rows a depthwise conv computes at a time. With one
// output channel per unit the accumulators are only that many vectors, so small planes
// take up to 8 rows (a 7×7 plane at once, 14 rows in two steps of 7), which saves the
// per-step work of copying and indexing rows. Wider planes keep windowRows', where 8 rows
// measured slower than 4 (docs/kernels/window-cpu.md#depthwiserows).
func depthwiseRows(oh int) int {
	switch {
	case oh <= 8:
		return oh
	case oh <= 16:
		return bestPixelTile(oh, 6, 8)
	}
	return windowRows(oh)
}

// cpuWindowConvPlan plans window_cpu.cl's convolution with units of mt output channels
// of a group, nr output rows at a time.
func cpuWindowConvPlan(g convGeom, mt, nr, vec int, dev DeviceInfo) (*Plan, bool, error) {
	mb := ceilDiv(g.mg, mt)
	var d defines
	g.define(&d)
	d.int("MT", mt)
	d.int("MB", mb)
	args := g.kernelArgs(Arg{Kind: ArgInput, Index: 1})
	plan, ok, err := windowPlan(&d, "conv2d_window", g.n*g.g*mb, g.cg, nr, vec, g.win, g.in, g.macs(), args, dev)
	if plan != nil {
		plan.OutputBatchStride = g.yn
	}
	return plan, ok, err
}

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

// cpu1x1Tile is one register tile of conv1x1: mt output channels by np vectors of vec
// pixels.
// mti channel tiles run one after another in each work-item (0: as many as leave every
// compute unit four work-items), over chunks of kc input channels (0: chunk1x1 where a
// work-item runs several channel tiles, else all of them).
type cpu1x1Tile struct{ vec, mt, np, mti, kc int }

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
	if big.vec == 16 && big.mt == 12 {
		alt.mt = 8
	} else if big.vec == 16 {
		alt.mt = 12
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
// GEMM then reads as its X.
func cpu1x1Plan(g convGeom, t cpu1x1Tile, dev DeviceInfo) (*Plan, error) {
	gemm := g.gemm1x1()
	mt1 := ceilDiv(g.mg, t.mt)
	var d defines
	gemm.define(&d)
	d.int("VEC", t.vec)
	d.int("MT", t.mt)
	d.int("NP", t.np)
	d.int("MT1", mt1)
	p := gemm.in[0] * gemm.in[1]
	tiles := ceilDiv(p, t.vec*t.np)
	mti := t.mti
	if g.pool {
		mti = 1 // POOL_AVG: one channel tile per work-item, over the whole plane
	} else if mti <= 0 {
		mti = channelTilesPerItem(g.cg, g.mg, mt1, tiles*g.n*g.g, dev)
	}
	mtb := ceilDiv(mt1, mti)
	d.int("MTI", mti)
	kc := t.kc
	if kc == 0 && mti > 1 && mti*t.mt*t.np*t.vec <= maxChunkPartials {
		kc = chunk1x1
	}
	if kc > 0 && kc < g.cg {
		d.int("KC", kc)
	}
	tpi := tilesPerItem(g.cg*t.mt*t.np*mti, tiles, mtb*g.n*g.g, dev)
	if g.pool {
		tpi = tiles
		d.int("POOL_AVG", 1)
		if g.yn == 0 {
			d.int("YN", g.m)
		}
	}
	d.int("TPI", tpi)
	d.bool("PREFETCH_BUILTIN", dev.Prefetch)
	strided := g.strided1x1()
	if strided {
		d.int("XH", g.in[0])
		d.int("XW", g.in[1])
		d.int("XSH", g.win.s[0])
		d.int("XSW", g.win.s[1])
	}
	src, err := d.program("conv1x1_cpu.cl")
	if err != nil {
		return nil, err
	}
	packGlobal, packLocal := launchSize([]int{t.mt, g.cg, g.g * mt1}, dev)
	args := g.kernelArgs(Arg{Kind: ArgScratch, Index: 0})
	plan := &Plan{
		Source:  src,
		Scratch: []int{4 * g.g * mt1 * g.cg * t.mt},
		Setup: []Launch{{Kernel: "conv1x1_pack", Global: packGlobal, Local: packLocal,
			Args: []Arg{{Kind: ArgInput, Index: 1}, {Kind: ArgScratch, Index: 0}}}},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}
	if strided {
		plan.Scratch = append(plan.Scratch, 4*g.n*g.c*p)
		sg, sl := launchSize([]int{gemm.in[0], g.n * g.c}, dev)
		plan.Launches = append(plan.Launches, Launch{Kernel: "conv1x1_subsample", Global: sg, Local: sl,
			Args: []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgScratch, Index: 1}}})
		args[0] = Arg{Kind: ArgScratch, Index: 1}
	}
	plan.Launches = append(plan.Launches, cpuLaunch("conv1x1", []int{ceilDiv(tiles, tpi), mtb, g.n * g.g}, g.macs(), args, dev))
	return plan, nil
}
