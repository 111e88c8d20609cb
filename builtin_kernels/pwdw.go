package builtinkernels

import (
	"fmt"
	"slices"
)

// PointwiseDepthwiseType is the layer type of a 1×1 convolution fused with the depthwise
// convolution that alone reads its output: MobileNet's expansion and the depthwise layer
// after it (host/graph's fusion pass makes it on CPU devices), and optionally the 1×1
// projection that alone reads the depthwise output, with its residual: a whole inverted
// residual block. Inputs: X, the 1×1 W and [B], the depthwise W and [B], then for the
// block [projection W, [B], [residual]]. The depthwise window's attributes are a Conv's
// (pads, strides, dilations, kernel_shape, auto_pad, group = the expanded channel
// count); the 1×1 convolution's activation is in the Pointwise* attributes below; the
// depthwise activation is in the usual fused attributes, or for a block in the Depthwise*
// attributes below, the projection's then in the usual ones. Output batch stride as Conv.
const PointwiseDepthwiseType = "clhost.PointwiseDepthwise"

// Attributes of the 1×1 half's fused activation (as FusedActivationAttr and its
// parameters for a Conv).
const (
	PointwiseActivationAttr = "clhost_pw_activation"
	PointwiseAlphaAttr      = "clhost_pw_alpha"
	PointwiseMinAttr        = "clhost_pw_min"
	PointwiseMaxAttr        = "clhost_pw_max"
)

// Attributes of a block's depthwise activation (as FusedActivationAttr and its
// parameters for a Conv), where the usual ones hold the projection's.
const (
	DepthwiseActivationAttr = "clhost_dw_activation"
	DepthwiseAlphaAttr      = "clhost_dw_alpha"
	DepthwiseMinAttr        = "clhost_dw_min"
	DepthwiseMaxAttr        = "clhost_dw_max"
)

// PointwiseWindowPrefix carries the expansion's window where it is not 1×1: a network's
// stem Conv (group 1, undilated) whose output only the first depthwise layer reads, as
// MobileNetV2's 3×3 stride-2 Conv of the image. Its pads, strides and kernel_shape are
// the attributes of those names under this prefix; without them the expansion is 1×1.
const PointwiseWindowPrefix = "clhost_pw_window_"

func init() { Register(PointwiseDepthwiseType, pwdwOp{}) }

type pwdwOp struct{}

