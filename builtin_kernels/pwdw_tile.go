package builtinkernels

import "github.com/clhost/clhost/builtin_kernels/opspec"

// The tiles of pwdw_cpu.cl's kernels: channel vectors, pixels per step and bands of rows
// within the private buffers' bounds, and for a block the projection's tile.

// pwdwTile is pwdw's work per item: cv vectors of v expanded channels, px pixels per
// step of the 1×1 convolution, rows output rows of the depthwise one. Where gr is above
// 0 the block runs as pwdwr, gr output rows per projection step and a projection tile of
// mt output channels × np vectors of pixels; with outLanes (pwdwr's OUT_LANES) mt output
// channels (a multiple of v: mt/v vectors) × np pixels; with dyn (pwdwr's DYN) the
// work-items claim their groups at run time, a band's own in order, then the last groups
// of bands still running.
type pwdwTile struct {
	v, cv, px, rows, gr, mt, np int
	outLanes, dyn               bool
	thieves                     bool // tests only: with dyn, every group claimed from a range's back
}

// choosePwdwTile picks the tile for a CPU device: channel vectors of the device's width,
// two of them where the layer has channels for four (per input channel, two weight
// vectors and px broadcast pixels then feed 2*px multiply-adds), 8 pixels per step, 12
// for a 1×1 expansion with two vectors where the registers hold them (AVX-512), and for a
// block on AVX-512 three vectors (9 pixels) where two
// would pad the channels or its expansion reads at most 16 channels; as many output
// rows as the buffer holds, halved while that leaves fewer than two work-items per
// compute unit (each band recomputes the expanded rows it shares with the next). A block
// (with its projection) takes pwdwRollTile's tile for pwdwr where its buffers fit, else
// pwdwBlockRows' bands for pwdwp. ok is false where the tiled kernel does not apply
// (GPUs, dilated windows, rows too wide for the buffer). Measurements:
// docs/kernels/pwdw.md#choosepwdwtile.
func choosePwdwTile(g pwdwGeom, dev DeviceInfo) (pwdwTile, bool) {
	t, ok := pwdwTileFor(g, dev)
	if ok && !g.pw.pointwise() && stemStageBytes(g, t.px) > maxStemStage {
		return pwdwTile{}, false
	}
	return t, ok
}

// maxStemStage bounds the private copy of the input rows that a stem expansion's
// windows reach along one expanded row (bytes; expandStemRows). MobileNetV2's stem
// (3 channels × 3 rows of 241 columns) takes 8.7 KB.
const maxStemStage = 32 << 10

// stemStageBytes is that copy's size for a stem expansion of px pixels per step: C ×
// EKH rows of the columns its steps' windows reach (pwdw_cpu.cl's XW).
func stemStageBytes(g pwdwGeom, px int) int {
	w := g.pw.win
	steps := ceilDiv(g.dw.in[1], px)
	return 4 * g.pw.c * w.k[0] * ((steps*px-1)*w.s[1] + w.k[1])
}

// pwdwTileFor is choosePwdwTile without the bound on a stem's staged input rows.
func pwdwTileFor(g pwdwGeom, dev DeviceInfo) (pwdwTile, bool) {
	w := g.dw.win
	if dev.IsGPU || w.d != [2]int{1, 1} {
		return pwdwTile{}, false
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
	// (docs/kernels/pwdw.md#a-stems-pixels-per-step).
	px := 8
	if cv == 2 && g.pw.pointwise() {
		px = min(12, (regs-cv-2)/cv)
	}
	rows := pwdwRows(g, v*cv, dev)
	if g.proj != nil {
		rt := pwdwTile{v: v, cv: cv, px: px}
		padded := func(cv int) int { return ceilDiv(g.dw.m, cv*v) * cv * v }
		if regs == 32 && cv == 2 && (padded(3) < padded(2) || padded(3) == padded(2) && g.pw.pointwise() && g.pw.c <= 16) {
			// Three vectors where two would pad the channels (144 = 9 vectors of 16: five
			// blocks of 32 compute 160) and the registers hold them, and where both fit
			// and the expansion reads at most 16 channels, whose fixed work per step (its
			// bias, its stores) weighs most (docs/kernels/pwdw.md#three-channel-vectors).
			rt.cv, rt.px = 3, (regs-3-2)/3
		}
		if t, ok := pwdwRollTile(g, rt, dev); ok {
			return t, true
		}
		rows = pwdwBlockRows(g, v, cv, dev)
	}
	if rows == 0 {
		return pwdwTile{}, false
	}
	return pwdwTile{v: v, cv: cv, px: px, rows: rows}, true
}

// pwdwBlockRows is how many output rows a pwdwp work-item (one band of every channel)
// takes: one, more only while four work-items per compute unit remain; 0 where its
// buffers (the expanded rows of a channel block and the band's depthwise results of all
// channels) exceed opspec.InvResBuffer.
func pwdwBlockRows(g pwdwGeom, v, cv int, dev DeviceInfo) int {
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

// pwdwRollBytes is what pwdwr's buffers take with groups of gr output rows.
func pwdwRollBytes(g pwdwGeom, t pwdwTile, gr, np int) int {
	w := g.dw.win
	vc := t.v * t.cv
	ch := ceilDiv(g.dw.m, vc) * vc
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1])
	rq := ceilDiv(gr*w.out[1], np*t.v) * np * t.v
	if t.outLanes {
		rq = max(ceilDiv(gr*w.out[1], t.v)*t.v, ceilDiv(gr*w.out[1], np)*np)
	}
	return 4 * ch * (((gr-1)*w.s[0]+w.k[0])*bw + rq)
}

