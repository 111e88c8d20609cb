package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
)

func init() { Register(opspec.FireType, fireOp{}) }

type fireOp struct{}

// fireParts are the fused layer's attributes as its three convolutions see them.
func fireParts(p Params) (sq, e1, e3 Params) {
	plain := func(act, alpha, lo, hi string) Params {
		return renamedParams{p, map[string]string{
			"pads": "", "strides": "", "dilations": "", "kernel_shape": "", "auto_pad": "", "group": "",
			opspec.FusedActivationAttr: act, opspec.FusedAlphaAttr: alpha, opspec.FusedMinAttr: lo, opspec.FusedMaxAttr: hi, opspec.OutputBatchStrideAttr: "",
		}}
	}
	sq = plain(opspec.SqueezeActivationAttr, opspec.SqueezeAlphaAttr, opspec.SqueezeMinAttr, opspec.SqueezeMaxAttr)
	e1 = plain(opspec.Expand1ActivationAttr, opspec.Expand1AlphaAttr, opspec.Expand1MinAttr, opspec.Expand1MaxAttr)
	e3 = renamedParams{p, map[string]string{opspec.OutputBatchStrideAttr: ""}}
	return sq, e1, e3
}

// fireGeom is the parts' geometry and the output's batch stride (0: contiguous).
type fireGeom struct {
	sq, e1, e3 convGeom
	yn         int
}

// out is the layer's output shape.
func (g fireGeom) out() []int {
	return []int{g.sq.n, g.e1.m + g.e3.m, g.sq.in[0], g.sq.in[1]}
}

func (fireOp) geometry(p Params, in [][]int) (fireGeom, error) {
	const typ = opspec.FireType
	var g fireGeom
	if len(in) < 6 || len(in) > 7 {
		return g, fmt.Errorf("%s: %d inputs, want 6 or 7 (X, squeeze W, [B], 1×1 W, [B], 3×3 W, [B])", typ, len(in))
	}
	sqp, e1p, e3p := fireParts(p)
	var err error
	if g.sq, err = (convOp{}).geometry(sqp, in[:3]); err != nil {
		return g, fmt.Errorf("%s: squeeze: %w", typ, err)
	}
	if g.sq.nsp != 2 || !g.sq.pointwise() || g.sq.g != 1 {
		return g, fmt.Errorf("%s: input 1 (squeeze W) has shape %v: want [S, %d, 1, 1] over a 2-D X", typ, in[1], g.sq.c)
	}
	mid := g.sq.win.outShape(g.sq.n, g.sq.m, 2)
	if g.e1, err = (convOp{}).geometry(e1p, [][]int{mid, in[3], in[4]}); err != nil {
		return g, fmt.Errorf("%s: 1×1 expansion: %w", typ, err)
	}
	if !g.e1.pointwise() || g.e1.g != 1 {
		return g, fmt.Errorf("%s: input 3 (1×1 W) has shape %v: want [E1, %d, 1, 1]", typ, in[3], g.sq.m)
	}
	e3In := [][]int{mid, in[5]}
	if len(in) > 6 {
		e3In = append(e3In, in[6])
	}
	if g.e3, err = (convOp{}).geometry(e3p, e3In); err != nil {
		return g, fmt.Errorf("%s: 3×3 expansion: %w", typ, err)
	}
	w := g.e3.win
	if w.k != [2]int{3, 3} || w.s != [2]int{1, 1} || w.d != [2]int{1, 1} || w.pb != [2]int{1, 1} || w.pe != [2]int{1, 1} || g.e3.g != 1 {
		return g, fmt.Errorf("%s: the 3×3 expansion must be a 3×3 window at stride 1 with one pixel of padding each side and group 1 (W %v, pads %v %v, strides %v)",
			typ, in[5], w.pb, w.pe, w.s)
	}
	if p.Has(opspec.OutputBatchStrideAttr) {
		per := (g.e1.m + g.e3.m) * g.sq.in[0] * g.sq.in[1]
		v := p.Int(opspec.OutputBatchStrideAttr, 0)
		if v < int64(per) || v > 1<<31-1 {
			return g, fmt.Errorf("%s: %s %d: want at least the %d elements of one output image", typ, opspec.OutputBatchStrideAttr, v, per)
		}
		g.yn = int(v)
	}
	return g, nil
}

func (o fireOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{g.out()}, nil
}

