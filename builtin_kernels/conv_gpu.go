package builtinkernels

// gemmTile is one tile configuration of conv_gpu.cl: a work-group computes TM output
// channels × TN output pixels, each of its (TM/RM)·(TN/RN) work-items an RM × RN block
// read from local memory as float4s (so RM and RN are multiples of 4), stepping through
// K in slices of TK.
type gemmTile struct{ tm, tn, rm, rn, tk int }

// gpuTiles are tried largest first: big tiles reuse each staged value most, small ones
// leave enough work-groups to fill the device on small layers.
var gpuTiles = []gemmTile{
	{128, 128, 8, 8, 8},
	{64, 128, 8, 8, 8},
	{64, 64, 4, 4, 16},
	{32, 64, 4, 4, 16},
	{32, 32, 4, 4, 16},
	{16, 64, 4, 4, 16},
}

// tunerTiles are further configurations only the tuner tries: other shapes of the
// register tile and deeper K slices.
var tunerTiles = []gemmTile{
	{128, 128, 8, 8, 16},
	{128, 64, 8, 8, 8},
	{64, 128, 4, 8, 8},
	{64, 64, 8, 8, 8},
	{64, 32, 4, 4, 16},
}

func (t gemmTile) threads() int { return (t.tm / t.rm) * (t.tn / t.rn) }

// localBytes is the local memory conv_gpu.cl declares for the tile: two buffers of a
// TK × (TM+4) slice of W and a TK × TN slice of X_col.
func (t gemmTile) localBytes() int64 { return int64(4 * 2 * t.tk * (t.tm + 4 + t.tn)) }

// valid checks the divisibility conv_gpu.cl's loading loops and float4 reads rely on.
func (t gemmTile) valid() bool {
	nt := t.threads()
	return t.rm%4 == 0 && t.rn%4 == 0 && t.tm%t.rm == 0 && t.tn%t.rn == 0 &&
		nt%t.tk == 0 && nt%t.tn == 0 && nt%t.tm == 0 &&
		(t.tm*t.tk)%nt == 0 && (t.tn*t.tk)%nt == 0
}

// fits says whether the device can run the tile's work-group.
func (t gemmTile) fits(dev DeviceInfo) bool {
	return t.threads() <= dev.MaxWorkGroupSize && (dev.LocalMemBytes == 0 || t.localBytes() <= dev.LocalMemBytes)
}

// autoSplitK is the K split the heuristic picks for a tile count: enough work-groups for
// every compute unit twice over, each still with a few K slices to run.
func autoSplitK(tiles, kt, tk, cu int) int {
	if tiles >= cu || kt < 16*tk {
		return 1
	}
	return max(min(ceilDiv(2*cu, tiles), kt/(8*tk), 32), 1)
}

// convGPUPlan plans a (non-depthwise) convolution as an implicit GEMM for GPUs: the
// im2col matrix is never stored, local memory stages its tiles, and layers with few
// output tiles split K over more work-groups and add the partial sums in a second kernel.
// A fused activation (g.act) and residual (input 3, g.hasResidual) are applied as the
// outputs are written.
func convGPUPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	return implicitGemmPlan(g, false, dev)
}

// implicitGemmPlan is convGPUPlan with the weight layout chosen: wt means weights stored
// K × M rather than M × K (a Gemm's B operand without transB).
func implicitGemmPlan(g convGeom, wt bool, dev DeviceInfo) (*Plan, error) {
	if mmaWanted(g, dev) {
		return mmaPlan(g, wt, dev)
	}
	tile, splitK := heuristicTile(g, dev)
	return implicitGemmTiled(g, wt, tile, splitK, dev)
}

// heuristicTile picks a tile configuration without measuring: the largest tile that
// still gives two work-groups per compute unit, else a small tile with K split.
func heuristicTile(g convGeom, dev DeviceInfo) (gemmTile, int) {
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	cu := max(dev.ComputeUnits, 1)
	tiles := func(t gemmTile) int { return ceilDiv(g.mg, t.tm) * ceilDiv(p, t.tn) * g.g }
	// Plain matrix products (Gemm, MatMul: a 1×1 window over 1×1 images) of at least
	// 128 columns: 128×64 tiles of 8×8 per work-item, K split until the work-groups
	// cover the device twice. Measured fastest, against smaller tiles without a split,
	// for every such product of the transformers in bench/HISTORY.md.
	if wide := (gemmTile{128, 64, 8, 8, 8}); g.win.k == [2]int{1, 1} && g.in == [2]int{1, 1} && g.g == 1 && g.mg >= wide.tm && wide.fits(dev) {
		n, s := tiles(wide), 1
		if n < 2*cu {
			s = max(min(ceilDiv(2*cu, n), kt/(8*wide.tk), 32), 1)
		}
		if n*s >= cu {
			return wide, s
		}
	}
	var tile gemmTile
	chosen := false
	for _, t := range gpuTiles {
		if !t.fits(dev) || t.tm > g.mg && t.tm > 16 {
			continue
		}
		if tiles(t) >= 2*cu {
			tile, chosen = t, true
			break
		}
	}
	if !chosen {
		// Too little work for any tile size: take the smallest tile that suits the
		// channel count and split K.
		tile = gpuTiles[len(gpuTiles)-2]
		if g.mg <= 16 {
			tile = gpuTiles[len(gpuTiles)-1]
		}
	}
	return tile, autoSplitK(tiles(tile), kt, tile.tk, cu)
}

