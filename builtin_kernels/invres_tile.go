package builtinkernels

import "github.com/clhost/clhost/internal/opspec"

// The tiles of pwdw_cpu.cl's kernels: channel vectors, pixels per step and bands of rows
// within the private buffers' bounds, and for a block the projection's tile.

// invResTile is the work per item of pwdw_cpu.cl's tiled kernels (their defines in
// capitals): chanVecs (CV) vectors of vec (V) expanded channels, stepPixels (PXT) pixels
// per step of the expansion, bandRows (ROWS) output rows of the depthwise convolution.
// Where groupRows (GR) is above 0 the block runs as pwdwr, the rolling kernel: groupRows
// output rows per projection step and a projection tile of projChannels (MT) output
// channels × projPixels (NP) vectors of pixels; with outLanes (OUT_LANES) projChannels
// output channels (a multiple of vec) × projPixels (NPX) single pixels; with claimGroups
// (DYN) the work-items claim their groups at run time, a band's own in order, then the
// last groups of bands still running. A block without groupRows runs as pwdwp, the
// banded kernel.
type invResTile struct {
	vec, chanVecs, stepPixels, bandRows, groupRows, projChannels, projPixels int
	outLanes, claimGroups                                                    bool
	thieves                                                                  bool // tests only: with claimGroups, every group claimed from a range's back
}

// chooseInvResTile picks the tile for a CPU device: channel vectors of the device's
// width, two of them where the layer has channels for four (per input channel, two
// weight vectors and stepPixels broadcast pixels then feed 2 × stepPixels
// multiply-adds), 8 pixels per step, 12 for a 1×1 expansion with two vectors where the
// registers hold them (AVX-512), and for a block on AVX-512 three vectors (9 pixels)
// where two would pad the channels or its expansion reads at most 16 channels; as many
// output rows as the buffer holds, halved while that leaves fewer than two work-items per
// compute unit (each band recomputes the expanded rows it shares with the next). A block
// (with its projection) takes rollingTile's tile for pwdwr where its buffers fit, else
// bandedBlockRows' bands for pwdwp. ok is false where the tiled kernel does not apply
// (GPUs, dilated windows, rows too wide for the buffer). Measurements:
// docs/kernels/invres.md#chooseinvrestile.
func chooseInvResTile(g invResGeom, dev DeviceInfo) (invResTile, bool) {
	t, ok := invResTileFor(g, dev)
	if ok && !g.pw.pointwise() && stemStageBytes(g, t.stepPixels) > maxStemStage {
		return invResTile{}, false
	}
	return t, ok
}

// maxStemStage bounds the private copy of the input rows that a stem expansion's
// windows reach along one expanded row (bytes; expandStemRows). MobileNetV2's stem
// (3 channels × 3 rows of 241 columns) takes 8.7 KB.
const maxStemStage = 32 << 10

// stemStageBytes is that copy's size for a stem expansion of px pixels per step: C ×
// EKH rows of the columns its steps' windows reach (pwdw_cpu.cl's XW).
func stemStageBytes(g invResGeom, px int) int {
	w := g.pw.win
	steps := ceilDiv(g.dw.in[1], px)
	return 4 * g.pw.c * w.k[0] * ((steps*px-1)*w.s[1] + w.k[1])
}

// invResTileFor is chooseInvResTile without the bound on a stem's staged input rows.
func invResTileFor(g invResGeom, dev DeviceInfo) (invResTile, bool) {
	w := g.dw.win
	if dev.IsGPU || w.d != [2]int{1, 1} {
		return invResTile{}, false
	}
	v := dev.FloatVectorWidth
	if v != 4 && v != 8 && v != 16 {
		v = 8
	}
	for v > 4 && v/2 >= g.dw.m {
		v /= 2
	}
	cv := 1
	if g.dw.m >= 4*v || !g.pw.pointwise() && g.dw.m >= 2*v {
		// A stem's expansion (few channels, many taps each) takes two vectors from 2v
		// channels: one channel block then reads each input tap once.
		cv = 2
	}
	regs := 16 // AVX and SSE
	if v == 16 {
		regs = 32 // AVX-512
	}
	// A stem keeps 8 pixels per step: its taps at stride 2 share broadcasts across the
	// window's columns, which 12 pixels' accumulators leave no registers to hold
	// (docs/kernels/invres.md#a-stems-pixels-per-step).
	px := 8
	if cv == 2 && g.pw.pointwise() {
		px = min(12, (regs-cv-2)/cv)
	}
	rows := invResRows(g, v*cv, dev)
	if g.proj != nil {
		rt := invResTile{vec: v, chanVecs: cv, stepPixels: px}
		padded := func(cv int) int { return ceilDiv(g.dw.m, cv*v) * cv * v }
		if regs == 32 && cv == 2 && (padded(3) < padded(2) || padded(3) == padded(2) && g.pw.pointwise() && g.pw.c <= 16) {
			// Three vectors where two would pad the channels (144 = 9 vectors of 16: five
			// blocks of 32 compute 160) and the registers hold them, and where both fit
			// and the expansion reads at most 16 channels, whose fixed work per step (its
			// bias, its stores) weighs most (docs/kernels/invres.md#three-channel-vectors).
			rt.chanVecs, rt.stepPixels = 3, (regs-3-2)/3
		}
		if t, ok := rollingTile(g, rt, dev); ok {
			return t, true
		}
		rows = bandedBlockRows(g, v, cv, dev)
	}
	if rows == 0 {
		return invResTile{}, false
	}
	return invResTile{vec: v, chanVecs: cv, stepPixels: px, bandRows: rows}, true
}