// Reference runs the three convolutions' references and joins the expansions.
func (o fireOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors(opspec.FireType, in, 2, 4, 6)
	if err != nil {
		return nil, err
	}
	g, err := o.geometry(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut(opspec.FireType, out, [][]int{g.out()}); err != nil {
		return nil, err
	}
	sqp, e1p, e3p := fireParts(p)
	mid := g.sq.win.outShape(g.sq.n, g.sq.m, 2)
	s, err := convOp{}.Reference(sqp, in[:3], [][]int{mid})
	if err != nil {
		return nil, err
	}
	plane := g.sq.in[0] * g.sq.in[1]
	e1, err := convOp{}.Reference(e1p, []*HostTensor{s[0], in[3], in[4]}, [][]int{{g.sq.n, g.e1.m, g.sq.in[0], g.sq.in[1]}})
	if err != nil {
		return nil, err
	}
	e3In := append([]*HostTensor{s[0]}, in[5:]...)
	e3, err := convOp{}.Reference(e3p, e3In, [][]int{{g.sq.n, g.e3.m, g.sq.in[0], g.sq.in[1]}})
	if err != nil {
		return nil, err
	}
	y := &HostTensor{Shape: g.out(), Data: make([]float32, 0, g.sq.n*(g.e1.m+g.e3.m)*plane)}
	for n := 0; n < g.sq.n; n++ {
		y.Data = append(y.Data, e1[0].Data[n*g.e1.m*plane:(n+1)*g.e1.m*plane]...)
		y.Data = append(y.Data, e3[0].Data[n*g.e3.m*plane:(n+1)*g.e3.m*plane]...)
	}
	return []*HostTensor{y}, nil
}

// fireTile is the fire kernel's blocking (its defines in capitals): vec (VEC) lanes per
// vector, register tiles of tileChannels (MT) output channels × tilePixelVecs (NP)
// vectors of pixels, bands of bandRows (R) output rows, and channelGroups (Q) groups of the
// output's channel tiles per band (each group squeezes its band again).
type fireTile struct{ vec, tileChannels, tilePixelVecs, bandRows, channelGroups int }

// maxFireBuffer bounds a fire work-item's private buffers (bytes): its squeezed band and
// the band's two copies for the window's edge columns. They stay in the L2 cache of a core
// (1–2 MB on the Xeons this runs on) next to the weights.
const maxFireBuffer = 256 << 10

// fireItemCost is the driver's cost of a work-group in multiply-adds of a core: PoCL
// wakes a thread for each work-group it hands out, about 2 µs in the 16-core Xeon's VM
// (see smallKernelMACs), some 50,000 multiply-adds of a core's vector units.
const fireItemCost = 50_000

// fireSL is the floats of one squeezed channel's buffer for tile t (the kernel's SL).
func fireSL(g fireGeom, t fireTile) int {
	w := g.sq.in[1]
	return max((t.bandRows+2)*w+2, 2*w+2+t.vec*t.tilePixelVecs)
}

// fireCost estimates the time of the fire kernel with tile t, in multiply-adds of one
// core: the work over the compute units, weighed by the loads each multiply-add of the
// tile's shape costs and the lanes past a run's end, plus one work-item's (the last one
// handed out finishes up to that much after the rest), plus the driver's cost per item.
func fireCost(g fireGeom, t fireTile, cu int) float64 {
	h, w := g.sq.in[0], g.sq.in[1]
	nb := ceilDiv(h, t.bandRows)
	pt := t.vec * t.tilePixelVecs
	run := func(px int) int { return ceilDiv(px, pt) * pt }
	tiles := ceilDiv(g.e1.m, t.tileChannels) + ceilDiv(g.e3.m, t.tileChannels)
	load := 1 + float64(t.tileChannels+t.tilePixelVecs)/float64(2*t.tileChannels*t.tilePixelVecs)
	var work float64
	for b := 0; b < nb; b++ {
		rows := min(t.bandRows, h-b*t.bandRows)
		lo, hi := max(b*t.bandRows-1, 0), min(b*t.bandRows+rows, h-1)
		squeeze := run((hi-lo+1)*w) * ceilDiv(g.sq.m, t.tileChannels) * t.tileChannels * g.sq.c
		expand := run(rows*w) * tiles * t.tileChannels * g.sq.m * (g.e1.m + 9*g.e3.m) / (g.e1.m + g.e3.m)
		work += float64(t.channelGroups*squeeze + expand)
	}
	work *= load * float64(g.sq.n)
	items := float64(nb * t.channelGroups * g.sq.n)
	return work/float64(cu) + work/items + fireItemCost*items/float64(cu)
}

// chooseFireTile picks the fire kernel's blocking for a device: vectors of the device's
// width, as many channels per register tile as AVX-512's 32 registers (AVX's 16) hold
// next to the pixel vectors, and the pixel vectors, bands and channel groups that
// fireCost finds fastest with buffers within maxFireBuffer. ok is false where none fits.
func chooseFireTile(g fireGeom, dev DeviceInfo) (fireTile, bool) {
	vec := dev.FloatVectorWidth
	if vec != 4 && vec != 8 && vec != 16 {
		vec = 8
	}
	mt, nps := 4, []int{1, 2} // 16 registers: MT*NP accumulators, NP pixel vectors, a weight
	if vec == 16 {
		mt, nps = 8, []int{1, 2, 3}
	}
	cu := max(dev.ComputeUnits, 1)
	tiles := ceilDiv(g.e1.m, mt) + ceilDiv(g.e3.m, mt)
	best, bestCost := fireTile{}, -1.0
	for _, np := range nps {
		for rows := 1; rows <= g.sq.in[0]; rows++ {
			for q := 1; q <= min(tiles, 16); q++ {
				t := fireTile{vec: vec, tileChannels: mt, tilePixelVecs: np, bandRows: rows, channelGroups: q}
				if 3*4*g.sq.m*fireSL(g, t) > maxFireBuffer {
					continue
				}
				if c := fireCost(g, t, cu); bestCost < 0 || c < bestCost {
					best, bestCost = t, c
				}
			}
		}
	}
	return best, bestCost >= 0
}

func (o fireOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	return o.plan(p, in, out, dev, nil)
}

// plan is Plan with the tile given (where tile is not nil) rather than chosen.
func (o fireOp) plan(p Params, in, out [][]int, dev DeviceInfo, tile *fireTile) (*Plan, error) {
	return o.planStored(p, in, out, dev, tile, false)
}

// planStored is plan with the tensors' storage: half makes them DATA_T (PlanHalf).
func (o fireOp) planStored(p Params, in, out [][]int, dev DeviceInfo, tile *fireTile, half bool) (*Plan, error) {
	p = paramsOr(p)
	g, err := o.geometry(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(opspec.FireType, out, [][]int{g.out()}); err != nil {
		return nil, err
	}
	if tile == nil {
		t, ok := chooseFireTile(g, dev)
		if !ok {
			return nil, fmt.Errorf("%s: a band of one row of %d squeezed channels × %d pixels exceeds the kernel's %d-byte buffers",
				opspec.FireType, g.sq.m, g.sq.in[1], maxFireBuffer)
		}
		tile = &t
	}
	t := *tile
	h := g.sq.in[0]
	tiles := ceilDiv(g.e1.m, t.tileChannels) + ceilDiv(g.e3.m, t.tileChannels)
	var d defines
	d.int("N", g.sq.n)
	d.int("C", g.sq.c)
	d.int("H", h)
	d.int("W", g.sq.in[1])
	d.int("S", g.sq.m)
	d.int("E1", g.e1.m)
	d.int("E3", g.e3.m)
	d.int("VEC", t.vec)
	d.int("MT", t.tileChannels)
	d.int("NP", t.tilePixelVecs)
	d.int("R", t.bandRows)
	d.int("NB", ceilDiv(h, t.bandRows))
	d.int("Q", t.channelGroups)
	d.int("TG", ceilDiv(tiles, t.channelGroups))
	d.int("SL", fireSL(g, t))
	if g.yn != 0 {
		d.int("YN", g.yn)
	}
	d.bool("HAS_SQ_BIAS", g.sq.hasBias)
	d.bool("HAS_E1_BIAS", g.e1.hasBias)
	d.bool("HAS_E3_BIAS", g.e3.hasBias)
	d.raw("SQ_ACT(v)", g.sq.act.expr("v"))
	d.raw("E1_ACT(v)", g.e1.act.expr("v"))
	d.raw("E3_ACT(v)", g.e3.act.expr("v"))
	typ := storageType(half)
	d.raw("SQ_BIAS_ARG", optionalParamOf(g.sq.hasBias, "sqb", typ))
	d.raw("E1_BIAS_ARG", optionalParamOf(g.e1.hasBias, "e1b", typ))
	d.raw("E3_BIAS_ARG", optionalParamOf(g.e3.hasBias, "e3b", typ))
	d.raw("OPTIONAL_OFFSETS", optionalOffset(g.sq.hasBias, "sqb")+optionalOffset(g.e1.hasBias, "e1b")+optionalOffset(g.e3.hasBias, "e3b"))
	d.bool("PREFETCH_BUILTIN", dev.Prefetch)
	src, err := d.program("fire_cpu.cl")
	if err != nil {
		return nil, err
	}

	// Setup: each W packed into a scratch buffer of its own, tiles of MT rows.
	plan := &Plan{Source: src, AliasInput: -1, OutputBatchStride: g.yn}
	args := []Arg{{Kind: ArgInput, Index: 0}}
	for i, part := range []convGeom{g.sq, g.e1, g.e3} {
		k := part.cg * part.win.k[0] * part.win.k[1]
		mtiles := ceilDiv(part.m, t.tileChannels)
		packed := Arg{Kind: ArgScratch, Index: i}
		plan.Scratch = append(plan.Scratch, 4*mtiles*t.tileChannels*k)
		pg, pl := launchSize([]int{t.tileChannels, k, mtiles}, dev)
		plan.Setup = append(plan.Setup, Launch{Kernel: "fire_pack", Global: pg, Local: pl, Args: []Arg{
			{Kind: ArgInput, Index: 1 + 2*i}, packed, {Kind: ArgInt, Int: int32(k)}, {Kind: ArgInt, Int: int32(part.m)},
		}})
		args = append(args, packed)
		if part.hasBias {
			args = append(args, Arg{Kind: ArgInput, Index: 2 + 2*i})
		}
	}
	args = append(args, Arg{Kind: ArgOutput, Index: 0})
	macs := g.sq.macs() + g.e1.macs() + g.e3.macs()
	plan.Launches = []Launch{cpuLaunch("fire", []int{ceilDiv(h, t.bandRows), t.channelGroups, g.sq.n}, macs, slices.Clone(args), dev)}
	return plan, nil
}
