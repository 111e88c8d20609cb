package builtinkernels

import (
	"fmt"
	"slices"
)

// PointwiseDepthwiseType is the layer type of a 1×1 convolution fused with the depthwise
// convolution that alone reads its output: MobileNet's expansion and the depthwise layer
// after it (host/graph's fusion pass makes it on CPU devices). Inputs: X, the 1×1 W and
// [B], the depthwise W and [B]. The depthwise window's attributes are a Conv's (pads,
// strides, dilations, kernel_shape, auto_pad, group = the expanded channel count) and its
// fused activation is in the usual fused attributes; the 1×1 convolution's activation is
// in the Pointwise* attributes below. Output batch stride as Conv.
const PointwiseDepthwiseType = "clhost.PointwiseDepthwise"

// Attributes of the 1×1 half's fused activation (as FusedActivationAttr and its
// parameters for a Conv).
const (
	PointwiseActivationAttr = "clhost_pw_activation"
	PointwiseAlphaAttr      = "clhost_pw_alpha"
	PointwiseMinAttr        = "clhost_pw_min"
	PointwiseMaxAttr        = "clhost_pw_max"
)

func init() { Register(PointwiseDepthwiseType, pwdwOp{}) }

type pwdwOp struct{}

// pwdwHalves are the fused layer's attributes as its 1×1 and its depthwise convolution
// see them.
func pwdwHalves(p Params) (pw, dw Params) {
	pw = renamedParams{p, map[string]string{
		FusedActivationAttr: PointwiseActivationAttr, FusedAlphaAttr: PointwiseAlphaAttr,
		FusedMinAttr: PointwiseMinAttr, FusedMaxAttr: PointwiseMaxAttr, OutputBatchStrideAttr: "",
		"pads": "", "strides": "", "dilations": "", "kernel_shape": "", "auto_pad": "", "group": "",
	}}
	return pw, p
}

// pwdwGeom is the two halves' geometry.
type pwdwGeom struct{ pw, dw convGeom }

func (pwdwOp) geometry(p Params, in [][]int) (pwdwGeom, error) {
	const typ = PointwiseDepthwiseType
	var g pwdwGeom
	if len(in) < 4 || len(in) > 5 {
		return g, fmt.Errorf("%s: %d inputs, want 4 or 5 (X, 1×1 W, [B], depthwise W, [B])", typ, len(in))
	}
	pwp, dwp := pwdwHalves(p)
	var err error
	if g.pw, err = (convOp{}).geometry(pwp, in[:3]); err != nil {
		return g, fmt.Errorf("%s: 1×1 half: %w", typ, err)
	}
	if g.pw.nsp != 2 || !g.pw.pointwise() || g.pw.g != 1 {
		return g, fmt.Errorf("%s: input 1 (1×1 W) has shape %v: want [M, %d, 1, 1] over a 2-D X", typ, in[1], g.pw.c)
	}
	mid := g.pw.win.outShape(g.pw.n, g.pw.m, 2)
	dwIn := append([][]int{mid}, in[3:]...)
	if g.dw, err = (convOp{}).geometry(dwp, dwIn); err != nil {
		return g, fmt.Errorf("%s: depthwise half: %w", typ, err)
	}
	if g.dw.g != g.dw.c || g.dw.m != g.dw.c {
		return g, fmt.Errorf("%s: the depthwise half must have group = input channels = output channels = %d (W %v, group %d)", typ, g.pw.m, in[3], g.dw.g)
	}
	if g.dw.hasResidual {
		return g, fmt.Errorf("%s: takes no residual input", typ)
	}
	return g, nil
}

func (o pwdwOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)}, nil
}

func (o pwdwOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors(PointwiseDepthwiseType, in, 2, 4)
	if err != nil {
		return nil, err
	}
	g, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(PointwiseDepthwiseType, out, [][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)}); err != nil {
		return nil, err
	}
	pwp, dwp := pwdwHalves(p)
	mid, err := convOp{}.Reference(pwp, in[:3], [][]int{g.pw.win.outShape(g.pw.n, g.pw.m, 2)})
	if err != nil {
		return nil, err
	}
	return convOp{}.Reference(dwp, append([]*HostTensor{mid[0]}, in[3:]...), out)
}

// maxPwdwBuffer bounds pwdw's private buffer of expanded rows (bytes): the rows of a band
// must fit, or the two-launch path runs. Taller bands recompute fewer rows: on the
// 16-core Xeon at batch 16, MobileNetV2's 16 → 96 expansion on 112×112 (stride 2 after)
// took 1.31–1.50 ms with 96 KB (two output rows of 32 channels per band) against
// 1.78–2.04 with 48 KB (one), and 1.46–3.21 as the two convolutions.
const maxPwdwBuffer = 96 << 10

// pwdwTile is pwdw's work per item: cv vectors of v expanded channels, px pixels per
// step of the 1×1 convolution, rows output rows of the depthwise one.
type pwdwTile struct{ v, cv, px, rows int }

