package builtinkernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestMatMulLinearPlan: a MatMul whose B is one matrix for every batch (a Linear layer,
// with or without the bias internal/graph folds in) runs on the fully connected kernels,
// fc_vec on CPUs and the implicit GEMM on GPUs, over A's rows flattened; a MatMul of
// batched B runs gemm_vec on CPUs and gemm.cl on GPUs. Each against the CPU reference.
func TestMatMulLinearPlan(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	cases := []struct {
		c      opCase
		linear bool
		scale  float32 // opspec.MatMulScaleAttr; 0 for none
	}{
		{opCase{name: "rows bias", in: shapes(sh(3, 11, 20), sh(20, 37), sh(37)), out: shapes(sh(3, 11, 37))}, true, 0},
		{opCase{name: "4-D no bias", in: shapes(sh(2, 1, 5, 9), sh(9, 16)), out: shapes(sh(2, 1, 5, 16))}, true, 0},
		{opCase{name: "batched B bias", in: shapes(sh(2, 5, 9), sh(2, 9, 16), sh(16)), out: shapes(sh(2, 5, 16))}, false, 0},
		// A partial last tile of columns and of rows.
		{opCase{name: "batched edges", in: shapes(sh(3, 6, 9), sh(3, 9, 21), sh(21)), out: shapes(sh(3, 6, 21))}, false, 0},
		// Enough work-items at 2×2 tiles for the one-unit GPU, too few at 4×4.
		{opCase{name: "batched 2x2 tiles", in: shapes(sh(2, 32, 7), sh(2, 7, 31)), out: shapes(sh(2, 32, 31))}, false, 0},
		// Scaled products (attention's folded Muls): a Linear one leaves the fully
		// connected kernels, which have no scale, for the general ones.
		{opCase{name: "rows bias scaled", in: shapes(sh(3, 11, 20), sh(20, 37), sh(37)), out: shapes(sh(3, 11, 37))}, true, 0.125},
		{opCase{name: "batched edges scaled", in: shapes(sh(3, 6, 9), sh(3, 9, 21)), out: shapes(sh(3, 6, 21))}, false, -3},
	}
	devs := []DeviceInfo{
		{ComputeUnits: 2, FloatVectorWidth: 8},
		{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 256},
		{IsGPU: true, ComputeUnits: 1, MaxWorkGroupSize: 256},
	}
	for _, tc := range cases {
		c := tc.c
		ins := c.inputs()
		var p Params
		if tc.scale != 0 {
			p = Attrs{opspec.MatMulScaleAttr: tc.scale}
		}
		want, err := matmulOp{}.Reference(p, ins, c.out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		for _, dev := range devs {
			plan, err := matmulOp{}.Plan(p, c.in, c.out, dev)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			kernel := plan.Launches[0].Kernel
			wantKernel := map[bool]string{false: "gemm_vec", true: "gemm"}[dev.IsGPU]
			if tc.linear && tc.scale != 0 {
				// the general kernels above
			} else if tc.linear && dev.IsGPU {
				wantKernel = "conv_gemm"
			} else if tc.linear {
				wantKernel = "fc_vec"
			}
			if kernel != wantKernel {
				t.Fatalf("%s (GPU %v): planned %s, want %s", c.name, dev.IsGPU, kernel, wantKernel)
			}
			got, err := RunPlan(env.ctx, q, plan, ins, c.out)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			compare(t, fmt.Sprintf("%s (%s)", c.name, kernel), got[0], want[0])
		}
	}
}

// TestBatchedMatMulGPUTiles: gemm.cl's tile on GPUs shrinks from 4×4 until the product has
// work-items enough to keep the device busy: attention's products in ViT-B/16 on a
// 132-unit GPU get 1×1 (scores times values, 12×197×64 outputs) and 2×2 (queries times
// keys, 12×197×197), a large product keeps 4×4, and CPUs are not affected.
func TestBatchedMatMulGPUTiles(t *testing.T) {
	h100 := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024}
	cases := []struct {
		a, b   []int
		dev    DeviceInfo
		tm, tn int
	}{
		{sh(1, 12, 197, 197), sh(1, 12, 197, 64), h100, 1, 1},
		{sh(1, 12, 197, 64), sh(1, 12, 64, 197), h100, 2, 2},
		{sh(16, 12, 197, 64), sh(16, 12, 64, 197), h100, 4, 4},
	}
	for _, c := range cases {
		s, err := matmulOp{}.shape([][]int{c.a, c.b})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.geom.plan(c.dev)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("#define TM %d\n#define TN %d\n", c.tm, c.tn)
		if !strings.Contains(plan.Source, want) {
			t.Errorf("%v × %v: the plan lacks %q", c.a, c.b, want)
		}
	}
}
