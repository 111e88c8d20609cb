package builtinkernels

import (
	"fmt"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// blockedShape is the storage shape of an (N, C, H, W) tensor in blocks of b channels.
func blockedShape(nchw []int, b int) []int {
	return []int{nchw[0], ceilDiv(nchw[1], b), nchw[2] * nchw[3], b}
}

// heuristicBlockedTile is the tile BenchmarkBlocked1x1CPU runs a layer with first: blocks of the device's vector
// width (8 where it has none of 8 or 16), and 24 accumulators of AVX-512's 32 registers
// in the widest tile the output blocks fill: 3 blocks × 8 pixels, else 2 × 12, else one
// block of 14 pixels (then 14 broadcasts per weight vector already keep the load ports as
// busy as the multiply-adds). AVX2's 16 registers take 2 × 6 or 1 × 12.
func heuristicBlockedTile(g convGeom, dev DeviceInfo) blockedTile {
	b := dev.FloatVectorWidth
	if b != 8 && b != 16 {
		b = 8
	}
	mb := ceilDiv(g.m, b)
	if b == 8 {
		if mb >= 2 {
			return blockedTile{b, 2, 6}
		}
		return blockedTile{b, 1, 12}
	}
	switch {
	case mb >= 3:
		return blockedTile{b, 3, 8}
	case mb == 2:
		return blockedTile{b, 2, 12}
	}
	return blockedTile{b, 1, 14}
}

// blockChannels stores an (N, C, H, W) tensor's values in blocks of b channels.
func blockChannels(t *HostTensor, b int) *HostTensor {
	n, c, hw := t.Shape[0], t.Shape[1], t.Shape[2]*t.Shape[3]
	shape := blockedShape(t.Shape, b)
	out := &HostTensor{Shape: shape, Data: make([]float32, numel(shape))}
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for p := 0; p < hw; p++ {
				out.Data[((i*shape[1]+ch/b)*hw+p)*b+ch%b] = t.Data[(i*c+ch)*hw+p]
			}
		}
	}
	return out
}

// TestConv1x1BlockedCPUPlan runs conv1x1_blk against the CPU reference (blocked on the
// host where the plan's output is blocked): channel counts that leave partial blocks
// (whose lanes past M must stay zero under an activation that maps 0 elsewhere), planes
// smaller than a tile and ones a tile does not divide, several output blocks per tile,
// bias, residual, activation and a fused global average pool, at vector widths 8 and
// 16, with each of input and output blocked or NCHW.
func TestConv1x1BlockedCPUPlan(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	pool := Attrs{opspec.FusedActivationAttr: opspec.ActRelu, opspec.FusedGlobalAveragePoolAttr: 1}
	cases := []struct {
		n, c, m, h, w int
		attrs         Attrs
		bias, res     bool
	}{
		{2, 24, 40, 5, 7, Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, true, false},
		{1, 16, 16, 3, 3, Attrs{}, false, false},
		{3, 37, 20, 6, 6, Attrs{opspec.FusedActivationAttr: opspec.ActSigmoid}, true, true},
		{2, 64, 16, 13, 13, Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, true, false},
		{1, 8, 72, 9, 11, Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(0.5)}, true, true},
		{2, 40, 50, 13, 13, pool, true, false},
		{3, 17, 9, 2, 3, pool, true, false},
	}
	tiles := []blockedTile{{16, 1, 12}, {16, 2, 6}, {16, 4, 5}, {8, 3, 7}, {8, 1, 30}, {16, 3, 8}}
	ios := []blockedIO{{}, {nchwIn: true}, {nchwOut: true}, {true, true, false}, {true, false, true}, {true, true, true}}
	sw := newSweep(t, len(tiles), 2)
	for ci, tc := range cases {
		in := shapes(sh(tc.n, tc.c, tc.h, tc.w), sh(tc.m, tc.c, 1, 1))
		if tc.bias || tc.res {
			in = append(in, sh(tc.m))
		}
		var omit []int
		if !tc.bias && tc.res {
			omit = []int{2}
		}
		if tc.res {
			in = append(in, sh(tc.n, tc.m, tc.h, tc.w))
		}
		out := shapes(sh(tc.n, tc.m, tc.h, tc.w))
		pooled := tc.attrs[opspec.FusedGlobalAveragePoolAttr] != nil
		if pooled {
			out = shapes(sh(tc.n, tc.m, 1, 1))
		}
		c := opCase{name: fmt.Sprintf("%d_%d_%d_%dx%d", tc.n, tc.c, tc.m, tc.h, tc.w), attrs: tc.attrs, in: in, omit: omit, out: out}
		ins := c.inputs()
		want, err := convOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range sw.pick(ci) {
			tile := tiles[ti]
			io := ios[(ci+ti)%len(ios)]
			name := fmt.Sprintf("%s tile %+v %+v", c.name, tile, io)
			bins := append([]*HostTensor(nil), ins...)
			if !io.nchwIn {
				bins[0] = blockChannels(ins[0], tile.blockChannels)
			}
			if tc.res && !io.nchwOut {
				bins[3] = blockChannels(ins[3], tile.blockChannels)
			}
			plan, err := cpu1x1BlockedPlan(geo, tile, io, env.dev)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			w := want[0]
			if !io.nchwOut && !pooled {
				w = blockChannels(want[0], tile.blockChannels)
			}
			got, err := RunPlan(env.ctx, q, plan, bins, [][]int{w.Shape})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			compare(t, name, got[0], w)
		}
	}
}

