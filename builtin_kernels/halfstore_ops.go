package builtinkernels

import "strings"

// The ops that store half (HalfStorer): the layers of the large CNNs. Each runs its
// kernels with the storage macros switched to half: the GPU's implicit GEMM, the CPU's
// block kernels (inverted residuals, fire modules), channel-vectorised tiles
// (conv_cpu.cl), row-vectorised windows (window_cpu.cl), Winograd (wino_cpu.cl) and 1×1
// GEMMs (conv1x1_cpu.cl) where the float plan runs them, else the portable kernels
// (conv.cl's direct convolution, pool.cl, gemm.cl, ...).

func (o convOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, false, err
	}
	if err := checkOut("Conv", out, shapes); err != nil {
		return nil, false, err
	}
	if len(in[0]) == 5 {
		return nil, false, nil
	}
	g, _ := o.geometry(p, in)
	g.half = true
	if g.pool {
		// The GlobalAveragePool folded in: conv1x1's POOL_AVG epilogue on CPUs.
		if !pooledIn1x1(g, dev) {
			return nil, false, nil
		}
		plan, err := cpu1x1Plan(g, heuristic1x1Tile(g, dev), dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	if g.mpool != nil {
		if g.hasResidual || g.yn != 0 || g.nsp != 2 {
			return nil, false, nil
		}
		if plan, ok, err := cpuConvMaxPoolPlan(g, heuristicCPUTile(g, dev), dev); ok || err != nil {
			return halfPlan(plan, dev), ok, err
		}
		plan, err := convMaxPoolPlan(g, dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	depthwise := g.cg == 1 && g.g > 1
	if dev.IsGPU && !depthwise && g.nsp == 2 {
		// Tensor cores where the device took the probe (fp16 operands).
		if plan, ok, err := mmaPlanHalf(g, false, dev); ok || err != nil {
			return plan, ok, err
		}
		tile, splitK := heuristicTile(g, dev)
		plan, err := implicitGemmTiled(g, false, tile, splitK, dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	if !dev.IsGPU && !depthwise && g.nsp == 2 {
		// The CPU's candidates in the float plan's order, the first whose kernels read
		// and write through the storage macros.
		plans, err := cpuConvCandidatePlans(g, dev, 0)
		if err != nil {
			return nil, false, err
		}
		for _, plan := range plans {
			if storesThroughMacros(plan) {
				return halfPlan(plan, dev), true, nil
			}
		}
	}
	plan, err := directConvPlan(g, 4, 4, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

// storesThroughMacros says whether a plan's program reads and writes its tensors through
// the storage macros: its source took storage.cl.
func storesThroughMacros(plan *Plan) bool {
	return strings.Contains(plan.Source, "#define CLHOST_STORAGE 1")
}

func (o poolOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, false, err
	}
	if err := o.checkOut(out, shapes); err != nil {
		return nil, false, err
	}
	if len(in[0]) == 5 {
		return nil, false, nil
	}
	g, _ := o.geometry(p, in)
	if o.max && !dev.IsGPU && g.nsp == 2 {
		plan, ok, err := cpuMaxPoolPlan(g, windowRows(g.win.out[0]), windowVec(g.win.out[1], dev), dev)
		if ok || err != nil {
			return halfPlan(plan, dev), ok, err
		}
	}
	plan, err := o.portablePlan(g, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o globalPoolOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o concatOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o unaryOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

// PlanHalf stores half where Clip's bounds are attributes (elementwise.cl); bounds
// computed at run time take math.cl's float kernels.
func (o clipOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	if len(in) > 1 {
		return nil, false, nil
	}
	return o.attrs.PlanHalf(p, in, out, dev)
}

func (o binaryOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o softmaxOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	outer, n, inner, err := o.split(p, in)
	if err != nil {
		return nil, false, err
	}
	if err := checkOut("Softmax", out, [][]int{in[0]}); err != nil {
		return nil, false, err
	}
	plan, err := o.linePlan(outer, n, inner, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o gemmOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, false, err
	}
	if err := checkOut("Gemm", out, shapes); err != nil {
		return nil, false, err
	}
	g, _ := o.geometry(p, in)
	if dev.IsGPU && fullyConnected(g, p) {
		// A fully connected layer: the implicit GEMM, as gemmGPUPlan runs it in float.
		cg := gemmAsConv(g)
		cg.half = true
		if plan, ok, err := mmaPlanHalf(cg, !g.transB, dev); ok || err != nil {
			return plan, ok, err
		}
		tile, splitK := heuristicTile(cg, dev)
		plan, err := implicitGemmTiled(cg, !g.transB, tile, splitK, dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	if !dev.IsGPU && fullyConnected(g, p) {
		// conv_cpu.cl's fc_vec, as the float plan runs it.
		cg := gemmAsConv(g)
		cg.half = true
		plan, err := cpuFCPlan(cg, !g.transB, dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	plan, err := g.plan(dev)
	if err != nil {
		return nil, false, err
	}
	l := &plan.Launches[0]
	l.Args = append(l.Args, Arg{Kind: ArgFloat, Float: p.Float("alpha", 1)}, Arg{Kind: ArgFloat, Float: p.Float("beta", 1)})
	return halfPlan(plan, dev), true, nil
}

func (o matmulOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	s, err := o.shape(in)
	if err != nil {
		return nil, false, err
	}
	if err := checkOut("MatMul", out, [][]int{s.out}); err != nil {
		return nil, false, err
	}
	scale := matmulScale(p)
	if !dev.IsGPU {
		// The CPU's float plans: fc_vec for a Linear layer, else gemm_vec.
		if s.flat && scale == 1 {
			cg := gemmAsConv(s.flatGemm())
			cg.half = true
			plan, err := cpuFCPlan(cg, true, dev)
			if err != nil {
				return nil, false, err
			}
			return halfPlan(plan, dev), true, nil
		}
		s.geom.scale = scale
		plan, err := s.geom.cpuVecPlan(dev)
		if err != nil {
			return nil, false, err
		}
		return halfPlan(plan, dev), true, nil
	}
	plan, err := s.geom.plan(dev)
	if err != nil {
		return nil, false, err
	}
	l := &plan.Launches[0]
	l.Args = append(l.Args, Arg{Kind: ArgFloat, Float: scale}, Arg{Kind: ArgFloat, Float: 1})
	return halfPlan(plan, dev), true, nil
}

// PlanHalf stores half where the fused block runs its tiled kernels (pwdw, pwdwp,
// pwdwr); the plain launches through scratch tensors store float.
func (o invResOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.planStored(p, in, out, dev, nil, true)
	if err != nil || plan == nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

func (o fireOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.planStored(p, in, out, dev, nil, true)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}

// convMaxPoolPlan is conv.cl's conv2d_maxpool: the conv's output never in memory, each
// work-item a pooled pixel.
func convMaxPoolPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	var d defines
	g.define(&d)
	d.int("OCT", 1)
	d.int("PXT", 1)
	d.int("MB", g.mg)
	g.mpool.defineFused(&d)
	src, err := d.program("conv.cl")
	if err != nil {
		return nil, err
	}
	w := g.mpool.win
	gl, lo := launchSize([]int{w.out[1], w.out[0], g.n * g.m}, dev)
	return &Plan{
		Source:     src,
		Launches:   []Launch{{Kernel: "conv2d_maxpool", Global: gl, Local: lo, Args: g.kernelArgs(Arg{Kind: ArgInput, Index: 1})}},
		AliasInput: -1,
	}, nil
}

// The layout ops move elements without arithmetic (strided_copy's COPY_DATA): half
// tensors keep their bits. A view that moves nothing is an alias, stored as its input.
func (o copyOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	return halfCopyPlan(plan, err, dev)
}

func (o depthSpaceOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	return halfCopyPlan(plan, err, dev)
}

func (o splitOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	plan, err := o.Plan(p, in, out, dev)
	return halfCopyPlan(plan, err, dev)
}

// halfCopyPlan is a layout plan's half form, for dev; an alias plan takes none.
func halfCopyPlan(plan *Plan, err error, dev DeviceInfo) (*Plan, bool, error) {
	if err != nil || plan.AliasInput >= 0 {
		return nil, false, err
	}
	for _, l := range plan.Launches {
		if l.Kernel != "strided_copy" {
			return nil, false, nil
		}
	}
	return halfPlan(plan, dev), true, nil
}

// LayerNormalization with its Y alone (Mean and InvStdDev stay float): the row statistics
// in float over half values.
func (o layerNormOp) PlanHalf(p Params, in, out [][]int, dev DeviceInfo) (*Plan, bool, error) {
	if len(out) != 1 {
		return nil, false, nil
	}
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}
