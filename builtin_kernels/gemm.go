package builtinkernels

import (
	"fmt"

	"github.com/clhost/clhost/internal/opspec"
)

func init() {
	Register("Gemm", gemmOp{})
	Register("MatMul", matmulOp{})
}

// gemmGeom is one (batched) matrix product as gemm.cl runs it.
type gemmGeom struct {
	m, n, k        int
	transA, transB bool
	hasC           bool
	csm, csn       int // C's strides along m and n, 0 where broadcast
	nb             int // batch count
	bd, asb, bsb   [4]int
	act            fusedAct // Gemm's fused activation; none for MatMul
	scale          float32  // gemm_cpu.cl's factor of the product; 0 or 1 for none
}

// maxBatchDims is how many batch dimensions gemm.cl indexes after merging.
const maxBatchDims = 4

func (g gemmGeom) plan(dev DeviceInfo) (*Plan, error) {
	tm, tn := min(4, g.m), min(4, g.n)
	// A GPU needs many work-items in flight to hide its memory latency: where 4×4 tiles
	// leave too few (small batched products, as attention's), smaller tiles give more.
	if dev.IsGPU {
		for tm*tn > 1 && ceilDiv(g.m, tm)*ceilDiv(g.n, tn)*g.nb < 512*max(dev.ComputeUnits, 1) {
			tm, tn = max(tm/2, 1), max(tn/2, 1)
		}
	}
	var d defines
	d.int("M", g.m)
	d.int("N", g.n)
	d.int("K", g.k)
	d.bool("TRANS_A", g.transA)
	d.bool("TRANS_B", g.transB)
	d.bool("HAS_C", g.hasC)
	d.int("CSM", g.csm)
	d.int("CSN", g.csn)
	g.act.define(&d)
	d.int("TM", tm)
	d.int("TN", tn)
	d.int("NB", g.nb)
	g.batchDefines(&d)
	src, err := d.program("gemm.cl")
	if err != nil {
		return nil, err
	}
	args := g.args()
	gl, lo := launchSize([]int{ceilDiv(g.n, tn), ceilDiv(g.m, tm), g.nb}, dev)
	return &Plan{
		Source:     src,
		Launches:   []Launch{{Kernel: "gemm", Global: gl, Local: lo, Args: args}},
		AliasInput: -1,
	}, nil
}

// batchDefines declares the batch dimensions (BD1…) and A's and B's batch strides
// (ASB…, BSB…) that gemm.cl and gemm_cpu.cl index batches with.
func (g gemmGeom) batchDefines(d *defines) {
	for i := 1; i < maxBatchDims; i++ {
		d.int(fmt.Sprintf("BD%d", i), g.bd[i])
	}
	for i := 0; i < maxBatchDims; i++ {
		d.int(fmt.Sprintf("ASB%d", i), g.asb[i])
		d.int(fmt.Sprintf("BSB%d", i), g.bsb[i])
	}
}

// args is the kernels' arguments: A, B, C where there is one, the output.
func (g gemmGeom) args() []Arg {
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}}
	if g.hasC {
		args = append(args, Arg{Kind: ArgInput, Index: 2})
	}
	return append(args, Arg{Kind: ArgOutput, Index: 0})
}

// cpuVecPlan plans gemm_cpu.cl's gemm_vec for a batched MatMul on CPUs (A and B not
// transposed, C absent or a bias [N]): TM rows of A by NV vectors of B's columns per
// work-item, with two vectors where N fills them.
func (g gemmGeom) cpuVecPlan(dev DeviceInfo) (*Plan, error) {
	vec := dev.FloatVectorWidth
	if vec != 4 && vec != 8 && vec != 16 {
		vec = 8
	}
	vec = max(min(vec, nextPow2(g.n)), 4)
	nv := 1
	if g.n >= 2*vec && vec < 16 {
		nv = 2
	}
	tm := min(4, g.m)
	var d defines
	d.int("M", g.m)
	d.int("N", g.n)
	d.int("K", g.k)
	d.bool("HAS_C", g.hasC)
	if g.scale != 0 && g.scale != 1 {
		d.raw("SCALE", clFloat(g.scale))
	}
	g.act.define(&d)
	d.int("VEC", vec)
	d.int("NV", nv)
	d.int("TM", tm)
	d.int("NB", g.nb)
	g.batchDefines(&d)
	src, err := d.program("gemm_cpu.cl")
	if err != nil {
		return nil, err
	}
	args := g.args()
	global := []int{ceilDiv(g.n, vec*nv), ceilDiv(g.m, tm), g.nb}
	return &Plan{
		Source:     src,
		Launches:   []Launch{cpuLaunch("gemm_vec", global, g.nb*g.m*g.n*g.k, args, dev)},
		AliasInput: -1,
	}, nil
}

