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
			plan = halfPlan(plan)
			got, err := RunPlan(env.ctx, q, plan, placeholders(t, plan, ins, c.omit), c.out)
			if err != nil {
				t.Fatalf("%s %v: %v", c.name, prec, err)
			}
			// The output is rounded to half as it is stored: 2⁻¹¹ of it more.
			compareMMA(t, fmt.Sprintf("%s %v tile %v half storage", c.name, prec, tile), got[0], want[0], scale, mmaTolerance(prec)+1e-3)
		}
	}
}