// pwdwParts are the fused layer's attributes as its 1×1, its depthwise and (for a block)
// its projection convolution see them.
func pwdwParts(p Params, block bool) (pw, dw, proj Params) {
	window := map[string]string{"pads": "", "strides": "", "dilations": "", "kernel_shape": "", "auto_pad": "", "group": ""}
	rename := func(base map[string]string, more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	pw = renamedParams{p, rename(window, map[string]string{
		FusedActivationAttr: PointwiseActivationAttr, FusedAlphaAttr: PointwiseAlphaAttr,
		FusedMinAttr: PointwiseMinAttr, FusedMaxAttr: PointwiseMaxAttr, OutputBatchStrideAttr: "",
		"pads": PointwiseWindowPrefix + "pads", "strides": PointwiseWindowPrefix + "strides",
		"kernel_shape": PointwiseWindowPrefix + "kernel_shape",
	})}
	if !block {
		return pw, p, nil
	}
	dw = renamedParams{p, map[string]string{
		FusedActivationAttr: DepthwiseActivationAttr, FusedAlphaAttr: DepthwiseAlphaAttr,
		FusedMinAttr: DepthwiseMinAttr, FusedMaxAttr: DepthwiseMaxAttr, OutputBatchStrideAttr: "",
	}}
	return pw, dw, renamedParams{p, window}
}

// pwdwGeom is the parts' geometry; proj is nil where the layer has no projection.
type pwdwGeom struct {
	pw, dw convGeom
	proj   *convGeom
}

// out is the layer's output shape.
func (g pwdwGeom) out() []int {
	if g.proj != nil {
		return g.proj.win.outShape(g.proj.n, g.proj.m, 2)
	}
	return g.dw.win.outShape(g.dw.n, g.dw.m, 2)
}

func (pwdwOp) geometry(p Params, in [][]int) (pwdwGeom, error) {
	const typ = PointwiseDepthwiseType
	var g pwdwGeom
	if len(in) < 4 || len(in) > 8 || len(in) > 5 && in[5] == nil {
		return g, fmt.Errorf("%s: %d inputs, want 4 to 8 (X, 1×1 W, [B], depthwise W, [B], [projection W, [B], [residual]])", typ, len(in))
	}
	block := len(in) > 5
	pwp, dwp, projp := pwdwParts(p, block)
	var err error
	if g.pw, err = (convOp{}).geometry(pwp, in[:3]); err != nil {
		return g, fmt.Errorf("%s: expansion (1×1 or stem) half: %w", typ, err)
	}
	if g.pw.nsp != 2 || g.pw.g != 1 || g.pw.win.d != [2]int{1, 1} || !g.pw.pointwise() && !p.Has(PointwiseWindowPrefix+"kernel_shape") {
		return g, fmt.Errorf("%s: input 1 (1×1 W) has shape %v: want [M, %d, 1, 1] over a 2-D X (or a window in %skernel_shape)", typ, in[1], g.pw.c, PointwiseWindowPrefix)
	}
	mid := g.pw.win.outShape(g.pw.n, g.pw.m, 2)
	dwIn := append([][]int{mid}, in[3:min(len(in), 5)]...)
	if g.dw, err = (convOp{}).geometry(dwp, dwIn); err != nil {
		return g, fmt.Errorf("%s: depthwise half: %w", typ, err)
	}
	if g.dw.g != g.dw.c || g.dw.m != g.dw.c {
		return g, fmt.Errorf("%s: the depthwise half must have group = input channels = output channels = %d (W %v, group %d)", typ, g.pw.m, in[3], g.dw.g)
	}
	if !block {
		return g, nil
	}
	projIn := append([][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)}, in[5:]...)
	proj, err := (convOp{}).geometry(projp, projIn)
	if err != nil {
		return g, fmt.Errorf("%s: projection: %w", typ, err)
	}
	if !proj.pointwise() || proj.g != 1 {
		return g, fmt.Errorf("%s: input 5 (projection W) has shape %v: want [MO, %d, 1, 1]", typ, in[5], g.dw.m)
	}
	g.proj = &proj
	return g, nil
}

func (o pwdwOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.out()}, nil
}

func (o pwdwOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors(PointwiseDepthwiseType, in, 2, 4, 6, 7)
	if err != nil {
		return nil, err
	}
	g, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(PointwiseDepthwiseType, out, [][]int{g.out()}); err != nil {
		return nil, err
	}
	pwp, dwp, projp := pwdwParts(p, g.proj != nil)
	mid, err := convOp{}.Reference(pwp, in[:3], [][]int{g.pw.win.outShape(g.pw.n, g.pw.m, 2)})
	if err != nil {
		return nil, err
	}
	if g.proj == nil {
		return convOp{}.Reference(dwp, append([]*HostTensor{mid[0]}, in[3:]...), out)
	}
	dwOut, err := convOp{}.Reference(dwp, append([]*HostTensor{mid[0]}, in[3:5]...), [][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)})
	if err != nil {
		return nil, err
	}
	return convOp{}.Reference(projp, append([]*HostTensor{dwOut[0]}, in[5:]...), out)
}

// maxPwdwBuffer bounds pwdw's private buffer of expanded rows (bytes): the rows of a band
// must fit, or the two-launch path runs. Taller bands recompute fewer rows; the size was
// chosen by measurement (docs/kernels/pwdw.md#maxpwdwbuffer).
const maxPwdwBuffer = 96 << 10

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
// channels) exceed maxPwdwBuffer.
func pwdwBlockRows(g pwdwGeom, v, cv int, dev DeviceInfo) int {
	w := g.dw.win
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1])
	vc := v * cv
	bytes := func(rows int) int {
		qp := ceilDiv(rows*w.out[1], v) * v
		return 4 * (((rows-1)*w.s[0]+w.k[0])*bw*vc + ceilDiv(g.dw.m, vc)*vc*qp)
	}
	if bytes(1) > maxPwdwBuffer {
		return 0
	}
	rows := 1
	for rows < w.out[0] && bytes(rows+1) <= maxPwdwBuffer &&
		ceilDiv(w.out[0], rows+1)*g.dw.n >= 4*max(dev.ComputeUnits, 1) {
		rows++
	}
	return rows
}

