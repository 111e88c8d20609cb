package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
)

func init() { Register(opspec.InvertedResidualType, invResOp{}) }

// invResOp is the inverted residual layer (opspec.InvertedResidualType): a 1×1 or stem
// expansion and a depthwise convolution, optionally the projection and its residual. Its
// kernels in pwdw_cpu.cl keep the names that programs in dumps and caches carry: pwdw
// (expansion + depthwise), pwdwr (the rolling block kernel: a tile with groupRows),
// pwdwp (the banded block kernel), and pwdw_pw, pwdw_dw, pwdw_proj (the plain launches).
type invResOp struct{}

// invResParts are the fused layer's attributes as its 1×1, its depthwise and (for a block)
// its projection convolution see them.
func invResParts(p Params, block bool) (pw, dw, proj Params) {
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
		opspec.FusedActivationAttr: opspec.ExpansionActivationAttr, opspec.FusedAlphaAttr: opspec.ExpansionAlphaAttr,
		opspec.FusedMinAttr: opspec.ExpansionMinAttr, opspec.FusedMaxAttr: opspec.ExpansionMaxAttr, opspec.OutputBatchStrideAttr: "",
		"pads": opspec.ExpansionWindowPrefix + "pads", "strides": opspec.ExpansionWindowPrefix + "strides",
		"kernel_shape": opspec.ExpansionWindowPrefix + "kernel_shape",
	})}
	if !block {
		return pw, p, nil
	}
	dw = renamedParams{p, map[string]string{
		opspec.FusedActivationAttr: opspec.DepthwiseActivationAttr, opspec.FusedAlphaAttr: opspec.DepthwiseAlphaAttr,
		opspec.FusedMinAttr: opspec.DepthwiseMinAttr, opspec.FusedMaxAttr: opspec.DepthwiseMaxAttr, opspec.OutputBatchStrideAttr: "",
	}}
	return pw, dw, renamedParams{p, window}
}

// invResGeom is the parts' geometry; proj is nil where the layer has no projection.
type invResGeom struct {
	pw, dw convGeom
	proj   *convGeom
}

// out is the layer's output shape.
func (g invResGeom) out() []int {
	if g.proj != nil {
		return g.proj.win.outShape(g.proj.n, g.proj.m, 2)
	}
	return g.dw.win.outShape(g.dw.n, g.dw.m, 2)
}

