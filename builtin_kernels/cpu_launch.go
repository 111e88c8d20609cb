package builtinkernels

// Launch shapes shared by the CPU kernels: one work-item per work-group, gathered where a
// launch does little work, and tiles that waste the fewest lanes.

// bestPixelTile picks, from lo to hi, the pixel tile that wastes the fewest lanes on the
// row's last tile, the larger on a tie.
func bestPixelTile(ow, lo, hi int) int {
	best, waste := hi, ceilDiv(ow, hi)*hi-ow
	for p := hi - 1; p >= lo; p-- {
		if w := ceilDiv(ow, p)*p - ow; w < waste {
			best, waste = p, w
		}
	}
	return min(best, ow)
}

// smallKernelMACs is the number of multiply-adds (or comparisons) per compute unit below
// which a CPU kernel runs as one work-group per compute unit: PoCL wakes a worker thread
// for each work-group it hands out, which the layers at batch 1 do too little work to
// pay for. Chosen by measurement (docs/kernels/conv-cpu.md#small-launches-smallkernelmacs).
const smallKernelMACs = 2 << 20

// cpuLaunch is a launch of one work-item per work-group, as the CPU kernels are written,
// unless the kernel does less than smallKernelMACs of work per compute unit: then the
// work-items are gathered into about one work-group per compute unit (the global size
// padded to whole groups; every CPU kernel returns early outside its range).
func cpuLaunch(kernel string, global []int, macs int, args []Arg, dev DeviceInfo) Launch {
	l := cpuLaunchSingle(kernel, global, args)
	items := 1
	for _, v := range global {
		items *= v
	}
	per := gatheredItems(items, macs, dev)
	if per <= 1 || (dev.MaxWorkGroupSize > 0 && per > dev.MaxWorkGroupSize) {
		return l
	}
	// Fill the group along the first dimensions (neighbouring pixel tiles or planes share
	// input rows), rounding down: a few more groups than units rather than fewer.
	size := 1
	for i, v := range global {
		loc := max(1, min(v, per/size))
		size *= loc
		l.Local[i] = loc
		l.Global[i] = ceilDiv(v, loc) * loc
	}
	return l
}

// gatheredItems is how many of a kernel's items to gather into one work-group (or one
// work-item, for kernels that loop over them themselves): about one group per compute
// unit where the kernel does less than smallKernelMACs of work per unit, else 1.
func gatheredItems(items, macs int, dev DeviceInfo) int {
	cu := max(dev.ComputeUnits, 1)
	if macs >= smallKernelMACs*cu {
		return 1
	}
	return max(ceilDiv(items, cu), 1)
}

// planesPerItem groups units of work into work-items: enough items for every compute
// unit four times over, and no more items than that, as each costs the driver a
// work-group of its own.
func planesPerItem(planes int, dev DeviceInfo) int {
	return max(min(planes/(4*max(dev.ComputeUnits, 1)), 16), 1)
}

// cpuLaunchSingle is a launch of one work-item per work-group at any size, for the fused
// inverted-residual kernels, whose bodies are long unrolled blocks: for a group of
// several work-items PoCL compiles a work-group function that loops over them around
// that body, which slows a first run and makes these kernels no faster
// (docs/kernels/conv-cpu.md, "Small launches").
func cpuLaunchSingle(kernel string, global []int, args []Arg) Launch {
	l := Launch{Kernel: kernel, Global: cloneShape(global), Local: make([]int, len(global)), Args: args}
	for i := range l.Local {
		l.Local[i] = 1
	}
	return l
}
