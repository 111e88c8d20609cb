package builtinkernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// BenchmarkConvMMA times ResNet-18's convolutions at batch 16 on an NVIDIA GPU: the
// fp32 implicit GEMM's own plan ("fp32", the peer), then every tensor-core candidate in
// tf32 and fp16 ("tf32_BMxBN_wWMxWN_sS"), so that each shows its TFLOP/s against the
// dense peaks (H100 SXM: 494.7 tf32, 989.4 fp16) with no host in between. Elsewhere the
// tensor cores are only emulated, and it skips.
func BenchmarkConvMMA(b *testing.B) {
	env := deviceEnvB(b)
	dev := mmaDevice(env)
	if !dev.MMA {
		b.Skip("no NVIDIA GPU: the tensor cores are only emulated here")
	}
	type layer struct{ c, m, k, hw, s int }
	// The 3×3 stride-1 layers first, which hold most of the arithmetic (and the issue's
	// 40 % of peak), then the strided ones, the 1×1 shortcut and the 7×7 stem.
	for _, l := range []layer{{64, 64, 3, 56, 1}, {128, 128, 3, 28, 1}, {256, 256, 3, 14, 1}, {512, 512, 3, 7, 1},
		{64, 128, 3, 56, 2}, {128, 256, 3, 28, 2}, {256, 512, 3, 14, 2}, {64, 128, 1, 56, 2}, {3, 64, 7, 224, 2}} {
		o := (l.hw+2*(l.k/2)-l.k)/l.s + 1
		c := opCase{attrs: Attrs{"pads": []int{l.k / 2, l.k / 2, l.k / 2, l.k / 2}, "strides": []int{l.s, l.s}, opspec.FusedActivationAttr: opspec.ActRelu},
			in: shapes(sh(16, l.c, l.hw, l.hw), sh(l.m, l.c, l.k, l.k), sh(l.m)), out: shapes(sh(16, l.m, o, o))}
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			b.Fatal(err)
		}
		fp32 := dev
		fp32.Precision = PrecisionFP32
		own, err := convOp{}.Plan(c.attrs, c.in, c.out, fp32)
		if err != nil {
			b.Fatal(err)
		}
		plans := []namedPlan{{"fp32", own}}
		for _, prec := range []Precision{PrecisionTF32, PrecisionFP16} {
			d := dev
			d.Precision = prec
			cands, err := mmaCandidates(geo, false, d)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range cands {
				name := fmt.Sprintf("%v_%dx%d_w%d_s%d", prec, mmaDefine(p, "BM"), mmaDefine(p, "BN"), p.Launches[0].Local[0]/32, mmaDefine(p, "SPLITK"))
				plans = append(plans, namedPlan{name, p})
			}
		}
		benchPlans(b, env, fmt.Sprintf("b16_%d_%d_k%d_%d_s%d", l.c, l.m, l.k, l.hw, l.s), plans, c.inputs(), c.out, 2.0*float64(geo.macs()))
	}
}

// mmaDefine reads an integer #define of a plan's source, for naming it.
func mmaDefine(p *Plan, name string) int {
	var v int
	for _, line := range strings.Split(p.Source, "\n") {
		if n, _ := fmt.Sscanf(line, "#define "+name+" %d", &v); n == 1 {
			return v
		}
	}
	return 0
}
