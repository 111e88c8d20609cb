package builtinkernels

import "fmt"

// DepthwisePointwiseType is the layer type of a depthwise convolution fused with the 1×1
// convolution that alone reads its output (host/graph's fusion pass makes it on CPU
// devices). Inputs: X, the depthwise W and [B], the 1×1 W and [B], [residual]. The
// depthwise window's attributes are a Conv's (pads, strides, dilations, kernel_shape,
// auto_pad, group = the channel count); its fused activation is in the Depthwise*
// attributes below, the 1×1 convolution's in the usual fused ones. Output batch stride
// as Conv.
const DepthwisePointwiseType = "clhost.DepthwisePointwise"

// Attributes of the depthwise half's fused activation (as FusedActivationAttr and its
// parameters for a Conv).
const (
	DepthwiseActivationAttr = "clhost_dw_activation"
	DepthwiseAlphaAttr      = "clhost_dw_alpha"
	DepthwiseMinAttr        = "clhost_dw_min"
	DepthwiseMaxAttr        = "clhost_dw_max"
)

func init() { Register(DepthwisePointwiseType, dwpwOp{}) }

type dwpwOp struct{}

// renamedParams shows an op's attributes under other names: name → the attribute read
// instead, "" for one that reads as absent.
type renamedParams struct {
	p      Params
	rename map[string]string
}

func (r renamedParams) key(name string) string {
	if k, ok := r.rename[name]; ok {
		return k
	}
	return name
}
func (r renamedParams) Int(n string, d int64) int64            { return r.p.Int(r.key(n), d) }
func (r renamedParams) Float(n string, d float32) float32      { return r.p.Float(r.key(n), d) }
func (r renamedParams) Ints(n string, d []int64) []int64       { return r.p.Ints(r.key(n), d) }
func (r renamedParams) Floats(n string, d []float32) []float32 { return r.p.Floats(r.key(n), d) }
func (r renamedParams) String(n string, d string) string       { return r.p.String(r.key(n), d) }
func (r renamedParams) Has(n string) bool                      { k := r.key(n); return k != "" && r.p.Has(k) }

// halves are the fused layer's attributes as its depthwise and its 1×1 convolution see
// them.
func dwpwHalves(p Params) (dw, pw Params) {
	dw = renamedParams{p, map[string]string{
		FusedActivationAttr: DepthwiseActivationAttr, FusedAlphaAttr: DepthwiseAlphaAttr,
		FusedMinAttr: DepthwiseMinAttr, FusedMaxAttr: DepthwiseMaxAttr, OutputBatchStrideAttr: "",
	}}
	pw = renamedParams{p, map[string]string{
		"pads": "", "strides": "", "dilations": "", "kernel_shape": "", "auto_pad": "", "group": "",
	}}
	return dw, pw
}

// dwpwGeom is the two halves' geometry.
type dwpwGeom struct{ dw, pw convGeom }

func (dwpwOp) geometry(p Params, in [][]int) (dwpwGeom, error) {
	const typ = DepthwisePointwiseType
	var g dwpwGeom
	if len(in) < 4 || len(in) > 6 {
		return g, fmt.Errorf("%s: %d inputs, want 4 to 6 (X, depthwise W, [B], 1×1 W, [B], [residual])", typ, len(in))
	}
	dwp, pwp := dwpwHalves(p)
	var err error
	if g.dw, err = (convOp{}).geometry(dwp, in[:3]); err != nil {
		return g, fmt.Errorf("%s: depthwise half: %w", typ, err)
	}
	if g.dw.nsp != 2 || g.dw.g != g.dw.c || g.dw.m != g.dw.c {
		return g, fmt.Errorf("%s: the depthwise half must be a 2-D convolution with group = input channels = output channels (X %v, W %v, group %d)", typ, in[0], in[1], g.dw.g)
	}
	mid := g.dw.win.outShape(g.dw.n, g.dw.m, 2)
	pwIn := append([][]int{mid}, in[3:]...)
	if g.pw, err = (convOp{}).geometry(pwp, pwIn); err != nil {
		return g, fmt.Errorf("%s: 1×1 half: %w", typ, err)
	}
	if !g.pw.pointwise() || g.pw.g != 1 {
		return g, fmt.Errorf("%s: input 3 (1×1 W) has shape %v: want [M, %d, 1, 1]", typ, in[3], g.dw.m)
	}
	return g, nil
}

func (o dwpwOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.pw.win.outShape(g.pw.n, g.pw.m, 2)}, nil
}

func (o dwpwOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors(DepthwisePointwiseType, in, 2, 4, 5)
	if err != nil {
		return nil, err
	}
	g, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(DepthwisePointwiseType, out, [][]int{g.pw.win.outShape(g.pw.n, g.pw.m, 2)}); err != nil {
		return nil, err
	}
	dwp, pwp := dwpwHalves(p)
	mid, err := convOp{}.Reference(dwp, in[:3], [][]int{g.dw.win.outShape(g.dw.n, g.dw.m, 2)})
	if err != nil {
		return nil, err
	}
	return convOp{}.Reference(pwp, append([]*HostTensor{mid[0]}, in[3:]...), out)
}

