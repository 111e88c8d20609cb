package builtinkernels

import "fmt"

// mmaTile is one tile configuration of conv_mma.cl: a work-group of wm × wn warps
// computes bm output channels × bn output pixels, each warp a (bm/wm) × (bn/wn) block
// of 16 × 8 mma tiles.
type mmaTile struct{ bm, bn, wm, wn int }

// mmaTiles are tried largest first, as gpuTiles: 128 × 128 reuses each staged word most
// (its two local buffers, 38 KB, fit the 48 KB a work-group may have on NVIDIA); the
// small ones leave enough work-groups to fill the device on late, small layers.
var mmaTiles = []mmaTile{
	{128, 128, 2, 4},
	// Four warps of 64 × 64: twice the arithmetic per word read from local memory of
	// the 64 × 32 warp tiles, whose local reads bound them below the tensor-core peak,
	// at the cost of 128 accumulator registers per work-item.
	{128, 128, 2, 2},
	{128, 64, 2, 2},
	{64, 128, 2, 2},
	{64, 64, 2, 2},
	{64, 32, 2, 1},
	{32, 64, 1, 2},
}

func (t mmaTile) threads() int { return 32 * t.wm * t.wn }

// mmaSliceWords is the K slice conv_mma.cl stages, in 32-bit words: 16 tf32 values or
// 32 f16 ones.
const mmaSliceWords = 16

// localBytes is the local memory the kernel declares: two buffers of BM rows of 20
// words and 16 rows of BN + 8, and the emulation's scratch where there is no PTX.
func (t mmaTile) localBytes(ptx bool) int64 {
	b := int64(4 * 2 * (t.bm*(mmaSliceWords+4) + mmaSliceWords*(t.bn+8)))
	if !ptx {
		b += int64(4 * 6 * t.threads())
	}
	return b
}

// valid checks the divisibility conv_mma.cl's staging loops rely on.
func (t mmaTile) valid() bool {
	nt := t.threads()
	return t.bm%(16*t.wm) == 0 && t.bn%(8*t.wn) == 0 && (t.bm*mmaSliceWords/4)%nt == 0 &&
		nt%t.bn == 0 && (mmaSliceWords*t.bn)%nt == 0
}

func (t mmaTile) fits(dev DeviceInfo) bool {
	return t.threads() <= dev.MaxWorkGroupSize && (dev.LocalMemBytes == 0 || t.localBytes(dev.MMA) <= dev.LocalMemBytes)
}

// mmaSliceK is the K of one slice for a precision: BK in conv_mma.cl.
func mmaSliceK(prec Precision) int {
	if prec == PrecisionFP16 {
		return 2 * mmaSliceWords
	}
	return mmaSliceWords
}

// mmaWanted says whether a plan should run on tensor cores: the device took the PTX
// probe, the run allows rounded operands, and the product is large enough that its
// tiles are not mostly padding (below that the fp32 kernels are as fast).
func mmaWanted(g convGeom, dev DeviceInfo) bool {
	if !dev.MMA || dev.Precision == PrecisionFP32 {
		return false
	}
	kt := g.cg * g.win.k[0] * g.win.k[1]
	p := g.n * g.win.out[0] * g.win.out[1]
	return g.mg >= 32 && kt >= 32 && p >= 64
}

// heuristicMMATile picks a tile without measuring: the largest whose work-groups fill
// the device once, else the 64 × 64 tile with K split until they fill it twice.
func heuristicMMATile(g convGeom, dev DeviceInfo) (mmaTile, int) {
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	cu := max(dev.ComputeUnits, 1)
	tiles := func(t mmaTile) int { return ceilDiv(g.mg, t.bm) * ceilDiv(p, t.bn) * g.g }
	for _, t := range mmaTiles {
		if !t.fits(dev) || t.bm > g.mg && t.bm > 32 {
			continue
		}
		if tiles(t) >= cu {
			return t, 1
		}
	}
	t := mmaTile{64, 64, 2, 2}
	if !t.fits(dev) {
		t = mmaTiles[len(mmaTiles)-1]
	}
	bk := mmaSliceK(dev.Precision)
	return t, max(min(ceilDiv(2*cu, tiles(t)), kt/(4*bk), 16), 1)
}

// mmaPlan is the tensor-core plan the heuristic picks.
func mmaPlan(g convGeom, wt bool, dev DeviceInfo) (*Plan, error) {
	t, s := heuristicMMATile(g, dev)
	return mmaTiled(g, wt, t, s, dev.Precision, dev)
}

