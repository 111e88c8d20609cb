package builtinkernels

// window_cpu.cl's plans: row-vectorised sliding windows (depthwise and small
// convolutions, pools) over a private ring of input rows.

// windowVec is the row vector width of window_cpu.cl: the widest of 4 and 8 lanes that
// fits in an output row.
func windowVec(ow int, dev DeviceInfo) int {
	if ow >= 8 && dev.FloatVectorWidth >= 8 {
		return 8
	}
	return 4
}

// windowRows is how many output rows window_cpu.cl computes at a time: 4 to 6 (enough
// independent accumulators to hide the latency of a fused multiply-add, few enough to
// stay in registers), the count that wastes the fewest rows on the last step.
func windowRows(oh int) int {
	return bestPixelTile(oh, 4, 6)
}

// maxWindowBuffer bounds window_cpu.cl's private row buffer (bytes): beyond it, rows so
// long that the buffer would not stay in cache, the portable kernels run instead.
const maxWindowBuffer = 64 << 10

// maxWindowLoads bounds the row loads window_cpu.cl unrolls per step (RING rows by KW
// taps): beyond it, windows far larger than any network's, the compiler takes minutes
// over the unrolled code and the portable kernels run instead.
const maxWindowLoads = 1024

// windowPlan plans a kernel of window_cpu.cl over planes units of xch input channels
// each, nr output rows at a time (d holds the layer's own defines), that does macs
// multiply-adds or comparisons in all; ok is false when its row buffer would be too large or
// its unrolled taps too many.
func windowPlan(d *defines, kernel string, planes, xch, nr, vec int, win window, in [2]int, macs int, args []Arg, dev DeviceInfo) (plan *Plan, ok bool, err error) {
	oh, ow := win.out[0], win.out[1]
	// One phase holds every position a vector of the row reads (a row narrower than a
	// vector computes a whole one) and every input column.
	lb := max(max(ow, vec)+(win.k[1]-1)*win.d[1]/win.s[1], ceilDiv(win.pb[1]+in[1], win.s[1]))
	nr = min(nr, oh)
	ring := (nr-1)*win.s[0] + (win.k[0]-1)*win.d[0] + 1
	if 4*xch*(ring+1)*win.s[1]*lb > maxWindowBuffer || ring*win.k[1] > maxWindowLoads {
		return nil, false, nil
	}
	// Too few planes for the compute units are split into bands of rows, each band
	// copying the rows it shares with the one above again.
	cu := max(dev.ComputeUnits, 1)
	bands := 1
	if planes < 4*cu {
		bands = min(ceilDiv(oh, nr), ceilDiv(4*cu, planes))
	}
	rows := ceilDiv(ceilDiv(oh, bands), nr) * nr
	bands = ceilDiv(oh, rows)
	per := planesPerItem(planes*bands, dev)
	d.int("VEC", vec)
	d.int("NR", nr)
	d.int("LB", lb)
	d.int("RING", ring)
	d.int("ROWS", rows)
	d.int("BANDS", bands)
	d.int("PLANES", per)
	src, err := d.program("window_cpu.cl")
	if err != nil {
		return nil, false, err
	}
	return &Plan{
		Source:     src,
		Launches:   []Launch{cpuLaunch(kernel, []int{ceilDiv(planes*bands, per)}, macs, args, dev)},
		AliasInput: -1,
	}, true, nil
}

// cpuDepthwisePlan plans window_cpu.cl's convolution for a depthwise conv: each unit
// computes up to 4 of a group's output channels (a channel multiplier above 1) from its
// one input plane. ok is false where the rows are too long for its buffer.
func cpuDepthwisePlan(g convGeom, dev DeviceInfo) (*Plan, bool, error) {
	return cpuWindowConvPlan(g, min(g.mg, 4), depthwiseRows(g.win.out[0]), depthwiseVec(g, dev), dev)
}

// depthwiseVec is the row vector width of a depthwise conv: 16 lanes where the device
// has them, the stride is 1 and the row holds a whole vector, else windowVec's; strided
// layers measured no faster with 16 (docs/kernels/window-cpu.md#depthwisevec).
func depthwiseVec(g convGeom, dev DeviceInfo) int {
	if ow := g.win.out[1]; ow >= 16 && g.win.s[1] == 1 && dev.FloatVectorWidth >= 16 {
		return 16
	}
	return windowVec(g.win.out[1], dev)
}

// depthwiseRows is how many output rows a depthwise conv computes at a time. With one
// output channel per unit the accumulators are only that many vectors, so small planes
// take up to 8 rows (a 7×7 plane at once, 14 rows in two steps of 7), which saves the
// per-step work of copying and indexing rows. Wider planes keep windowRows', where 8 rows
// measured slower than 4 (docs/kernels/window-cpu.md#depthwiserows).
func depthwiseRows(oh int) int {
	switch {
	case oh <= 8:
		return oh
	case oh <= 16:
		return bestPixelTile(oh, 6, 8)
	}
	return windowRows(oh)
}

// cpuWindowConvPlan plans window_cpu.cl's convolution with units of mt output channels
// of a group (at most the group's mg: the kernel moves a partial last block back to end
// at mg), nr output rows at a time.
func cpuWindowConvPlan(g convGeom, mt, nr, vec int, dev DeviceInfo) (*Plan, bool, error) {
	mt = min(mt, g.mg)
	mb := ceilDiv(g.mg, mt)
	var d defines
	g.define(&d)
	d.int("MT", mt)
	d.int("MB", mb)
	args := g.kernelArgs(Arg{Kind: ArgInput, Index: 1})
	plan, ok, err := windowPlan(&d, "conv2d_window", g.n*g.g*mb, g.cg, nr, vec, g.win, g.in, g.macs(), args, dev)
	if plan != nil {
		plan.OutputBatchStride = g.yn
	}
	return plan, ok, err
}
