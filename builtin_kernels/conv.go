package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
)

func init() { Register("Conv", convOp{}) }

// convOp is ONNX Conv over 1-D, 2-D and 3-D data (3-D in conv3d.go): X, W (M × C/group × kH × kW), optional
// bias B (M), with clhost's fused work (fused.go): an optional residual R (input 3, of the
// output's shape; B may then be omitted as an empty name) and an activation, so
// Y = act(conv(X, W) + B + R).
type convOp struct{}

type convGeom struct {
	n, c, m, g, cg, mg int
	in                 [2]int
	nsp                int
	win                window
	hasBias            bool
	hasResidual        bool
	act                fusedAct
	yn                 int       // opspec.OutputBatchStrideAttr, or 0 for a contiguous output
	pool               bool      // opspec.FusedGlobalAveragePoolAttr: the output is each plane's mean
	mpool              *poolGeom // opspec.FusedMaxPoolPrefix: the max pool of the output, or nil
	half               bool      // tensors stored as half (HalfStorer): conv.cl's DATA_T
}

func (convOp) geometry(p Params, in [][]int) (convGeom, error) {
	const typ = "Conv"
	var cg convGeom
	if err := checkCounts(typ, in, nil, 2, 4, 0); err != nil {
		return cg, err
	}
	x, w := in[0], in[1]
	nsp, err := spatialRank(typ, x)
	if err != nil {
		return cg, err
	}
	if len(w) != len(x) {
		return cg, fmt.Errorf("%s: input 1 (W) has shape %v: want rank %d like X %v (M, C/group, kernel...)", typ, w, len(x), x)
	}
	group := p.Int("group", 1)
	if group < 1 || group > int64(x[1]) {
		return cg, fmt.Errorf("%s: group %d: want 1 to the %d input channels", typ, group, x[1])
	}
	cg.n, cg.c, cg.m, cg.g, cg.nsp = x[0], x[1], w[0], int(group), nsp
	if cg.c%cg.g != 0 || cg.m%cg.g != 0 {
		return cg, fmt.Errorf("%s: group %d does not divide input channels %d and output channels %d", typ, cg.g, cg.c, cg.m)
	}
	cg.cg, cg.mg = cg.c/cg.g, cg.m/cg.g
	if w[1] != cg.cg {
		return cg, fmt.Errorf("%s: W has shape %v: dimension 1 is %d, want C/group = %d/%d = %d", typ, w, w[1], cg.c, cg.g, cg.cg)
	}
	k := hw2(w)
	if p.Has("kernel_shape") {
		ks, err := listAttr(typ, p, "kernel_shape", nsp, 1, 1, 1)
		if err != nil {
			return cg, err
		}
		if ks != k {
			return cg, fmt.Errorf("%s: kernel_shape %v does not match W's spatial shape %v", typ, p.Ints("kernel_shape", nil), w[2:])
		}
	}
	// A nil shape is an omitted input (an empty name in the model).
	if len(in) >= 3 && in[2] != nil {
		if len(in[2]) != 1 || in[2][0] != cg.m {
			return cg, fmt.Errorf("%s: input 2 (B) has shape %v, want [%d]", typ, in[2], cg.m)
		}
		cg.hasBias = true
	}
	cg.in = hw2(x)
	if cg.win, err = resolveWindow(typ, p, nsp, cg.in, k, false); err != nil {
		return cg, err
	}
	if len(in) == 4 && in[3] != nil {
		if out := cg.win.outShape(cg.n, cg.m, nsp); !sameShape(in[3], out) {
			return cg, fmt.Errorf("%s: input 3 (residual) has shape %v, want the output's shape %v", typ, in[3], out)
		}
		cg.hasResidual = true
	}
	if cg.act, err = readFusedAct(typ, p); err != nil {
		return cg, err
	}
	switch v := p.Int(opspec.FusedGlobalAveragePoolAttr, 0); v {
	case 0:
	case 1:
		cg.pool = true
	default:
		return cg, fmt.Errorf("%s: %s %d: want 0 or 1", typ, opspec.FusedGlobalAveragePoolAttr, v)
	}
	if p.Has(opspec.FusedMaxPoolPrefix + "kernel_shape") {
		if cg.pool {
			return cg, fmt.Errorf("%s: %s and %s* together: a Conv takes one pool", typ, opspec.FusedGlobalAveragePoolAttr, opspec.FusedMaxPoolPrefix)
		}
		op := poolOp{typ: fmt.Sprintf("%s (its max pool, attributes %s*)", typ, opspec.FusedMaxPoolPrefix), max: true}
		mp, err := op.geometry(prefixedParams{p, opspec.FusedMaxPoolPrefix}, [][]int{cg.win.outShape(cg.n, cg.m, nsp)})
		if err != nil {
			return cg, err
		}
		cg.mpool = &mp
	}
	if p.Has(opspec.OutputBatchStrideAttr) {
		per := cg.m * cg.win.out[0] * cg.win.out[1]
		if cg.pool {
			per = cg.m
		} else if cg.mpool != nil {
			per = cg.m * cg.mpool.win.out[0] * cg.mpool.win.out[1]
		}
		v := p.Int(opspec.OutputBatchStrideAttr, 0)
		if v < int64(per) || v > 1<<31-1 {
			return cg, fmt.Errorf("%s: %s %d: want at least the %d elements of one output image", typ, opspec.OutputBatchStrideAttr, v, per)
		}
		cg.yn = int(v)
	}
	return cg, nil
}