// maxDwpwBuffer bounds dwpw's private buffer of depthwise results (bytes), as
// window_cpu.cl's row buffer: beyond it the two-launch path runs.
const maxDwpwBuffer = 64 << 10

func (o dwpwOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	p = paramsOr(p)
	g, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(DepthwisePointwiseType, out, [][]int{g.pw.win.outShape(g.pw.n, g.pw.m, 2)}); err != nil {
		return nil, err
	}
	dw, pw := g.dw, g.pw
	var d defines
	d.int("N", dw.n)
	d.int("C", dw.c)
	d.int("H", dw.in[0])
	d.int("W", dw.in[1])
	d.int("M", pw.m)
	dw.win.define(&d)
	d.bool("HAS_DW_BIAS", dw.hasBias)
	d.raw("DW_ACT(v)", dw.act.expr("v"))
	d.raw("DW_BIAS_ARG", optionalParam(dw.hasBias, "dwb"))
	d.raw("DW_OPTIONAL_OFFSETS", optionalOffset(dw.hasBias, "dwb"))
	d.bool("HAS_BIAS", pw.hasBias)
	d.bool("HAS_RESIDUAL", pw.hasResidual)
	d.raw("BIAS_ARG", optionalParam(pw.hasBias, "bias"))
	d.raw("RES_ARG", optionalParam(pw.hasResidual, "res"))
	d.raw("OPTIONAL_OFFSETS", optionalOffset(pw.hasBias, "bias")+optionalOffset(pw.hasResidual, "res"))
	pw.act.define(&d)
	if pw.yn != 0 {
		d.int("YN", pw.yn)
	}

	dwArgs := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}}
	if dw.hasBias {
		dwArgs = append(dwArgs, Arg{Kind: ArgInput, Index: 2})
	}
	pwArgs := []Arg{{Kind: ArgInput, Index: 3}}
	if pw.hasBias {
		pwArgs = append(pwArgs, Arg{Kind: ArgInput, Index: 4})
	}
	if pw.hasResidual {
		pwArgs = append(pwArgs, Arg{Kind: ArgInput, Index: 5})
	}
	pwArgs = append(pwArgs, Arg{Kind: ArgOutput, Index: 0})
	oh, ow := dw.win.out[0], dw.win.out[1]
	plan := &Plan{AliasInput: -1, OutputBatchStride: pw.yn}

	if t, ok := chooseDwpwTile(g, dev); ok {
		d.int("VEC", t.vec)
		d.int("NP", t.np)
		d.int("MT", t.mt)
		d.int("MT1", ceilDiv(pw.m, t.mt))
		tpr := ceilDiv(ow, t.vec*t.np)
		d.int("TPR", tpr)
		if plan.Source, err = d.program("dwpw_cpu.cl"); err != nil {
			return nil, err
		}
		macs := dw.macs() + pw.macs()
		plan.Launches = []Launch{cpuLaunch("dwpw", []int{tpr, oh, dw.n}, macs, append(dwArgs, pwArgs...), dev)}
		return plan, nil
	}

	// The two plain launches through scratch buffer 0.
	if plan.Source, err = d.program("dwpw_cpu.cl"); err != nil {
		return nil, err
	}
	plan.Scratch = []int{4 * dw.n * dw.c * oh * ow}
	scratch := Arg{Kind: ArgScratch, Index: 0}
	g1, l1 := launchSize([]int{ow, oh, dw.n * dw.c}, dev)
	g2, l2 := launchSize([]int{oh * ow, pw.m, pw.n}, dev)
	plan.Launches = []Launch{
		{Kernel: "dwpw_dw", Global: g1, Local: l1, Args: append(dwArgs, scratch)},
		{Kernel: "dwpw_pw", Global: g2, Local: l2, Args: append([]Arg{scratch}, pwArgs...)},
	}
	return plan, nil
}

// dwpwTile is dwpw's work per item: np vectors of vec pixels of a row, mt output
// channels at a time.
type dwpwTile struct{ vec, np, mt int }

// chooseDwpwTile picks the tile for a CPU device: the widest vector of 16, 8 or 4 lanes a row
// holds, two of them where the row holds both and the buffer stays within
// maxDwpwBuffer; ok is false where the tiled kernel does not apply (GPUs, dilated
// windows, rows under 4 pixels, too many channels for the buffer).
func chooseDwpwTile(g dwpwGeom, dev DeviceInfo) (dwpwTile, bool) {
	ow, c := g.dw.win.out[1], g.dw.c
	if dev.IsGPU || g.dw.win.d != [2]int{1, 1} || ow < 4 {
		return dwpwTile{}, false
	}
	vec := 4
	for _, v := range []int{16, 8} {
		if v <= max(dev.FloatVectorWidth, 4) && ow >= v {
			vec = v
			break
		}
	}
	np := 1
	if ow >= 2*vec && 4*c*2*vec <= maxDwpwBuffer {
		np = 2
	}
	if 4*c*np*vec > maxDwpwBuffer {
		return dwpwTile{}, false
	}
	return dwpwTile{vec, np, 8}, true
}