// bandedBlockRows is how many output rows a pwdwp work-item (one band of every channel)
// takes: one, more only while four work-items per compute unit remain; 0 where its
// buffers (the expanded rows of a channel block and the band's depthwise results of all
// channels) exceed opspec.InvResBuffer.
func bandedBlockRows(g invResGeom, v, cv int, dev DeviceInfo) int {
	w := g.dw.win
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1])
	vc := v * cv
	bytes := func(rows int) int {
		qp := ceilDiv(rows*w.out[1], v) * v
		return 4 * (((rows-1)*w.s[0]+w.k[0])*bw*vc + ceilDiv(g.dw.m, vc)*vc*qp)
	}
	if bytes(1) > opspec.InvResBuffer {
		return 0
	}
	rows := 1
	for rows < w.out[0] && bytes(rows+1) <= opspec.InvResBuffer &&
		ceilDiv(w.out[0], rows+1)*g.dw.n >= 4*max(dev.ComputeUnits, 1) {
		rows++
	}
	return rows
}

// rollingBytes is what pwdwr's buffers take with groups of gr output rows and
// projection tiles of np pixel vectors (or pixels, with outLanes).
func rollingBytes(g invResGeom, t invResTile, gr, np int) int {
	w := g.dw.win
	vc := t.vec * t.chanVecs
	ch := ceilDiv(g.dw.m, vc) * vc
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1])
	rq := ceilDiv(gr*w.out[1], np*t.vec) * np * t.vec
	if t.outLanes {
		rq = max(ceilDiv(gr*w.out[1], t.vec)*t.vec, ceilDiv(gr*w.out[1], np)*np)
	}
	return 4 * ch * (((gr-1)*w.s[0]+w.k[0])*bw + rq)
}

// rollingTile completes tile t (its vectors and expansion step) for pwdwr: bands of
// output rows such that the batch's bands give every compute unit two (at batch 16 on 16
// units, half an image each; a band recomputes only the rows its window shares with the
// next), then the projection's output channels in the lanes (rollingOutLanesTile) where
// they fill their vectors, else pixels in the lanes (rollingPixelLanesTile), and where a
// band holds more than one group its work-items claim their groups at run time (claimGroups):
// a work-item done with its own band, once all have started, takes the last groups of
// bands still running. ok is false where not even one row's buffers fit.
// The claims balance cores of unequal speed, where a launch of one band per thread waits
// on the slowest; one band per unit, four bands per unit and channel-blocked tensors
// measured slower or no faster (docs/kernels/invres.md#rollingtile).
func rollingTile(g invResGeom, t invResTile, dev DeviceInfo) (invResTile, bool) {
	oh := g.dw.win.out[0]
	nb := min(max(ceilDiv(2*max(dev.ComputeUnits, 1), g.dw.n), 1), oh)
	t.bandRows = ceilDiv(oh, nb)
	lt, ok := rollingOutLanesTile(g, t)
	if !ok {
		lt, ok = rollingPixelLanesTile(g, t)
	}
	// The claim counters hold a band's groups taken from each end in 16 bits each, and
	// every work-item may add one failed claim to each.
	lt.claimGroups = ok && lt.groupRows < lt.bandRows && ceilDiv(lt.bandRows, lt.groupRows)+nb*g.dw.n < 1<<15
	return lt, ok
}