// define writes the geometry and the fused work as the #defines conv.cl and conv_gpu.cl
// read: shapes, window, HAS_BIAS, HAS_RESIDUAL and the activation.
func (g convGeom) define(d *defines) {
	d.int("N", g.n)
	d.int("C", g.c)
	d.int("H", g.in[0])
	d.int("W", g.in[1])
	d.int("M", g.m)
	d.int("G", g.g)
	d.int("CG", g.cg)
	d.int("MG", g.mg)
	g.win.define(d)
	// Elements from one output image to the next where not M*OH*OW, the kernels'
	// default (the residual is always contiguous).
	if g.yn != 0 {
		d.int("YN", g.yn)
	}
	g.defineEpilogue(d)
}

// defineEpilogue writes what a conv kernel does after its sums, without the shape:
// bias, residual, activation and the optional parameters they take.
func (g convGeom) defineEpilogue(d *defines) {
	d.bool("HAS_BIAS", g.hasBias)
	d.bool("HAS_RESIDUAL", g.hasResidual)
	// The optional parameters of every conv kernel's signature, after the weights:
	// x, w BIAS_ARG RES_ARG, y (see kernelArgs).
	d.raw("BIAS_ARG", optionalParamOf(g.hasBias, "bias", storageType(g.half)))
	d.raw("RES_ARG", optionalParamOf(g.hasResidual, "res", storageType(g.half)))
	// What the kernels run first to apply those parameters' offsets (see SetArgs).
	d.raw("OPTIONAL_OFFSETS", optionalOffset(g.hasBias, "bias")+optionalOffset(g.hasResidual, "res"))
	g.act.define(d)
}

// optionalParam is the text of an optional kernel parameter: a read-only global float
// pointer and its element offset (see SetArgs) after a comma, or nothing.
func optionalParam(present bool, name string) string {
	return optionalParamOf(present, name, "float")
}

// optionalParamOf is optionalParam with elements of type typ (DATA_T for a kernel whose
// storage a half plan chooses).
func optionalParamOf(present bool, name, typ string) string {
	if !present {
		return ""
	}
	return ", __global const " + typ + "* restrict " + name + ", int " + name + "_off"
}

// optionalOffset is the statement that moves an optional parameter to its offset.
func optionalOffset(present bool, name string) string {
	if !present {
		return ""
	}
	return name + " += " + name + "_off; "
}

// kernelArgs binds a conv kernel's arguments: x, the weights (input 1, or a packed copy),
// [bias], [residual], y.
func (g convGeom) kernelArgs(weights Arg) []Arg {
	args := []Arg{{Kind: ArgInput, Index: 0}, weights}
	if g.hasBias {
		args = append(args, Arg{Kind: ArgInput, Index: 2})
	}
	if g.hasResidual {
		args = append(args, Arg{Kind: ArgInput, Index: 3})
	}
	return append(args, Arg{Kind: ArgOutput, Index: 0})
}

func (o convOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if len(in) >= 2 && len(in[0]) == 5 {
		if err := checkCounts("Conv", in, nil, 2, 4, 0); err != nil {
			return nil, err
		}
		g, err := o.geometry3(paramsOr(p), in)
		if err != nil {
			return nil, err
		}
		return [][]int{g.outShape()}, nil
	}
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	if g.pool {
		return [][]int{window{out: [2]int{1, 1}}.outShape(g.n, g.m, g.nsp)}, nil
	}
	if g.mpool != nil {
		return [][]int{g.mpool.win.outShape(g.n, g.m, g.nsp)}, nil
	}
	return [][]int{g.win.outShape(g.n, g.m, g.nsp)}, nil
}

