package builtinkernels

// conv_cpu.cl's conv2d_maxpool: a Conv and the MaxPool after it in one launch.

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
	pxt := min(t.tilePixels, g.win.out[1])
	if 2*ceilDiv(g.win.out[1], pxt)*pxt*t.vec*t.weightVecs*4 > maxPoolRowBuffer {
		return nil, false, nil
	}
	poh, pow := g.mpool.win.out[0], g.mpool.win.out[1]
	planes := g.n * g.g * ceilDiv(g.mg, t.vec*t.weightVecs)
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