// pwdwRollTile completes tile t (its vectors and expansion step) for pwdwr: bands of
// output rows such that the batch's bands give every compute unit two (at batch 16 on 16
// units, half an image each; a band recomputes only the rows its window shares with the
// next), then the projection's output channels in the lanes (pwdwOutLanesTile) where
// they fill their vectors, else pixels in the lanes (pwdwPixelLanesTile), and where a
// band holds more than one group its work-items claim their groups at run time (dyn):
// a work-item done with its own band, once all have started, takes the last groups of
// bands still running. ok is false where not even one row's buffers fit.
// The claims balance cores of unequal speed, where a launch of one band per thread waits
// on the slowest; one band per unit, four bands per unit and channel-blocked tensors
// measured slower or no faster (docs/kernels/pwdw.md#pwdwrolltile).
func pwdwRollTile(g pwdwGeom, t pwdwTile, dev DeviceInfo) (pwdwTile, bool) {
	oh := g.dw.win.out[0]
	nb := min(max(ceilDiv(2*max(dev.ComputeUnits, 1), g.dw.n), 1), oh)
	t.rows = ceilDiv(oh, nb)
	lt, ok := pwdwOutLanesTile(g, t)
	if !ok {
		lt, ok = pwdwPixelLanesTile(g, t)
	}
	// The claim counters hold a band's groups taken from each end in 16 bits each, and
	// every work-item may add one failed claim to each.
	lt.dyn = ok && lt.gr < lt.rows && ceilDiv(lt.rows, lt.gr)+nb*g.dw.n < 1<<15
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

// pwdwPixelLanesTile completes tile t (its vectors, expansion step and bands) for pwdwr
// with pixels in the projection's lanes: the group of rows and projection tile that
// waste the fewest lanes and loads with buffers within opspec.InvResRollingBuffer. ok is false where
// not even one row's buffers fit.
func pwdwPixelLanesTile(g pwdwGeom, t pwdwTile) (pwdwTile, bool) {
	t.outLanes = false
	ow := g.dw.win.out[1]
	regs := projRegs(t.v)
	best := -1.0
	for gr := 1; gr <= t.rows; gr++ {
		for np := 1; np <= 4; np++ {
			if pwdwRollBytes(g, t, gr, np) > opspec.InvResRollingBuffer {
				continue
			}
			for mt := 1; mt*np <= regs; mt++ {
				// Lanes computed over the band (the last group's and tile's included),
				// weighed by loads per multiply-add.
				groups, last := t.rows/gr, t.rows%gr
				lanes := func(rows int) int { return ceilDiv(rows*ow, np*t.v) * np * t.v }
				padded := ceilDiv(g.proj.m, mt) * mt * (groups*lanes(gr) + lanes(last))
				cost := float64(padded) * (1 + float64(mt+np)/float64(2*mt*np))
				if best < 0 || cost < best {
					best = cost
					t.gr, t.mt, t.np = gr, mt, np
				}
			}
		}
	}
	return t, best >= 0
}

// pwdwOutLanesTile completes tile t (its vectors, expansion step and bands) for pwdwr
// with the projection's output channels in the lanes (OUT_LANES), where they fill their
// vectors (or nearly): no transposition, and tiles of any number of pixels. Groups as
// tall as the buffers allow (fewer group steps; no lanes to waste on their pixels), and
// a tile of one or two vectors of channels × projRegs/vectors pixels. ok is false where the
// outputs leave more than a quarter of their vectors' lanes spare, no group fits, or a
// group holds fewer than two tiles.
func pwdwOutLanesTile(g pwdwGeom, t pwdwTile) (pwdwTile, bool) {
	// Outputs that fill at least three quarters of their vectors: the spare lanes are
	// computed and dropped, which measured faster than pixels in the lanes on
	// MobileNetV2's 24-output blocks (two vectors of 16 lanes; see
	// docs/kernels/pwdw.md#pwdwoutlanestile-output-channels-in-the-lanes).
	vecs := ceilDiv(g.proj.m, t.v)
	if 4*g.proj.m < 3*vecs*t.v {
		return t, false
	}
	// Two vectors of channels × 12 pixels (AVX-512) where the outputs make pairs: they
	// measured faster than the squarer tiles that the loads per multiply-add alone would
	// favour (docs/kernels/pwdw.md#pwdwoutlanestile-output-channels-in-the-lanes).
	ovt := 1
	if vecs%2 == 0 {
		ovt = 2
	}
	lt := t
	lt.outLanes, lt.mt, lt.np = true, ovt*t.v, projRegs(t.v)/ovt
	for lt.gr = t.rows; lt.gr >= 1; lt.gr-- {
		if pwdwRollBytes(g, lt, lt.gr, lt.np) <= opspec.InvResRollingBuffer {
			break
		}
	}
	// A group narrower than two pixel tiles (single rows of narrow planes at batch 1)
	// would compute more lanes than pixels: pixel lanes waste fewer there.
	if lt.gr < 1 || lt.gr*g.dw.win.out[1] < 2*lt.np {
		return t, false
	}
	return lt, true
}

// pwdwRows is how many output rows a pwdw work-item of vc channels takes: as many as
// opspec.InvResBuffer holds, halved while fewer than two work-items per compute unit remain;
// 0 where not even one row's window fits.
func pwdwRows(g pwdwGeom, vc int, dev DeviceInfo) int {
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