// implicitGemmTiled writes the plan for one tile configuration and K split.
func implicitGemmTiled(g convGeom, wt bool, tile gemmTile, splitK int, dev DeviceInfo) (*Plan, error) {
	hasRes := g.hasResidual
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	kchunk := ceilDiv(ceilDiv(kt, splitK), tile.tk) * tile.tk
	splitK = ceilDiv(kt, kchunk)

	var d defines
	g.define(&d)
	d.bool("WT", wt)
	d.int("TM", tile.tm)
	d.int("TN", tile.tn)
	d.int("RM", tile.rm)
	d.int("RN", tile.rn)
	d.int("TK", tile.tk)
	d.int("SPLITK", splitK)
	d.int("KCHUNK", kchunk)
	tapMajor := !wt && g.win.k[0]*g.win.k[1] > 1 && g.cg%tile.tk == 0
	d.bool("TAPMAJOR", tapMajor)
	src, err := d.program("conv_gpu.cl")
	if err != nil {
		return nil, err
	}
	plan := &Plan{Source: src, AliasInput: -1, OutputBatchStride: g.yn}
	in := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}}
	if tapMajor {
		// The weights, packed tap-major once (a setup launch on constant weights).
		packed := Arg{Kind: ArgScratch, Index: len(plan.Scratch)}
		plan.Scratch = append(plan.Scratch, 4*g.m*kt)
		pg, pl := launchSize([]int{kt, g.m}, dev)
		plan.Setup = []Launch{{Kernel: "conv_gemm_pack", Global: pg, Local: pl, Args: []Arg{in[1], packed}}}
		in[1] = packed
	}
	var extra []Arg
	if g.hasBias {
		extra = append(extra, Arg{Kind: ArgInput, Index: 2})
	}
	if hasRes {
		extra = append(extra, Arg{Kind: ArgInput, Index: 3})
	}
	global := []int{ceilDiv(p, tile.tn) * (tile.tn / tile.rn), ceilDiv(g.mg, tile.tm) * (tile.tm / tile.rm), g.g * splitK}
	local := []int{tile.tn / tile.rn, tile.tm / tile.rm, 1}
	if splitK == 1 {
		args := append(append(in, extra...), Arg{Kind: ArgOutput, Index: 0})
		plan.Launches = []Launch{{Kernel: "conv_gemm", Global: global, Local: local, Args: args}}
		return plan, nil
	}
	total := g.n * g.m * g.win.out[0] * g.win.out[1]
	partial := Arg{Kind: ArgScratch, Index: len(plan.Scratch)}
	plan.Scratch = append(plan.Scratch, 4*splitK*total)
	// conv_gemm's signature keeps the bias and residual arguments whatever SPLITK is.
	first := append(append(in[:2:2], extra...), partial)
	second := append(append([]Arg{partial}, extra...), Arg{Kind: ArgOutput, Index: 0})
	rg, rl := launchSize([]int{total}, dev)
	plan.Launches = []Launch{
		{Kernel: "conv_gemm", Global: global, Local: local, Args: first},
		{Kernel: "conv_gemm_reduce", Global: rg, Local: rl, Args: second},
	}
	return plan, nil
}

// gemmGPUPlan runs a plain Gemm — Y = A·B' + bias, the fully connected layer — on the
// implicit-GEMM kernel as a 1×1 convolution over M images of K channels, so it gets the
// same tiling and split-K. It reports false for forms that do not map (batched,
// transposed A, alpha or beta other than 1, a C that is not a per-column bias).
func gemmGPUPlan(g gemmGeom, p Params, dev DeviceInfo) (*Plan, bool, error) {
	if g.nb != 1 || g.transA || p.Float("alpha", 1) != 1 {
		return nil, false, nil
	}
	if g.hasC && (p.Float("beta", 1) != 1 || g.csm != 0 || g.csn != 1) {
		return nil, false, nil
	}
	plan, err := implicitGemmPlan(gemmAsConv(g), !g.transB, dev)
	return plan, err == nil, err
}