// mmaTiled writes conv_mma.cl's plan for one tile, K split and operand precision (tf32
// or fp16): a setup launch packs the weights into operand words, then the conv runs,
// with a reduction of the partial sums where K is split. dev.MMA chooses PTX or the
// portable emulation of the same fragments.
func mmaTiled(g convGeom, wt bool, t mmaTile, splitK int, prec Precision, dev DeviceInfo) (*Plan, error) {
	if prec != PrecisionTF32 && prec != PrecisionFP16 {
		return nil, fmt.Errorf("tensor-core conv: precision %v: want tf32 or fp16", prec)
	}
	if !t.valid() {
		return nil, fmt.Errorf("tensor-core conv: tile %v is not valid", t)
	}
	bk := mmaSliceK(prec)
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	kp := ceilDiv(kt, bk) * bk
	mp := ceilDiv(g.mg, t.bm) * t.bm
	kchunk := ceilDiv(ceilDiv(kp, max(splitK, 1)), bk) * bk
	splitK = ceilDiv(kp, kchunk)
	tapMajor := !wt && g.win.k[0]*g.win.k[1] > 1 && g.cg%bk == 0

	var d defines
	g.define(&d)
	d.bool("WT", wt)
	d.bool("MMA_PTX", dev.MMA)
	d.bool("MMA_FP16", prec == PrecisionFP16)
	d.int("MMA_NW", t.wm*t.wn)
	d.int("BM", t.bm)
	d.int("BN", t.bn)
	d.int("WM", t.wm)
	d.int("WN", t.wn)
	d.int("MP", mp)
	d.int("KP", kp)
	d.int("SPLITK", splitK)
	d.int("KCHUNK", kchunk)
	d.bool("TAPMAJOR", tapMajor)
	ops, err := kernelSource("mma_ops.cl")
	if err != nil {
		return nil, err
	}
	body, err := kernelSource("conv_mma.cl")
	if err != nil {
		return nil, err
	}
	plan := &Plan{Source: d.b.String() + ops + body, AliasInput: -1, OutputBatchStride: g.yn}

	words := kp
	if prec == PrecisionFP16 {
		words = kp / 2
	}
	packed := Arg{Kind: ArgScratch, Index: 0}
	plan.Scratch = []int{4 * g.g * mp * words}
	pg, pl := launchSize([]int{words, g.g * mp}, dev)
	plan.Setup = []Launch{{Kernel: "conv_mma_pack", Global: pg, Local: pl, Args: []Arg{{Kind: ArgInput, Index: 1}, packed}}}

	var extra []Arg
	if g.hasBias {
		extra = append(extra, Arg{Kind: ArgInput, Index: 2})
	}
	if g.hasResidual {
		extra = append(extra, Arg{Kind: ArgInput, Index: 3})
	}
	nt := t.threads()
	global := []int{ceilDiv(p, t.bn) * nt, mp / t.bm, g.g * splitK}
	local := []int{nt, 1, 1}
	in := []Arg{{Kind: ArgInput, Index: 0}, packed}
	if splitK == 1 {
		args := append(append(in, extra...), Arg{Kind: ArgOutput, Index: 0})
		plan.Launches = []Launch{{Kernel: "conv_mma", Global: global, Local: local, Args: args}}
		return plan, nil
	}
	total := g.n * g.m * g.win.out[0] * g.win.out[1]
	partial := Arg{Kind: ArgScratch, Index: 1}
	plan.Scratch = append(plan.Scratch, 4*splitK*total)
	first := append(append(in, extra...), partial)
	second := append(append([]Arg{partial}, extra...), Arg{Kind: ArgOutput, Index: 0})
	rg, rl := launchSize([]int{total}, dev)
	plan.Launches = []Launch{
		{Kernel: "conv_mma", Global: global, Local: local, Args: first},
		{Kernel: "conv_mma_reduce", Global: rg, Local: rl, Args: second},
	}
	return plan, nil
}

// mmaCandidates lists the tensor-core plans the tuner times for one implicit GEMM at
// the device's precision: every tile the device runs, with no K split and, where its
// work-groups do not fill the device twice, with the split that does; the heuristic's
// choice first.
func mmaCandidates(g convGeom, wt bool, dev DeviceInfo) ([]*Plan, error) {
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	cu := max(dev.ComputeUnits, 1)
	bk := mmaSliceK(dev.Precision)
	type choice struct {
		t mmaTile
		s int
	}
	ht, hs := heuristicMMATile(g, dev)
	list := []choice{{ht, hs}}
	seen := map[choice]bool{list[0]: true}
	for _, t := range mmaTiles {
		if !t.valid() || !t.fits(dev) || t.bm > 2*g.mg && t.bm > 32 {
			continue
		}
		tiles := ceilDiv(g.mg, t.bm) * ceilDiv(p, t.bn) * g.g
		splits := []int{1}
		if tiles < 2*cu {
			splits = append(splits, max(min(ceilDiv(2*cu, tiles), kt/(4*bk), 16), 1))
		}
		for _, s := range splits {
			c := choice{t, s}
			if seen[c] {
				continue
			}
			seen[c] = true
			list = append(list, c)
		}
	}
	plans := make([]*Plan, 0, len(list))
	for _, c := range list {
		pl, err := mmaTiled(g, wt, c.t, c.s, dev.Precision, dev)
		if err != nil {
			return nil, err
		}
		plans = append(plans, pl)
	}
	return plans, nil
}

// withMMA puts the tensor-core candidates beside the fp32 ones where the device and the
// precision allow them: first where mmaWanted (Plan's own choice is then the first
// tensor-core one), else after the fp32 plans, for the tuner to find where they win.
func withMMA(g convGeom, wt bool, dev DeviceInfo, fp32 []*Plan) ([]*Plan, error) {
	if !dev.MMA || dev.Precision == PrecisionFP32 {
		return fp32, nil
	}
	mma, err := mmaCandidates(g, wt, dev)
	if err != nil {
		return nil, err
	}
	if mmaWanted(g, dev) {
		return append(mma, fp32...), nil
	}
	return append(fp32, mma...), nil
}

// implicitGemmKernel says whether a plan runs the implicit GEMM, in fp32 or on tensor
// cores: a Gemm or MatMul so planned has the implicit GEMM's candidates.
func implicitGemmKernel(p *Plan) bool {
	return len(p.Launches) > 0 && (p.Launches[0].Kernel == "conv_gemm" || p.Launches[0].Kernel == "conv_mma")
}