func (invResOp) geometry(p Params, in [][]int) (invResGeom, error) {
	const typ = opspec.InvertedResidualType
	var g invResGeom
	if len(in) < 4 || len(in) > 8 || len(in) > 5 && in[5] == nil {
		return g, fmt.Errorf("%s: %d inputs, want 4 to 8 (X, 1×1 W, [B], depthwise W, [B], [projection W, [B], [residual]])", typ, len(in))
	}
	block := len(in) > 5
	pwp, dwp, projp := invResParts(p, block)
	var err error
	if g.pw, err = (convOp{}).geometry(pwp, in[:3]); err != nil {
		return g, fmt.Errorf("%s: expansion (1×1 or stem) half: %w", typ, err)
	}
	if g.pw.nsp != 2 || g.pw.g != 1 || g.pw.win.d != [2]int{1, 1} || !g.pw.pointwise() && !p.Has(opspec.ExpansionWindowPrefix+"kernel_shape") {
		return g, fmt.Errorf("%s: input 1 (1×1 W) has shape %v: want [M, %d, 1, 1] over a 2-D X (or a window in %skernel_shape)", typ, in[1], g.pw.c, opspec.ExpansionWindowPrefix)
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

func (o invResOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.out()}, nil
}

func (o invResOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors(opspec.InvertedResidualType, in, 2, 4, 6, 7)
	if err != nil {
		return nil, err
	}
	g, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(opspec.InvertedResidualType, out, [][]int{g.out()}); err != nil {
		return nil, err
	}
	pwp, dwp, projp := invResParts(p, g.proj != nil)
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

// invResTiledPlan plans pwdw (for a block pwdwp, or pwdwr where t.groupRows is above 0) with tile
// t on the defines d of the parts: a setup launch packs the weights into scratch buffer
// 0 (pwdwr's projection weights into buffer 1; a half pwdwp's, widened to float, too),
// then one launch does the work.
func invResTiledPlan(d *defines, g invResGeom, t invResTile, pwArgs, dwArgs, projArgs []Arg, half bool, dev DeviceInfo) (*Plan, error) {
	pw, dw := g.pw, g.dw
	vc := t.vec * t.chanVecs
	mb := ceilDiv(pw.m, vc)
	nb := ceilDiv(dw.win.out[0], t.bandRows)
	d.int("V", t.vec)
	d.int("CV", t.chanVecs)
	d.int("PXT", t.stepPixels)
	d.int("ROWS", t.bandRows)
	d.int("NB", nb)
	d.int("MB", mb)
	switch {
	case g.proj != nil && t.groupRows == 0:
		d.int("MT", 8) // pwdwp's output channels per projection step
		if half {
			// The projection reads each weight for one multiply-add per lane vector: a
			// half one would convert there; a setup launch widens them once instead.
			d.int("WJ_FLOAT", 1)
		}
	case g.proj != nil:
		if t.outLanes && t.projChannels%t.vec != 0 {
			return nil, fmt.Errorf("%s: projection tile of %d output channels is not whole vectors of %d", opspec.InvertedResidualType, t.projChannels, t.vec)
		}
		d.int("GR", t.groupRows)
		d.int("MT", t.projChannels)
		d.int("MOT", ceilDiv(g.proj.m, t.projChannels))
		d.bool("OUT_LANES", t.outLanes)
		d.bool("DYN", t.claimGroups)
		if t.thieves {
			d.int("DYN_THIEVES", 1)
		}
		if t.outLanes {
			d.int("OVT", t.projChannels/t.vec)
			d.int("NPX", t.projPixels)
		} else {
			d.int("NP", t.projPixels)
		}
	}
	src, err := d.program("pwdw_cpu.cl")
	if err != nil {
		return nil, err
	}
	packed := Arg{Kind: ArgScratch, Index: 0}
	packRows := pw.c*pw.win.k[0]*pw.win.k[1] + dw.win.k[0]*dw.win.k[1] + 2
	pg, pl := launchSize([]int{vc, packRows, mb}, dev)
	plan := &Plan{
		Source:            src,
		Scratch:           []int{4 * mb * packRows * vc},
		Setup:             []Launch{{Kernel: "pwdw_pack", Global: pg, Local: pl, Args: append(append(slices.Clone(pwArgs), dwArgs...), packed)}},
		AliasInput:        -1,
		OutputBatchStride: dw.yn,
	}
	output := Arg{Kind: ArgOutput, Index: 0}
	if g.proj == nil {
		plan.Launches = []Launch{cpuLaunchSingle("pwdw", []int{nb, mb, pw.n}, []Arg{{Kind: ArgInput, Index: 0}, packed, output})}
		return plan, nil
	}
	plan.OutputBatchStride = g.proj.yn
	if t.groupRows == 0 {
		pa := slices.Clone(projArgs)
		if half {
			n := g.proj.m * pw.m
			wide := Arg{Kind: ArgScratch, Index: len(plan.Scratch)}
			plan.Scratch = append(plan.Scratch, 4*n)
			plan.Source += convertSource
			cg, cl := launchSize([]int{n}, dev)
			plan.Setup = append(plan.Setup, Launch{Kernel: "clhost_half_to_float", Global: cg, Local: cl,
				Args: []Arg{projArgs[0], wide, {Kind: ArgInt, Int: int32(n)}}})
			pa[0] = wide
		}
		args := append(append([]Arg{{Kind: ArgInput, Index: 0}, packed}, pa...), output)
		plan.Launches = []Launch{cpuLaunchSingle("pwdwp", []int{nb, pw.n}, args)}
		return plan, nil
	}
	// pwdwr: the projection's weights are packed into scratch buffer 1 (projArgs[0] is
	// its W; the bias and residual follow).
	mot := ceilDiv(g.proj.m, t.projChannels)
	wq := Arg{Kind: ArgScratch, Index: 1}
	plan.Scratch = append(plan.Scratch, 4*mot*t.projChannels*pw.m)
	qg, ql := launchSize([]int{t.projChannels, pw.m, mot}, dev)
	plan.Setup = append(plan.Setup, Launch{Kernel: "pwdwr_pack", Global: qg, Local: ql, Args: []Arg{projArgs[0], wq}})
	args := append(append([]Arg{{Kind: ArgInput, Index: 0}, packed, wq}, projArgs[1:]...), output)
	if t.claimGroups {
		// A claim counter per band and a count of the work-items done.
		plan.Counters = []int{len(plan.Scratch)}
		args = append(args, Arg{Kind: ArgScratch, Index: len(plan.Scratch)})
		plan.Scratch = append(plan.Scratch, 4*(nb*pw.n+1))
	}
	plan.Launches = []Launch{cpuLaunchSingle("pwdwr", []int{nb, pw.n}, args)}
	return plan, nil
}

func (o invResOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	return o.plan(p, in, out, dev, nil)
}

// plan is Plan with the tile of the tiled kernel given (where tile is not nil) rather
// than chosen.
func (o invResOp) plan(p Params, in, out [][]int, dev DeviceInfo, tile *invResTile) (*Plan, error) {
	return o.planStored(p, in, out, dev, tile, false)
}

// planStored is plan with the tensors' storage: half makes the tiled kernels' tensors
// DATA_T (PlanHalf), whose plain launches then keep float storage.
func (o invResOp) planStored(p Params, in, out [][]int, dev DeviceInfo, tile *invResTile, half bool) (*Plan, error) {
	p = paramsOr(p)
	g, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(opspec.InvertedResidualType, out, [][]int{g.out()}); err != nil {
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
	typ := storageType(half)
	d.raw("PW_BIAS_ARG", optionalParamOf(pw.hasBias, "pwb", typ))
	d.raw("DW_BIAS_ARG", optionalParamOf(dw.hasBias, "dwb", typ))
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
		d.raw("PROJ_BIAS_ARG", optionalParamOf(pj.hasBias, "bias", typ))
		d.raw("RES_ARG", optionalParamOf(pj.hasResidual, "res", typ))
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
		if t, ok := chooseInvResTile(g, dev); ok {
			tile = &t
		}
	}
	if tile != nil {
		return invResTiledPlan(&d, g, *tile, pwArgs, dwArgs, projArgs, half, dev)
	}
	if half {
		return nil, nil // the plain launches store float
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