// gemmOp is ONNX Gemm: Y = alpha·A'·B' + beta·C, A' = transA ? Aᵀ : A (M×K),
// B' = transB ? Bᵀ : B (K×N), C optional and broadcast to M×N; with a fused activation
// (fused.go), Y = act(alpha·A'·B' + beta·C).
type gemmOp struct{}

func (gemmOp) geometry(p Params, in [][]int) (gemmGeom, error) {
	const typ = "Gemm"
	var g gemmGeom
	if err := checkCounts(typ, in, nil, 2, 3, 0); err != nil {
		return g, err
	}
	for _, name := range []string{"transA", "transB"} {
		if v := p.Int(name, 0); v != 0 && v != 1 {
			return g, fmt.Errorf("%s: %s %d: want 0 or 1", typ, name, v)
		}
	}
	a, b := in[0], in[1]
	if len(a) != 2 || len(b) != 2 {
		return g, fmt.Errorf("%s: A %v and B %v must both be 2-D", typ, a, b)
	}
	g.transA, g.transB = p.Int("transA", 0) == 1, p.Int("transB", 0) == 1
	g.m, g.k = a[0], a[1]
	if g.transA {
		g.m, g.k = a[1], a[0]
	}
	kb, n := b[0], b[1]
	if g.transB {
		kb, n = b[1], b[0]
	}
	if kb != g.k {
		return g, fmt.Errorf("%s: inner dimensions differ: A %v (transA %v) gives K = %d, B %v (transB %v) gives K = %d", typ, a, g.transA, g.k, b, g.transB, kb)
	}
	g.n = n
	var err error
	if g.act, err = readFusedAct(typ, p); err != nil {
		return g, err
	}
	g.nb = 1
	g.bd = [4]int{1, 1, 1, 1}
	if len(in) == 3 {
		c := in[2]
		if len(c) > 2 {
			return g, fmt.Errorf("%s: C has shape %v: want rank 0 to 2, broadcastable to [%d %d]", typ, c, g.m, g.n)
		}
		bs, err := broadcastShapes(typ, []int{g.m, g.n}, c)
		if err != nil || !sameShape(bs, []int{g.m, g.n}) {
			return g, fmt.Errorf("%s: C has shape %v, which does not broadcast to [%d %d]", typ, c, g.m, g.n)
		}
		st := broadcastStrides(c, []int{g.m, g.n})
		g.hasC, g.csm, g.csn = true, st[0], st[1]
	}
	return g, nil
}

// fullyConnected says whether a Gemm is a fully connected layer, alpha·A·B' + beta·C
// with no batch, no transposed A, alpha 1 and C absent or a per-column bias with beta 1:
// what the conv kernels run (gemmAsConv).
func fullyConnected(g gemmGeom, p Params) bool {
	if g.nb != 1 || g.transA || p.Float("alpha", 1) != 1 {
		return false
	}
	return !g.hasC || p.Float("beta", 1) == 1 && g.csm == 0 && g.csn == 1
}

func (o gemmOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	g, err := o.geometry(paramsOr(p), in)
	if err != nil {
		return nil, err
	}
	return [][]int{{g.m, g.n}}, nil
}

func (o gemmOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	p = paramsOr(p)
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Gemm", out, shapes); err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, in)
	if dev.IsGPU {
		if plan, ok, err := gemmGPUPlan(g, p, dev); ok || err != nil {
			return plan, err
		}
	} else if fullyConnected(g, p) {
		// CPUs: a fully connected layer is a 1×1 convolution over M images: conv_cpu.cl
		// packs B once (transposing a K×N one) and runs vectors of output channels,
		// where gemm.cl would run scalars.
		return cpuFCPlan(gemmAsConv(g), !g.transB, dev)
	}
	plan, err := g.plan(dev)
	if err != nil {
		return nil, err
	}
	alpha, beta := p.Float("alpha", 1), p.Float("beta", 1)
	l := &plan.Launches[0]
	l.Args = append(l.Args, Arg{Kind: ArgFloat, Float: alpha}, Arg{Kind: ArgFloat, Float: beta})
	return plan, nil
}