// maxRollBuffer bounds pwdwr's private buffers (bytes): the expanded rows a group of
// output rows reaches and the group's depthwise results, every channel of each. They stay in
// the L2 cache of a core (1–2 MB on the Xeons this runs on) next to the weights.
const maxRollBuffer = 384 << 10

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
// waste the fewest lanes and loads with buffers within maxRollBuffer. ok is false where
// not even one row's buffers fit.
func pwdwPixelLanesTile(g pwdwGeom, t pwdwTile) (pwdwTile, bool) {
	t.outLanes = false
	ow := g.dw.win.out[1]
	regs := projRegs(t.v)
	best := -1.0
	for gr := 1; gr <= t.rows; gr++ {
		for np := 1; np <= 4; np++ {
			if pwdwRollBytes(g, t, gr, np) > maxRollBuffer {
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
		if pwdwRollBytes(g, lt, lt.gr, lt.np) <= maxRollBuffer {
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
// maxPwdwBuffer holds, halved while fewer than two work-items per compute unit remain;
// 0 where not even one row's window fits.
func pwdwRows(g pwdwGeom, vc int, dev DeviceInfo) int {
	w := g.dw.win
	bw := max((w.out[1]-1)*w.s[1]+w.k[1], w.pb[1]+g.dw.in[1]) // the kernel's BW
	irows := maxPwdwBuffer / (4 * vc * bw)
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

// pwdwTiledPlan plans pwdw (for a block pwdwp, or pwdwr where t.gr is above 0) with tile
// t on the defines d of the parts: a setup launch packs the weights into scratch buffer
// 0 (pwdwr's projection weights into buffer 1), then one launch does the work.
func pwdwTiledPlan(d *defines, g pwdwGeom, t pwdwTile, pwArgs, dwArgs, projArgs []Arg, dev DeviceInfo) (*Plan, error) {
	pw, dw := g.pw, g.dw
	vc := t.v * t.cv
	mb := ceilDiv(pw.m, vc)
	nb := ceilDiv(dw.win.out[0], t.rows)
	d.int("V", t.v)
	d.int("CV", t.cv)
	d.int("PXT", t.px)
	d.int("ROWS", t.rows)
	d.int("NB", nb)
	d.int("MB", mb)
	switch {
	case g.proj != nil && t.gr == 0:
		d.int("MT", 8) // pwdwp's output channels per projection step
	case g.proj != nil:
		if t.outLanes && t.mt%t.v != 0 {
			return nil, fmt.Errorf("%s: projection tile of %d output channels is not whole vectors of %d", PointwiseDepthwiseType, t.mt, t.v)
		}
		d.int("GR", t.gr)
		d.int("MT", t.mt)
		d.int("MOT", ceilDiv(g.proj.m, t.mt))
		d.bool("OUT_LANES", t.outLanes)
		d.bool("DYN", t.dyn)
		if t.thieves {
			d.int("DYN_THIEVES", 1)
		}
		if t.outLanes {
			d.int("OVT", t.mt/t.v)
			d.int("NPX", t.np)
		} else {
			d.int("NP", t.np)
		}
	}
	src, err := d.program("pwdw_cpu.cl")
	if err != nil {
		return nil, err
	}
	packed := Arg{Kind: ArgScratch, Index: 0}
	packRows := pw.c*pw.win.k[0]*pw.win.k[1] + dw.win.k[0]*dw.win.k[1] + 2
	pg, pl := launchSize([]int{vc, packRows, mb}, dev)
	// Each band also recomputes the expanded rows above and below it.
	bandIn := (t.rows-1)*dw.win.s[0] + dw.win.k[0]
	macs := pw.macs()*nb*bandIn/max(dw.in[0], 1) + dw.macs()
	plan := &Plan{
		Source:            src,
		Scratch:           []int{4 * mb * packRows * vc},
		Setup:             []Launch{{Kernel: "pwdw_pack", Global: pg, Local: pl, Args: append(append(slices.Clone(pwArgs), dwArgs...), packed)}},
		AliasInput:        -1,
		OutputBatchStride: dw.yn,
	}
	output := Arg{Kind: ArgOutput, Index: 0}
	if g.proj == nil {
		plan.Launches = []Launch{cpuLaunch("pwdw", []int{nb, mb, pw.n}, macs, []Arg{{Kind: ArgInput, Index: 0}, packed, output}, dev)}
		return plan, nil
	}
	plan.OutputBatchStride = g.proj.yn
	if t.gr == 0 {
		args := append(append([]Arg{{Kind: ArgInput, Index: 0}, packed}, projArgs...), output)
		plan.Launches = []Launch{cpuLaunch("pwdwp", []int{nb, pw.n}, macs+g.proj.macs(), args, dev)}
		return plan, nil
	}
	// pwdwr: the projection's weights are packed into scratch buffer 1 (projArgs[0] is
	// its W; the bias and residual follow).
	mot := ceilDiv(g.proj.m, t.mt)
	wq := Arg{Kind: ArgScratch, Index: 1}
	plan.Scratch = append(plan.Scratch, 4*mot*t.mt*pw.m)
	qg, ql := launchSize([]int{t.mt, pw.m, mot}, dev)
	plan.Setup = append(plan.Setup, Launch{Kernel: "pwdwr_pack", Global: qg, Local: ql, Args: []Arg{projArgs[0], wq}})
	args := append(append([]Arg{{Kind: ArgInput, Index: 0}, packed, wq}, projArgs[1:]...), output)
	if t.dyn {
		// A claim counter per band and a count of the work-items done.
		plan.Counters = []int{len(plan.Scratch)}
		args = append(args, Arg{Kind: ArgScratch, Index: len(plan.Scratch)})
		plan.Scratch = append(plan.Scratch, 4*(nb*pw.n+1))
	}
	plan.Launches = []Launch{cpuLaunch("pwdwr", []int{nb, pw.n}, macs+g.proj.macs(), args, dev)}
	return plan, nil
}

func (o pwdwOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	return o.plan(p, in, out, dev, nil)
}

// plan is Plan with the tile of the tiled kernel given (where tile is not nil) rather
// than chosen.
func (o pwdwOp) plan(p Params, in, out [][]int, dev DeviceInfo, tile *pwdwTile) (*Plan, error) {
	p = paramsOr(p)
	g, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(PointwiseDepthwiseType, out, [][]int{g.out()}); err != nil {
		return nil, err
	}
	pw, dw := g.pw, g.dw
	var d defines
	d.int("N", pw.n)
	d.int("C", pw.c)
	d.int("H", pw.in[0])
	d.int("W", pw.in[1])
	d.int("M", pw.m)
	if !pw.pointwise() {
		d.int("EKH", pw.win.k[0])
		d.int("EKW", pw.win.k[1])
		d.int("ESH", pw.win.s[0])
		d.int("ESW", pw.win.s[1])
		d.int("EPT", pw.win.pb[0])
		d.int("EPL", pw.win.pb[1])
		d.int("IH", dw.in[0])
		d.int("IW", dw.in[1])
	}
	dw.win.define(&d)
	d.bool("HAS_PW_BIAS", pw.hasBias)
	d.bool("HAS_DW_BIAS", dw.hasBias)
	d.raw("PW_ACT(v)", pw.act.expr("v"))
	d.raw("DW_ACT(v)", dw.act.expr("v"))
	d.raw("PW_BIAS_ARG", optionalParam(pw.hasBias, "pwb"))
	d.raw("DW_BIAS_ARG", optionalParam(dw.hasBias, "dwb"))
	d.raw("PW_OPTIONAL_OFFSETS", optionalOffset(pw.hasBias, "pwb"))
	d.raw("DW_OPTIONAL_OFFSETS", optionalOffset(dw.hasBias, "dwb"))
	yn := dw.yn
	var projArgs []Arg
	if g.proj != nil {
		pj := *g.proj
		yn = pj.yn
		d.int("MO", pj.m)
		if pj.yn != 0 {
			d.int("YN", pj.yn)
		} else {
			d.int("YN", pj.m*dw.win.out[0]*dw.win.out[1])
		}
		d.bool("HAS_BIAS", pj.hasBias)
		d.bool("HAS_RESIDUAL", pj.hasResidual)
		d.raw("PROJ_BIAS_ARG", optionalParam(pj.hasBias, "bias"))
		d.raw("RES_ARG", optionalParam(pj.hasResidual, "res"))
		d.raw("OPTIONAL_OFFSETS", optionalOffset(pj.hasBias, "bias")+optionalOffset(pj.hasResidual, "res"))
		pj.act.define(&d)
		projArgs = []Arg{{Kind: ArgInput, Index: 5}}
		if pj.hasBias {
			projArgs = append(projArgs, Arg{Kind: ArgInput, Index: 6})
		}
		if pj.hasResidual {
			projArgs = append(projArgs, Arg{Kind: ArgInput, Index: 7})
		}
	} else if dw.yn != 0 {
		d.int("DWN", dw.yn)
	}
	pwArgs := []Arg{{Kind: ArgInput, Index: 1}}
	if pw.hasBias {
		pwArgs = append(pwArgs, Arg{Kind: ArgInput, Index: 2})
	}
	dwArgs := []Arg{{Kind: ArgInput, Index: 3}}
	if dw.hasBias {
		dwArgs = append(dwArgs, Arg{Kind: ArgInput, Index: 4})
	}
	if tile == nil {
		if t, ok := choosePwdwTile(g, dev); ok {
			tile = &t
		}
	}
	if tile != nil {
		return pwdwTiledPlan(&d, g, *tile, pwArgs, dwArgs, projArgs, dev)
	}

	// Plain launches through scratch buffers: the 1×1 convolution into buffer 0, the
	// depthwise one into buffer 1 (for a block) or the output, the projection.
	plan := &Plan{AliasInput: -1, OutputBatchStride: yn}
	if plan.Source, err = d.program("pwdw_cpu.cl"); err != nil {
		return nil, err
	}
	oh, ow := dw.win.out[0], dw.win.out[1]
	plan.Scratch = []int{4 * pw.n * pw.m * dw.in[0] * dw.in[1]}
	expanded, dwOut := Arg{Kind: ArgScratch, Index: 0}, Arg{Kind: ArgOutput, Index: 0}
	if g.proj != nil {
		plan.Scratch = append(plan.Scratch, 4*dw.n*dw.m*oh*ow)
		dwOut = Arg{Kind: ArgScratch, Index: 1}
	}
	g1, l1 := launchSize([]int{dw.in[0] * dw.in[1], pw.m, pw.n}, dev)
	g2, l2 := launchSize([]int{ow, oh, dw.n * dw.c}, dev)
	plan.Launches = []Launch{
		{Kernel: "pwdw_pw", Global: g1, Local: l1, Args: append(append([]Arg{{Kind: ArgInput, Index: 0}}, pwArgs...), expanded)},
		{Kernel: "pwdw_dw", Global: g2, Local: l2, Args: append(append([]Arg{expanded}, dwArgs...), dwOut)},
	}
	if g.proj != nil {
		g3, l3 := launchSize([]int{oh * ow, g.proj.m, dw.n}, dev)
		plan.Launches = append(plan.Launches, Launch{Kernel: "pwdw_proj", Global: g3, Local: l3,
			Args: append(append([]Arg{dwOut}, projArgs...), Arg{Kind: ArgOutput, Index: 0})})
	}
	return plan, nil
}