// projRegs is how many accumulators pwdwr's projection tile may keep in registers
// with vectors of v lanes: AVX-512's 32 registers hold 24 beside the tile's loads, AVX's
// and SSE's 16 hold 12.
func projRegs(v int) int {
	if v == 16 {
		return 24
	}
	return 12
}

// rollingPixelLanesTile completes tile t (its vectors, expansion step and bands) for pwdwr
// with pixels in the projection's lanes: the group of rows and projection tile that
// waste the fewest lanes and loads with buffers within opspec.InvResRollingBuffer. ok is false where
// not even one row's buffers fit.
func rollingPixelLanesTile(g invResGeom, t invResTile) (invResTile, bool) {
	t.outLanes = false
	ow := g.dw.win.out[1]
	regs := projRegs(t.vec)
	best := -1.0
	for gr := 1; gr <= t.bandRows; gr++ {
		for np := 1; np <= 4; np++ {
			if rollingBytes(g, t, gr, np) > opspec.InvResRollingBuffer {
				continue
			}
			for mt := 1; mt*np <= regs; mt++ {
				// Lanes computed over the band (the last group's and tile's included),
				// weighed by loads per multiply-add.
				groups, last := t.bandRows/gr, t.bandRows%gr
				lanes := func(rows int) int { return ceilDiv(rows*ow, np*t.vec) * np * t.vec }
				padded := ceilDiv(g.proj.m, mt) * mt * (groups*lanes(gr) + lanes(last))
				cost := float64(padded) * (1 + float64(mt+np)/float64(2*mt*np))
				if best < 0 || cost < best {
					best = cost
					t.groupRows, t.projChannels, t.projPixels = gr, mt, np
				}
			}
		}
	}
	return t, best >= 0
}

// rollingOutLanesTile completes tile t (its vectors, expansion step and bands) for pwdwr
// with the projection's output channels in the lanes (OUT_LANES), where they fill their
// vectors (or nearly): no transposition, and tiles of any number of pixels. Groups as
// tall as the buffers allow (fewer group steps; no lanes to waste on their pixels), and
// a tile of one or two vectors of channels × projRegs/vectors pixels. ok is false where the
// outputs leave more than a quarter of their vectors' lanes spare, no group fits, or a
// group holds fewer than two tiles.
func rollingOutLanesTile(g invResGeom, t invResTile) (invResTile, bool) {
	// Outputs that fill at least three quarters of their vectors: the spare lanes are
	// computed and dropped, which measured faster than pixels in the lanes on
	// MobileNetV2's 24-output blocks (two vectors of 16 lanes; see
	// docs/kernels/invres.md#rollingoutlanestile-output-channels-in-the-lanes).
	vecs := ceilDiv(g.proj.m, t.vec)
	if 4*g.proj.m < 3*vecs*t.vec {
		return t, false
	}
	// Two vectors of channels × 12 pixels (AVX-512) where the outputs make pairs: they
	// measured faster than the squarer tiles that the loads per multiply-add alone would
	// favour (docs/kernels/invres.md#rollingoutlanestile-output-channels-in-the-lanes).
	ovt := 1
	if vecs%2 == 0 {
		ovt = 2
	}
	lt := t
	lt.outLanes, lt.projChannels, lt.projPixels = true, ovt*t.vec, projRegs(t.vec)/ovt
	for lt.groupRows = t.bandRows; lt.groupRows >= 1; lt.groupRows-- {
		if rollingBytes(g, lt, lt.groupRows, lt.projPixels) <= opspec.InvResRollingBuffer {
			break
		}
	}
	// A group narrower than two pixel tiles (single rows of narrow planes at batch 1)
	// would compute more lanes than pixels: pixel lanes waste fewer there.
	if lt.groupRows < 1 || lt.groupRows*g.dw.win.out[1] < 2*lt.projPixels {
		return t, false
	}
	return lt, true
}

// invResRows is how many output rows a pwdw work-item of vc channels takes: as many as
// opspec.InvResBuffer holds, halved while fewer than two work-items per compute unit remain;
// 0 where not even one row's window fits.
func invResRows(g invResGeom, vc int, dev DeviceInfo) int {
	w := g.dw.win
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1]) // the kernel's BW
	irows := opspec.InvResBuffer / (4 * vc * bw)
	if irows < w.k[0] {
		return 0
	}
	rows := min((irows-w.k[0])/w.s[0]+1, w.out[0])
	mb := ceilDiv(g.dw.m, vc)
	for rows > 1 && ceilDiv(w.out[0], rows)*mb*g.dw.n < 2*max(dev.ComputeUnits, 1) {
		rows = ceilDiv(rows, 2)
	}
	return rows
}