func (o gemmOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	p = paramsOr(p)
	shapes, _, err := referenceShapes("Gemm", o, p, in, out)
	if err != nil {
		return nil, err
	}
	g, _ := o.geometry(p, shapes)
	alpha, beta := float64(p.Float("alpha", 1)), float64(p.Float("beta", 1))
	a, b := in[0], in[1]
	aAt := func(m, k int) float64 {
		if g.transA {
			return float64(a.Data[k*g.m+m])
		}
		return float64(a.Data[m*g.k+k])
	}
	bAt := func(k, n int) float64 {
		if g.transB {
			return float64(b.Data[n*g.k+k])
		}
		return float64(b.Data[k*g.n+n])
	}
	y := make([]float32, g.m*g.n)
	for m := 0; m < g.m; m++ {
		for n := 0; n < g.n; n++ {
			var s float64
			for k := 0; k < g.k; k++ {
				s += aAt(m, k) * bAt(k, n)
			}
			v := alpha * s
			if g.hasC {
				c := in[2]
				// C broadcasts by numpy's rule: a size-1 (or missing) dimension repeats.
				ci := 0
				switch len(c.Shape) {
				case 1:
					if c.Shape[0] != 1 {
						ci = n
					}
				case 2:
					if c.Shape[0] != 1 {
						ci = m * c.Shape[1]
					}
					if c.Shape[1] != 1 {
						ci += n
					}
				}
				v += beta * float64(c.Data[ci])
			}
			y[m*g.n+n] = float32(g.act.apply(v))
		}
	}
	return []*HostTensor{{Shape: []int{g.m, g.n}, Data: y}}, nil
}

// matmulOp is ONNX MatMul, numpy's matmul: [..., M, K] × [..., K, N] with the leading
// (batch) dimensions broadcast; a 1-D A is a row [1, K] and a 1-D B a column [K, 1],
// and that dimension is dropped from the result. An optional input 2, a bias [N] added
// along the last axis, is the following Add that internal/graph's fusion folds in (a
// Linear layer as PyTorch exports it); it needs B of rank 2 or more.
type matmulOp struct{}

type matmulShape struct {
	geom  gemmGeom
	out   []int
	batch []int // the output's batch dimensions
	flat  bool  // B is one matrix for every batch: A's rows run as one [batch·M, K] matrix
}

func (matmulOp) shape(in [][]int) (matmulShape, error) {
	const typ = "MatMul"
	var r matmulShape
	if err := checkCounts(typ, in, nil, 2, 3, 0); err != nil {
		return r, err
	}
	a, b := in[0], in[1]
	if len(a) == 0 || len(b) == 0 {
		return r, fmt.Errorf("%s: A %v and B %v must have rank 1 or more", typ, a, b)
	}
	a2, b2 := a, b
	if len(a) == 1 {
		a2 = []int{1, a[0]}
	}
	if len(b) == 1 {
		b2 = []int{b[0], 1}
	}
	m, k := a2[len(a2)-2], a2[len(a2)-1]
	kb, n := b2[len(b2)-2], b2[len(b2)-1]
	if k != kb {
		return r, fmt.Errorf("%s: inner dimensions differ: A %v has K = %d, B %v has K = %d", typ, a, k, b, kb)
	}
	ab, bb := a2[:len(a2)-2], b2[:len(b2)-2]
	batch, err := broadcastShapes(typ, ab, bb)
	if err != nil {
		return r, fmt.Errorf("%s: batch dimensions of A %v and B %v do not broadcast", typ, a, b)
	}
	r.batch = batch
	r.out = cloneShape(batch)
	if len(a) > 1 {
		r.out = append(r.out, m)
	}
	if len(b) > 1 {
		r.out = append(r.out, n)
	}
	if err := checkShape(typ, "output 0", r.out); err != nil {
		return r, err
	}
	// Batch strides in elements: each batch of A is one M×K matrix.
	as := broadcastStrides(ab, batch)
	bs := broadcastStrides(bb, batch)
	for i := range as {
		as[i] *= m * k
		bs[i] *= k * n
	}
	dims, st := coalesce(batch, as, bs)
	if len(dims) > maxBatchDims {
		return r, fmt.Errorf("%s: A %v and B %v need %d batch index dimensions after merging, the kernel handles %d", typ, a, b, len(dims), maxBatchDims)
	}
	g := gemmGeom{m: m, n: n, k: k, nb: numel(batch), bd: [4]int{1, 1, 1, 1}}
	off := maxBatchDims - len(dims)
	for i := range dims {
		g.bd[off+i], g.asb[off+i], g.bsb[off+i] = dims[i], st[0][i], st[1][i]
	}
	if len(in) == 3 {
		if len(b) < 2 || len(in[2]) != 1 || in[2][0] != n {
			return r, fmt.Errorf("%s: bias %v must be [%d] (N of B %v, which needs rank 2 or more)", typ, in[2], n, b)
		}
		g.hasC, g.csm, g.csn = true, 0, 1
	}
	r.geom = g
	r.flat = len(a) >= 2 && numel(bb) == 1
	return r, nil
}

