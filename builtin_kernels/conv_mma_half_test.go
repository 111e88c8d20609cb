package builtinkernels

import (
	"fmt"
	"testing"

	"github.com/clhost/clhost/model"
)

func roundHalf(v float32) float32 { return model.HalfToFloat32(model.Float32ToHalf(v)) }

// TestConvMMAHalfStorage: the tensor-core conv with its tensors stored as half (the
// storage macros of halfstore.go before the program), both operand precisions, against
// the reference of the half-rounded inputs.
func TestConvMMAHalfStorage(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	dev := mmaDevice(env)
	for ci, c := range mmaConvCases[:6] {
		ins := c.inputs()
		for _, in := range ins {
			if in != nil {
				for i, v := range in.Data {
					in.Data[i] = roundHalf(v)
				}
			}
		}
		want, err := convOp{}.Reference(c.attrs, ins, c.out)
		if err != nil {
			t.Fatal(err)
		}
		scale := mmaScale(t, convOp{}, c.attrs, ins, c.out)
		geo, err := convOp{}.geometry(c.attrs, c.in)
		if err != nil {
			t.Fatal(err)
		}
		geo.half = true
		for _, prec := range []Precision{PrecisionTF32, PrecisionFP16} {
			tile := mmaTiles[(ci+int(prec))%len(mmaTiles)]
			plan, err := mmaTiled(geo, false, tile, 1+ci%2, prec, dev)
			if err != nil {
				t.Fatal(err)
			}
			plan = halfPlan(plan, dev)
			got, err := RunPlan(env.ctx, q, plan, placeholders(t, plan, ins, c.omit), c.out)
			if err != nil {
				t.Fatalf("%s %v: %v", c.name, prec, err)
			}
			// The output is rounded to half as it is stored: 2⁻¹¹ of it more.
			compareMMA(t, fmt.Sprintf("%s %v tile %v half storage", c.name, prec, tile), got[0], want[0], scale, mmaTolerance(prec)+1e-3)
		}
	}
}

// TestMMAPlanHalf: with MMA and a reduced precision a convolution's half plan is the
// tensor-core kernel with the storage macros first; without, there is none.
func TestMMAPlanHalf(t *testing.T) {
	t.Parallel()
	geo, err := convOp{}.geometry(Attrs{"pads": []int{1, 1, 1, 1}}, shapes(sh(16, 64, 28, 28), sh(64, 64, 3, 3), sh(64)))
	if err != nil {
		t.Fatal(err)
	}
	h100 := DeviceInfo{IsGPU: true, ComputeUnits: 132, MaxWorkGroupSize: 1024, LocalMemBytes: 49152, MMA: true, Precision: PrecisionFP16}
	plan, ok, err := mmaPlanHalf(geo, false, h100)
	if err != nil || !ok || plan.Launches[0].Kernel != "conv_mma" || plan.Source != halfPlan(&Plan{Source: plan.Source}, h100).Source {
		t.Errorf("MMA fp16: ok %v, err %v, plan %v", ok, err, plan != nil && plan.Launches[0].Kernel == "conv_mma")
	}
	in, out := shapes(sh(16, 64, 28, 28), sh(64, 64, 3, 3), sh(64)), shapes(sh(16, 64, 28, 28))
	if p, ok, err := (convOp{}).PlanHalf(Attrs{"pads": []int{1, 1, 1, 1}}, in, out, h100); err != nil || !ok || p.Launches[0].Kernel != "conv_mma" {
		t.Errorf("Conv's PlanHalf with MMA: ok %v, err %v, not conv_mma", ok, err)
	}
	h100.MMA = false
	if _, ok, err := mmaPlanHalf(geo, false, h100); ok || err != nil {
		t.Errorf("without MMA: ok %v, err %v", ok, err)
	}
	if p, _, err := (convOp{}).PlanHalf(Attrs{"pads": []int{1, 1, 1, 1}}, in, out, h100); err != nil || p.Launches[0].Kernel == "conv_mma" {
		t.Errorf("Conv's PlanHalf without MMA: err %v, or conv_mma", err)
	}
}