func (o convOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Conv", out, shapes); err != nil {
		return nil, err
	}
	if len(in[0]) == 5 {
		g3, _ := o.geometry3(p, in)
		return g3.plan(dev)
	}
	g, _ := o.geometry(p, in)
	if g.pool {
		if pooledBlocked(g, dev) {
			return pooledBlockedPlan(g, dev)
		}
		if pooledIn1x1(g, dev) {
			return cpu1x1Plan(g, heuristic1x1Tile(g, dev), dev)
		}
		return pooledAfterPlan(g, dev)
	}
	if g.mpool != nil {
		if plan, ok, err := cpuConvMaxPoolPlan(g, heuristicCPUTile(g, dev), dev); ok || err != nil {
			return plan, err
		}
		return maxPooledAfterPlan(g, dev)
	}
	return convPlan(g, dev)
}

// pooledIn1x1 says whether conv1x1's POOL_AVG epilogue runs a Conv that carries
// FusedGlobalAveragePoolAttr: a plain 2-D 1×1 convolution on a CPU device.
func pooledIn1x1(g convGeom, dev DeviceInfo) bool {
	return !dev.IsGPU && g.nsp == 2 && g.pointwise()
}

// pooledAfterPlan runs a Conv that carries FusedGlobalAveragePoolAttr where conv1x1 does
// not: its plain plan writes the planes into a scratch buffer, and globalpool.cl's
// global_avgpool then writes their means.
func pooledAfterPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	gap, err := kernelSource("globalpool.cl")
	if err != nil {
		return nil, err
	}
	planes := g.n * g.m
	size := g.win.out[0] * g.win.out[1]
	gl, lo := launchSize([]int{planes}, dev)
	return afterPlan(g, dev, gap, Launch{Kernel: "global_avgpool", Global: gl, Local: lo, Args: []Arg{
		{}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(planes)}, {Kind: ArgInt, Int: int32(size)},
	}})
}

// maxPooledAfterPlan runs a Conv that carries FusedMaxPoolPrefix's attributes where
// conv2d_maxpool does not: its plain plan writes the conv's output into a scratch buffer,
// and maxpool_after.cl then pools it.
func maxPooledAfterPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	var d defines
	g.mpool.defineFused(&d)
	src, err := d.program("maxpool_after.cl")
	if err != nil {
		return nil, err
	}
	planes := g.n * g.m
	gl, lo := launchSize([]int{g.mpool.win.out[1], g.mpool.win.out[0], planes}, dev)
	return afterPlan(g, dev, src, Launch{Kernel: "maxpool_after", Global: gl, Local: lo, Args: []Arg{
		{}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(planes)},
	}})
}

// afterPlan is the plain plan of g without its pool, writing into a scratch buffer, then
// pool: a launch of the kernel in source (appended to the conv's program, so its names
// must not clash with the conv's) whose first argument, left zero, becomes that buffer.
// It does not take OutputBatchStrideAttr.
func afterPlan(g convGeom, dev DeviceInfo, source string, pool Launch) (*Plan, error) {
	g.pool, g.mpool, g.yn = false, nil, 0
	plan, err := convPlan(g, dev)
	if err != nil {
		return nil, err
	}
	scratch := Arg{Kind: ArgScratch, Index: len(plan.Scratch)}
	plan.Scratch = append(plan.Scratch, 4*g.n*g.m*g.win.out[0]*g.win.out[1])
	for i := range plan.Launches {
		args := slices.Clone(plan.Launches[i].Args)
		for j, a := range args {
			if a.Kind == ArgOutput {
				args[j] = scratch
			}
		}
		plan.Launches[i].Args = args
	}
	plan.Source += "\n" + source
	pool.Args = slices.Clone(pool.Args)
	pool.Args[0] = scratch
	plan.Launches = append(plan.Launches, pool)
	plan.OutputBatchStride = 0
	return plan, nil
}