// TestPooledBlockedChoice checks which Convs with a fused global average pool run as
// conv1x1_blk (pooledBlocked): the classifier heads of SqueezeNet and MobileNetV2 on
// AVX-512 and AVX2 CPUs, and neither a GPU, nor a layer with groups, a residual, few
// channels, or a plane outside 12–256 pixels. TestConv1x1PooledCPUPlan runs the chosen
// plans against the reference.
func TestPooledBlockedChoice(t *testing.T) {
	cpu := DeviceInfo{ComputeUnits: 16, MaxWorkGroupSize: 4096, FloatVectorWidth: 16}
	avx2 := cpu
	avx2.FloatVectorWidth = 8
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024, FloatVectorWidth: 1}
	pool := Attrs{opspec.FusedActivationAttr: opspec.ActRelu, opspec.FusedGlobalAveragePoolAttr: 1}
	head := func(c, m, hw int) [][]int { return shapes(sh(16, c, hw, hw), sh(m, c, 1, 1), sh(m)) }
	cases := []struct {
		name  string
		attrs Attrs
		in    [][]int
		dev   DeviceInfo
		want  bool
	}{
		{"squeezenet head", pool, head(512, 1000, 13), cpu, true},
		{"mobilenet head", pool, head(320, 1280, 7), cpu, true},
		{"avx2 head", pool, head(512, 1000, 13), avx2, true},
		{"gpu", pool, head(512, 1000, 13), gpu, false},
		{"groups", Attrs{opspec.FusedGlobalAveragePoolAttr: 1, "group": 2}, shapes(sh(16, 512, 13, 13), sh(1000, 256, 1, 1)), cpu, false},
		{"residual", pool, shapes(sh(16, 512, 13, 13), sh(1000, 512, 1, 1), sh(1000), sh(16, 1000, 13, 13)), cpu, false},
		{"few input channels", pool, head(32, 1000, 13), cpu, false},
		{"few output channels", pool, head(512, 24, 13), cpu, false},
		{"small plane", pool, head(512, 1000, 3), cpu, false},
		{"large plane", pool, head(512, 1000, 17), cpu, false},
		{"unpooled", Attrs{}, head(512, 1000, 13), cpu, false},
	}
	for _, c := range cases {
		g, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := pooledBlocked(g, c.dev); got != c.want {
			t.Errorf("%s: pooledBlocked %v, want %v", c.name, got, c.want)
		}
		if !c.want || !g.pool {
			continue
		}
		out, err := convOp{}.OutputShapes(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := convOp{}.Plan(c.attrs, c.in, out, c.dev)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if last := plan.Launches[len(plan.Launches)-1].Kernel; last != "conv1x1_blk" || len(plan.Launches) != 1 {
			t.Errorf("%s: the plan runs %d launches, the last %s; want conv1x1_blk alone", c.name, len(plan.Launches), last)
		}
	}
}

