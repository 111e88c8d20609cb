package builtinkernels

import (
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// mmaTolerance is the relative error allowed of tensor-core results: tf32 and f16 keep
// 10 mantissa bits, so each product is off by at most about 2·2⁻¹¹ of its magnitude.
// The bound is taken against Σ|w·x| (mmaScale), which no correct sum can exceed and
// which a wrong fragment index (a whole product misplaced) exceeds at once.
func mmaTolerance(prec Precision) float64 {
	if prec == PrecisionFP16 {
		return 1e-2
	}
	return 2e-3
}

// mmaDevice is the device the tensor-core tests plan for: the test device's limits, and
// MMA (PTX rather than the emulation) where it is an NVIDIA GPU, so that the same tests
// run the real instructions on the GPU machine.
func mmaDevice(env *testEnv) DeviceInfo {
	return DeviceInfo{IsGPU: true, ComputeUnits: max(env.dev.ComputeUnits, 1), MaxWorkGroupSize: env.dev.MaxWorkGroupSize,
		LocalMemBytes: env.dev.LocalMemBytes, MMA: NVIDIAGPU(env.ctx.Device)}
}

// mmaScale is the reference run on |x|, |w|, |bias|, |residual| with no activation:
// per output element, the sum of the magnitudes of what was added.
func mmaScale(t *testing.T, op Op, attrs Attrs, ins []*HostTensor, out [][]int) *HostTensor {
	t.Helper()
	abs := make([]*HostTensor, len(ins))
	for i, in := range ins {
		if in == nil {
			continue
		}
		d := make([]float32, len(in.Data))
		for j, v := range in.Data {
			d[j] = float32(math.Abs(float64(v)))
		}
		abs[i] = &HostTensor{Shape: in.Shape, Data: d}
	}
	plain := maps.Clone(attrs)
	delete(plain, opspec.FusedActivationAttr)
	delete(plain, opspec.FusedMinAttr)
	delete(plain, opspec.FusedMaxAttr)
	s, err := op.Reference(plain, abs, out)
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}

// compareMMA checks |got - want| ≤ tol·scale + 1e-6 for every element.
func compareMMA(t *testing.T, what string, got, want, scale *HostTensor, tol float64) {
	t.Helper()
	if len(got.Data) != len(want.Data) {
		t.Fatalf("%s: %d values, want %d", what, len(got.Data), len(want.Data))
	}
	bad, worst := 0, 0.0
	for i := range want.Data {
		d := math.Abs(float64(got.Data[i]) - float64(want.Data[i]))
		lim := tol*float64(scale.Data[i]) + 1e-6
		if math.IsNaN(d) || d > lim {
			if bad < 5 {
				t.Errorf("%s: element %d (index %v): got %v, want %v (allowed ±%.3g)", what, i, unravel(i, want.Shape), got.Data[i], want.Data[i], lim)
			}
			bad++
		}
		if s := float64(scale.Data[i]); s > 0 {
			worst = max(worst, d/s)
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want.Data))
	} else {
		t.Logf("%s: worst error %.2g of Σ|w·x|", what, worst)
	}
}