// choosePwdwTile picks the tile for a CPU device: channel vectors of the device's width,
// two of them where the layer has channels for four (per input channel, two weight
// vectors and px broadcast pixels then feed 2*px multiply-adds), 8 pixels per step, 12
// with two vectors where the registers hold them (AVX-512: on the 16-core Xeon at batch
// 16, MobileNetV2's blocks of 32 to 96 input channels ran 3–13 % faster than with 8);
// as many output rows as the buffer holds, halved
// while that leaves fewer than two work-items per compute unit (each band recomputes the
// expanded rows it shares with the next). ok is false where the tiled kernel does not
// apply (GPUs, dilated windows, rows too wide for the buffer).
func choosePwdwTile(g pwdwGeom, dev DeviceInfo) (pwdwTile, bool) {
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
	if g.dw.m >= 4*v {
		cv = 2
	}
	regs := 16 // AVX and SSE
	if v == 16 {
		regs = 32 // AVX-512
	}
	px := 8
	if cv == 2 {
		px = min(12, (regs-cv-2)/cv)
	}
	rows := pwdwRows(g, v*cv, dev)
	if rows == 0 {
		return pwdwTile{}, false
	}
	return pwdwTile{v: v, cv: cv, px: px, rows: rows}, true
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

// pwdwTiledPlan plans pwdw with tile t on the defines d of both halves: a setup launch
// packs the weights into scratch buffer 0, then one launch does the work.
func pwdwTiledPlan(d *defines, g pwdwGeom, t pwdwTile, pwArgs, dwArgs []Arg, dev DeviceInfo) (*Plan, error) {
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
	src, err := d.program("pwdw_cpu.cl")
	if err != nil {
		return nil, err
	}
	packed := Arg{Kind: ArgScratch, Index: 0}
	packRows := pw.c + dw.win.k[0]*dw.win.k[1] + 2
	pg, pl := launchSize([]int{vc, packRows, mb}, dev)
	// Each band also recomputes the expanded rows above and below it.
	bandIn := (t.rows-1)*dw.win.s[0] + dw.win.k[0]
	macs := pw.macs()*nb*bandIn/max(dw.in[0], 1) + dw.macs()
	return &Plan{
		Source:  src,
		Scratch: []int{4 * mb * packRows * vc},
		Setup:   []Launch{{Kernel: "pwdw_pack", Global: pg, Local: pl, Args: append(append(slices.Clone(pwArgs), dwArgs...), packed)}},
		Launches: []Launch{cpuLaunch("pwdw", []int{nb, mb, pw.n}, macs,
			[]Arg{{Kind: ArgInput, Index: 0}, packed, {Kind: ArgOutput, Index: 0}}, dev)},
		AliasInput:        -1,
		OutputBatchStride: dw.yn,
	}, nil
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
	if err := checkOut(PointwiseDepthwiseType, out, [][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)}); err != nil {
		return nil, err
	}
	pw, dw := g.pw, g.dw
	var d defines
	d.int("N", pw.n)
	d.int("C", pw.c)
	d.int("H", pw.in[0])
	d.int("W", pw.in[1])
	d.int("M", pw.m)
	dw.win.define(&d)
	d.bool("HAS_PW_BIAS", pw.hasBias)
	d.bool("HAS_DW_BIAS", dw.hasBias)
	d.raw("PW_ACT(v)", pw.act.expr("v"))
	d.raw("PW_BIAS_ARG", optionalParam(pw.hasBias, "pwb"))
	d.raw("DW_BIAS_ARG", optionalParam(dw.hasBias, "dwb"))
	d.raw("PW_OPTIONAL_OFFSETS", optionalOffset(pw.hasBias, "pwb"))
	d.raw("DW_OPTIONAL_OFFSETS", optionalOffset(dw.hasBias, "dwb"))
	dw.act.define(&d)
	if dw.yn != 0 {
		d.int("YN", dw.yn)
	}
	pwArgs := []Arg{{Kind: ArgInput, Index: 1}}
	if pw.hasBias {
		pwArgs = append(pwArgs, Arg{Kind: ArgInput, Index: 2})
	}
	dwArgs := []Arg{{Kind: ArgInput, Index: 3}}
	if dw.hasBias {
		dwArgs = append(dwArgs, Arg{Kind: ArgInput, Index: 4})
	}
	if tile != nil {
		return pwdwTiledPlan(&d, g, *tile, pwArgs, dwArgs, dev)
	}
	if t, ok := choosePwdwTile(g, dev); ok {
		return pwdwTiledPlan(&d, g, t, pwArgs, dwArgs, dev)
	}

	plan := &Plan{AliasInput: -1, OutputBatchStride: dw.yn}
	output := Arg{Kind: ArgOutput, Index: 0}
	oh := dw.win.out[0]
	// The two plain launches through scratch buffer 0.
	if plan.Source, err = d.program("pwdw_cpu.cl"); err != nil {
		return nil, err
	}
	plan.Scratch = []int{4 * pw.n * pw.m * pw.in[0] * pw.in[1]}
	scratch := Arg{Kind: ArgScratch, Index: 0}
	g1, l1 := launchSize([]int{pw.in[0] * pw.in[1], pw.m, pw.n}, dev)
	g2, l2 := launchSize([]int{dw.win.out[1], oh, dw.n * dw.c}, dev)
	plan.Launches = []Launch{
		{Kernel: "pwdw_pw", Global: g1, Local: l1, Args: append(append([]Arg{{Kind: ArgInput, Index: 0}}, pwArgs...), scratch)},
		{Kernel: "pwdw_dw", Global: g2, Local: l2, Args: append(append([]Arg{scratch}, dwArgs...), output)},
	}
	return plan, nil
}