// BenchmarkBlocked1x1CPU runs conv1x1_blk beside the NCHW plan of the same layer
// ("plan") over SqueezeNet 1.1's 1×1 layers, MobileNetV2's pointwise ones and both
// networks' pooled classifier heads at batch 16: "blk" on blocked tensors (as a network
// stored blocked would run it), "reorder" with its input reordered first and its output
// stored NCHW (two launches, in an NCHW network), "inplace" reading the NCHW input where
// it lies and storing NCHW (one launch, in an NCHW network).
func BenchmarkBlocked1x1CPU(b *testing.B) {
	env := deviceEnvB(b)
	type layer struct {
		c, m, hw int
		pool     bool
	}
	layers := []layer{
		{128, 16, 55, false}, {16, 64, 55, false}, {256, 32, 27, false}, {32, 128, 27, false}, {384, 48, 13, false}, {512, 64, 13, false}, {64, 256, 13, false}, {512, 1000, 13, true},
		{144, 24, 56, false}, {24, 144, 56, false}, {192, 32, 28, false}, {32, 192, 28, false}, {576, 96, 14, false}, {96, 576, 14, false}, {960, 160, 7, false}, {320, 1280, 7, true},
	}
	for _, l := range layers {
		attrs := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
		out := shapes(sh(16, l.m, l.hw, l.hw))
		if l.pool {
			attrs[opspec.FusedGlobalAveragePoolAttr] = 1
			out = shapes(sh(16, l.m, 1, 1))
		}
		c := opCase{attrs: attrs, in: shapes(sh(16, l.c, l.hw, l.hw), sh(l.m, l.c, 1, 1), sh(l.m)), out: out}
		geo, plans := ownConvPlan(b, env.dev, c)
		name := fmt.Sprintf("%d_%d_%d", l.c, l.m, l.hw)
		if l.pool {
			name += "_pool"
		}
		flops := 2.0 * float64(16*l.c*l.m*l.hw*l.hw)
		ins := c.inputs()
		benchPlans(b, env, name, plans, ins, c.out, flops)
		best := heuristicBlockedTile(geo, env.dev)
		for i, t := range []blockedTile{best, {16, 1, 14}, {16, 2, 12}, {16, 4, 6}} {
			if i > 0 && (ceilDiv(l.m, t.blockChannels) < t.tileBlocks || t == best) {
				continue
			}
			ios := []struct {
				name string
				io   blockedIO
			}{{"inplace", blockedIO{true, true, true}}}
			if i == 0 {
				ios = append(ios, struct {
					name string
					io   blockedIO
				}{"blk", blockedIO{}}, struct {
					name string
					io   blockedIO
				}{"reorder", blockedIO{true, true, false}})
			}
			for _, v := range ios {
				p, err := cpu1x1BlockedPlan(geo, t, v.io, env.dev)
				if err != nil {
					b.Fatal(err)
				}
				bins := append([]*HostTensor(nil), ins...)
				o := c.out
				if !v.io.nchwIn {
					bins[0] = blockChannels(ins[0], t.blockChannels)
				}
				if !v.io.nchwOut && !l.pool {
					o = [][]int{blockedShape(c.out[0], t.blockChannels)}
				}
				benchPlans(b, env, name, []namedPlan{{fmt.Sprintf("%s%dx%d", v.name, t.tileBlocks, t.tilePixels), p}}, bins, o, flops)
			}
		}
	}
}