// flatGemm is a MatMul whose B is one matrix as a plain Gemm over A's rows: A's batch
// dimensions are contiguous, and so are the output's.
func (s matmulShape) flatGemm() gemmGeom {
	g := s.geom
	g.m *= g.nb
	g.nb, g.bd, g.asb, g.bsb = 1, [4]int{1, 1, 1, 1}, [4]int{}, [4]int{}
	return g
}

func (o matmulOp) OutputShapes(_ Params, in [][]int) ([][]int, error) {
	s, err := o.shape(in)
	if err != nil {
		return nil, err
	}
	return [][]int{s.out}, nil
}

// matmulScale is the MatMul's opspec.MatMulScaleAttr, 1 when absent.
func matmulScale(p Params) float32 { return paramsOr(p).Float(opspec.MatMulScaleAttr, 1) }

func (o matmulOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	s, err := o.shape(in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("MatMul", out, [][]int{s.out}); err != nil {
		return nil, err
	}
	scale := matmulScale(p)
	if s.flat {
		// A Linear layer: the tiled kernels of a fully connected Gemm, B packed once
		// on CPUs. A scaled product takes the general kernels below (conv_cpu.cl has
		// no scale, and gemmGPUPlan declines an alpha).
		fc := s.flatGemm()
		if dev.IsGPU {
			if plan, ok, err := gemmGPUPlan(fc, Attrs{"alpha": scale}, dev); ok || err != nil {
				return plan, err
			}
		} else if scale == 1 {
			return cpuFCPlan(gemmAsConv(fc), true, dev)
		}
	}
	if !dev.IsGPU {
		s.geom.scale = scale
		return s.geom.cpuVecPlan(dev)
	}
	plan, err := s.geom.plan(dev)
	if err != nil {
		return nil, err
	}
	l := &plan.Launches[0]
	l.Args = append(l.Args, Arg{Kind: ArgFloat, Float: scale}, Arg{Kind: ArgFloat, Float: 1})
	return plan, nil
}

// Candidates implements Tunable for MatMuls the implicit GEMM runs (see gemmOp's).
func (o matmulOp) Candidates(p Params, in, out [][]int, dev DeviceInfo) ([]*Plan, error) {
	plan, err := o.Plan(p, in, out, dev)
	if err != nil {
		return nil, err
	}
	if !dev.IsGPU || !implicitGemmKernel(plan) || matmulScale(p) != 1 {
		return []*Plan{plan}, nil
	}
	s, _ := o.shape(in)
	return gemmCandidates(gemmAsConv(s.flatGemm()), true, dev)
}

func (o matmulOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors("MatMul", in)
	if err != nil {
		return nil, err
	}
	s, err := o.shape(shapes)
	if err != nil {
		return nil, err
	}
	if err := checkOut("MatMul", out, [][]int{s.out}); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	M, N, K := s.geom.m, s.geom.n, s.geom.k
	scale := matmulScale(p)
	// matrix finds the start of the matrix of t for output batch index bi: t's batch
	// dimensions align at the right with the output's, size-1 ones repeating.
	matrix := func(t *HostTensor, bi []int, size int) int {
		tb := t.Shape[:max(0, len(t.Shape)-2)]
		off := 0
		for j, d := range tb {
			k := bi[len(bi)-len(tb)+j]
			if d == 1 {
				k = 0
			}
			off = off*d + k
		}
		return off * size
	}
	nb := numel(s.batch)
	y := make([]float32, nb*M*N)
	bi := make([]int, len(s.batch))
	for z := 0; z < nb; z++ {
		r := z
		for j := len(bi) - 1; j >= 0; j-- {
			bi[j] = r % s.batch[j]
			r /= s.batch[j]
		}
		ao, bo := matrix(a, bi, M*K), matrix(b, bi, K*N)
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				var acc float64
				for k := 0; k < K; k++ {
					acc += float64(a.Data[ao+m*K+k]) * float64(b.Data[bo+k*N+n])
				}
				acc *= float64(scale)
				if len(in) == 3 {
					acc += float64(in[2].Data[n])
				}
				y[(z*M+m)*N+n] = float32(acc)
			}
		}
	}
	return []*HostTensor{{Shape: cloneShape(s.out), Data: y}}, nil
}