// mmaConvCases cover the shapes the fragment and staging logic must get right: 1×1 and
// 3×3 windows, strides 1 and 2, padding, odd channel counts (K and M not multiples of
// any tile), K that runs tap-major in one precision and not in the other, groups, a
// large window over 3 channels, batch 1 and 16, fused bias, residual and activation.
var mmaConvCases = []opCase{
	{name: "1x1 odd channels b1", attrs: Attrs{}, in: shapes(sh(1, 37, 9, 7), sh(45, 37, 1, 1), sh(45)), out: shapes(sh(1, 45, 9, 7))},
	{name: "3x3 pad1 b16 relu", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActRelu},
		in: shapes(sh(16, 19, 6, 5), sh(40, 19, 3, 3), sh(40)), out: shapes(sh(16, 40, 6, 5))},
	{name: "3x3 s2 pad1 tap-major", attrs: Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}},
		in: shapes(sh(2, 32, 9, 9), sh(24, 32, 3, 3), sh(24)), out: shapes(sh(2, 24, 5, 5))},
	{name: "3x3 asym pad s2x1", attrs: Attrs{"pads": []int{2, 0, 1, 2}, "strides": []int{2, 1}},
		in: shapes(sh(1, 16, 7, 8), sh(33, 16, 3, 3), sh(33)), out: shapes(sh(1, 33, 4, 8))},
	{name: "7x7 s2 p3 c3", attrs: Attrs{"pads": []int{3, 3, 3, 3}, "strides": []int{2, 2}},
		in: shapes(sh(1, 3, 17, 15), sh(64, 3, 7, 7), sh(64)), out: shapes(sh(1, 64, 9, 8))},
	{name: "1x1 s2 residual nobias b16", attrs: Attrs{"strides": []int{2, 2}}, omit: []int{2},
		in: shapes(sh(16, 24, 7, 7), sh(48, 24, 1, 1), nil, sh(16, 48, 4, 4)), out: shapes(sh(16, 48, 4, 4))},
	{name: "group2 dil2", attrs: Attrs{"group": 2, "dilations": []int{2, 2}, "pads": []int{0, 1, 2, 1}},
		in: shapes(sh(1, 8, 9, 9), sh(12, 4, 3, 3), sh(12)), out: shapes(sh(1, 12, 7, 7))},
	{name: "3x3 pad1 b16 deep", attrs: Attrs{"pads": []int{1, 1, 1, 1}, opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: float32(0), opspec.FusedMaxAttr: float32(6)},
		in: shapes(sh(16, 64, 4, 4), sh(72, 64, 3, 3), sh(72), sh(16, 72, 4, 4)), out: shapes(sh(16, 72, 4, 4))},
}

// TestConvMMA runs the tensor-core conv in both precisions, over every tile and with
// and without a K split, against the CPU reference: on PoCL through the emulation of
// the mma fragments (the same lane mapping the PTX path loads by), on an NVIDIA GPU
// through mma.sync itself.
func TestConvMMA(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	dev := mmaDevice(env)
	ran := map[mmaTile]bool{}
	for ci, c := range mmaConvCases {
		ins := c.inputs()
		want, err := convOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		scale := mmaScale(t, convOp{}, c.attrs, ins, c.out)
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []Precision{PrecisionTF32, PrecisionFP16} {
			for v := 0; v < 2; v++ {
				tile := mmaTiles[(2*ci+v+int(prec))%len(mmaTiles)]
				if !tile.fits(dev) {
					continue
				}
				split := 1 + 2*((ci+v)%2)
				plan, err := mmaTiled(geo, false, tile, split, prec, dev)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got, err := RunPlan(env.ctx, q, plan, placeholders(t, plan, ins, c.omit), c.out)
				if err != nil {
					t.Fatalf("%s %v tile %v: %v", c.name, prec, tile, err)
				}
				ran[tile] = true
				compareMMA(t, fmt.Sprintf("%s %v tile %v split %d (%d launches)", c.name, prec, tile, split, len(plan.Launches)), got[0], want[0], scale, mmaTolerance(prec))
			}
		}
	}
	for _, tile := range mmaTiles {
		if !tile.valid() {
			t.Errorf("tile %v is not valid for conv_mma.cl", tile)
		}
		if !ran[tile] && tile.fits(dev) {
			t.Errorf("tile %v never ran", tile)
		}
	}
}