// gemmAsConv is a Gemm seen as a 1×1 convolution over M images of K channels.
func gemmAsConv(g gemmGeom) convGeom {
	return convGeom{
		n: g.m, c: g.k, m: g.n, g: 1, cg: g.k, mg: g.n,
		in: [2]int{1, 1}, nsp: 2,
		win:     window{k: [2]int{1, 1}, s: [2]int{1, 1}, d: [2]int{1, 1}, out: [2]int{1, 1}},
		hasBias: g.hasC,
		act:     g.act,
	}
}

// gemmCandidates lists the plans the tuner times for one implicit GEMM: every tile
// configuration the device can run, each with no K split and, where its tiles leave
// compute units idle, with the heuristic's split and twice that; the heuristic's own
// choice first.
func gemmCandidates(g convGeom, wt bool, dev DeviceInfo) ([]*Plan, error) {
	p := g.n * g.win.out[0] * g.win.out[1]
	kt := g.cg * g.win.k[0] * g.win.k[1]
	cu := max(dev.ComputeUnits, 1)
	type choice struct {
		t gemmTile
		s int
	}
	ht, hs := heuristicTile(g, dev)
	seen := map[choice]bool{}
	list := []choice{{ht, hs}}
	seen[list[0]] = true
	for _, t := range append(append([]gemmTile(nil), gpuTiles...), tunerTiles...) {
		if !t.valid() || !t.fits(dev) || t.tm > 2*g.mg && t.tm > 16 {
			continue
		}
		tiles := ceilDiv(g.mg, t.tm) * ceilDiv(p, t.tn) * g.g
		// Splits that fill the device's work-group slots (about two per compute unit)
		// once from below and once from above, and twice from below: a split that
		// leaves a few work-groups for a second wave costs nearly a whole wave.
		limit := func(s int) int { return max(min(s, kt/(8*t.tk), 32), 1) }
		splits := []int{1, limit(2 * cu / tiles), limit(ceilDiv(2*cu, tiles)), limit(4 * cu / tiles)}
		if tiles >= 2*cu {
			// Every compute unit has two work-groups already: a K split only adds the
			// partial sums' traffic, and each candidate costs a compile (seconds on NVIDIA).
			splits = splits[:1]
		}
		for _, k := range splits {
			c := choice{t, k}
			if k > 32 || k > 1 && kt < 16*t.tk || seen[c] {
				continue
			}
			seen[c] = true
			list = append(list, c)
		}
	}
	plans := make([]*Plan, 0, len(list))
	for _, c := range list {
		pl, err := implicitGemmTiled(g, wt, c.t, c.s, dev)
		if err != nil {
			return nil, err
		}
		plans = append(plans, pl)
	}
	return withMMA(g, wt, dev, plans)
}

// Candidates implements Tunable for convolutions on GPUs; other devices and depthwise
// convolutions have one plan.
func (o convOp) Candidates(p Params, in, out [][]int, dev DeviceInfo) ([]*Plan, error) {
	p = paramsOr(p)
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, in)
	depthwise := g.cg == 1 && g.g > 1
	if g.pool && pooledBlocked(g, dev) {
		nchw, err := cpu1x1Plan(g, heuristic1x1Tile(g, dev), dev)
		return []*Plan{plan, nchw}, err
	} else if g.pool && pooledIn1x1(g, dev) {
		return cpu1x1Candidates(g, dev)
	} else if g.pool {
		return []*Plan{plan}, nil
	}
	if g.mpool != nil {
		return cpuConvMaxPoolCandidates(g, plan, dev)
	}
	if !dev.IsGPU && depthwise && g.nsp == 2 {
		return []*Plan{plan}, nil
	}
	if !dev.IsGPU && !depthwise && g.nsp == 2 {
		return cpuConvCandidatePlans(g, dev, 0)
	}
	if !dev.IsGPU || depthwise || g.nsp != 2 {
		// The direct kernel's register tile: how PoCL and other CPU drivers vectorise
		// it across work-items depends on the shape in ways no rule predicts well.
		cands := []*Plan{plan}
		seen := map[string]bool{plan.Source: true}
		for _, oct := range []int{4, 8, 16} {
			for _, pxt := range []int{2, 4} {
				c, err := directConvPlan(g, oct, pxt, dev)
				if err != nil {
					return nil, err
				}
				if !seen[c.Source] {
					seen[c.Source] = true
					cands = append(cands, c)
				}
			}
		}
		return cands, nil
	}
	return gemmCandidates(g, false, dev)
}

// Candidates implements Tunable for Gemm layers the implicit GEMM runs.
func (o gemmOp) Candidates(p Params, in, out [][]int, dev DeviceInfo) ([]*Plan, error) {
	p = paramsOr(p)
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, in)
	if !dev.IsGPU || !implicitGemmKernel(plan) {
		return []*Plan{plan}, nil
	}
	cg := gemmAsConv(g)
	return gemmCandidates(cg, !g.transB, dev)
}