// convPlan plans a Conv without a folded pool for the device.
func convPlan(g convGeom, dev DeviceInfo) (*Plan, error) {
	// Depthwise: every output channel reads exactly one input plane, so a channel tile
	// would share no input loads; give each work-item one channel instead.
	depthwise := g.cg == 1 && g.g > 1
	if dev.IsGPU && !depthwise && g.nsp == 2 {
		// GPUs get the implicit GEMM with local-memory tiles (conv_gpu.cl).
		return convGPUPlan(g, dev)
	}
	if !dev.IsGPU && g.nsp == 2 {
		// CPUs get explicitly vectorised kernels: channel-vectorised register tiles
		// (conv_cpu.cl), and row-vectorised planes for depthwise layers.
		if depthwise {
			if plan, ok, err := cpuDepthwisePlan(g, dev); ok || err != nil {
				return plan, err
			}
			return directConvPlan(g, 4, 4, dev)
		}
		plans, err := cpuConvCandidatePlans(g, dev, 1)
		if err != nil {
			return nil, err
		}
		return plans[0], nil
	}
	return directConvPlan(g, 4, 4, dev)
}

// directConvPlan writes conv.cl's plan with a register tile of oct output channels ×
// pxt pixels per work-item (one channel for depthwise layers).
func directConvPlan(g convGeom, oct, pxt int, dev DeviceInfo) (*Plan, error) {
	depthwise := g.cg == 1 && g.g > 1
	oct = min(oct, g.mg)
	pxt = min(pxt, g.win.out[1])
	if depthwise {
		oct = 1
	}
	mb := ceilDiv(g.mg, oct)

	var d defines
	g.define(&d)
	d.int("OCT", oct)
	d.int("PXT", pxt)
	d.int("MB", mb)
	src, err := d.program("conv.cl")
	if err != nil {
		return nil, err
	}

	kernel := "conv2d"
	global := []int{ceilDiv(g.win.out[1], pxt), g.win.out[0], g.n * g.g * mb}
	if depthwise {
		kernel = "conv2d_dw"
		global[2] = g.n * g.m
	}
	args := g.kernelArgs(Arg{Kind: ArgInput, Index: 1})
	gl, lo := launchSize(global, dev)
	return &Plan{
		Source:            src,
		Launches:          []Launch{{Kernel: kernel, Global: gl, Local: lo, Args: args}},
		AliasInput:        -1,
		OutputBatchStride: g.yn,
	}, nil
}

func (o convOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, err := optionalTensors("Conv", in, 2, 3)
	if err != nil {
		return nil, err
	}
	want, err := o.OutputShapes(p, shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Conv", out, want); err != nil {
		return nil, err
	}
	if len(shapes[0]) == 5 {
		g3, _ := o.geometry3(p, shapes)
		return []*HostTensor{{Shape: cloneShape(want[0]), Data: g3.reference(in)}}, nil
	}
	g, _ := o.geometry(p, shapes)
	x, w := in[0].Data, in[1].Data
	H, W := g.in[0], g.in[1]
	KH, KW := g.win.k[0], g.win.k[1]
	OH, OW := g.win.out[0], g.win.out[1]
	y := make([]float32, g.n*g.m*OH*OW)
	for n := 0; n < g.n; n++ {
		for m := 0; m < g.m; m++ {
			grp := m / g.mg
			for oy := 0; oy < OH; oy++ {
				for ox := 0; ox < OW; ox++ {
					var s float64
					if g.hasBias {
						s = float64(in[2].Data[m])
					}
					for c := 0; c < g.cg; c++ {
						ic := grp*g.cg + c
						for ky := 0; ky < KH; ky++ {
							iy := oy*g.win.s[0] - g.win.pb[0] + ky*g.win.d[0]
							if iy < 0 || iy >= H {
								continue
							}
							for kx := 0; kx < KW; kx++ {
								ix := ox*g.win.s[1] - g.win.pb[1] + kx*g.win.d[1]
								if ix < 0 || ix >= W {
									continue
								}
								xv := x[((n*g.c+ic)*H+iy)*W+ix]
								wv := w[((m*g.cg+c)*KH+ky)*KW+kx]
								s += float64(xv) * float64(wv)
							}
						}
					}
					at := ((n*g.m+m)*OH+oy)*OW + ox
					if g.hasResidual {
						s += float64(in[3].Data[at])
					}
					y[at] = float32(g.act.apply(s))
				}
			}
		}
	}
	if g.mpool != nil {
		y = maxPoolPlanes(*g.mpool, y)
	}
	if g.pool {
		mean := make([]float32, g.n*g.m)
		for i := range mean {
			var s float64
			for _, v := range y[i*OH*OW : (i+1)*OH*OW] {
				s += float64(v)
			}
			mean[i] = float32(s / float64(OH*OW))
		}
		y = mean
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