// TestGemmMMA: fully connected layers on tensor cores, weights N × K (transB) and K × N,
// through the plans Gemm's Plan and Candidates give a device with MMA at each precision.
func TestGemmMMA(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	cases := []opCase{
		{name: "linear transB b16", attrs: Attrs{"transB": 1}, in: shapes(sh(16, 100), sh(40, 100), sh(40)), out: shapes(sh(16, 40))},
		{name: "kn relu", attrs: Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in: shapes(sh(67, 70), sh(70, 50), sh(50)), out: shapes(sh(67, 50))},
	}
	for _, c := range cases {
		ins := c.inputs()
		want, err := gemmOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatal(err)
		}
		scale := mmaScale(t, gemmOp{}, c.attrs, ins, c.out)
		for _, prec := range []Precision{PrecisionTF32, PrecisionFP16} {
			dev := mmaDevice(env)
			// The candidates are offered only where the device took the probe; the
			// emulation stands in for it here, with MMA off in the plan it writes.
			dev.Precision = prec
			geo, _ := gemmOp{}.geometry(c.attrs, c.in)
			plans, err := mmaCandidates(gemmAsConv(geo), !geo.transB, dev)
			if err != nil {
				t.Fatal(err)
			}
			for i, plan := range plans[:min(2, len(plans))] {
				got, err := RunPlan(env.ctx, q, plan, ins, c.out)
				if err != nil {
					t.Fatalf("%s %v candidate %d: %v", c.name, prec, i, err)
				}
				compareMMA(t, fmt.Sprintf("%s %v candidate %d", c.name, prec, i), got[0], want[0], scale, mmaTolerance(prec))
			}
		}
	}
}

// TestMMACandidatesOffered: with MMA and a reduced precision, Conv's and Gemm's first
// candidate is the tensor-core plan Plan returns; without either, none is offered.
func TestMMACandidatesOffered(t *testing.T) {
	t.Parallel()
	h100 := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024, LocalMemBytes: 49152, MMA: true, Precision: PrecisionTF32}
	conv := opCase{attrs: Attrs{"pads": []int{1, 1, 1, 1}}, in: shapes(sh(16, 128, 28, 28), sh(128, 128, 3, 3)), out: shapes(sh(16, 128, 28, 28))}
	fc := opCase{attrs: Attrs{"transB": 1}, in: shapes(sh(197, 768), sh(2304, 768), sh(2304)), out: shapes(sh(197, 2304))}
	isMMA := func(p *Plan) bool { return p.Launches[0].Kernel == "conv_mma" }
	for _, prec := range []Precision{PrecisionFP32, PrecisionTF32, PrecisionFP16} {
		for _, mma := range []bool{false, true} {
			dev := h100
			dev.Precision, dev.MMA = prec, mma
			wantMMA := mma && prec != PrecisionFP32
			for name, op := range map[string]interface {
				Op
				Tunable
			}{"conv": convOp{}, "gemm": gemmOp{}} {
				c := conv
				if name == "gemm" {
					c = fc
				}
				plan, err := op.Plan(c.attrs, c.in, c.out, dev)
				if err != nil {
					t.Fatal(err)
				}
				cands, err := op.Candidates(c.attrs, c.in, c.out, dev)
				if err != nil {
					t.Fatal(err)
				}
				if isMMA(plan) != wantMMA || isMMA(cands[0]) != wantMMA || cands[0].Source != plan.Source {
					t.Errorf("%s %v MMA %v: plan on tensor cores %v, first candidate %v, want %v", name, prec, mma, isMMA(plan), isMMA(cands[0]), wantMMA)
				}
				any := false
				for _, c := range cands {
					any = any || isMMA(c)
				}
				if any != wantMMA {
					t.Errorf("%s %v MMA %v: tensor-core candidates offered %v", name, prec, mma, any)
				}
			}
		}
	}
}

// TestMMAProbe runs the probe's plans on the test device, PTX on an NVIDIA GPU and the
// emulation elsewhere: its data and expected D are right, and so is the emulation.
func TestMMAProbe(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	cases, err := MMAProbeCases(NVIDIAGPU(env.ctx.Device))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got, err := RunPlan(env.ctx, q, c.Plan, c.Inputs, c.Out)
		if err != nil {
			t.Fatalf("%v: %v", c.Precision, err)
		}
		if err := c.Check(got[0].Data); err != nil {
			t.Error(err)
		}
	}
}
