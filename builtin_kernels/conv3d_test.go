package builtinkernels

import (
	"math"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// conv3dWant is a grouped 3-D convolution (X 1×4×3×4×3, W 4×2×2×2×2, group 2, bias
// [0.5 -1 0.25 2], strides 1,2,1, dilations 1,1,2, pads 1,0,1 / 0,1,1) of the inputs
// conv3dInputs builds, computed by a separate Python program over an explicitly padded
// input; every value is exact in float32.
var conv3dWant = []float32{0.25, -2.625, 1.25, 0.5, 4.5, 1.25, 1.0, 1.5, 0.75, 3.25, 1.75, -2.625, -1.375, 2.0, 2.25, 2.25, -1.875, 0.25, -1.5, 0.0, -1.375, -0.75, -2.875, -0.875, 0.0, -2.375, -0.25, -2.25, -3.25, -0.25, -3.125, 0.0, -3.0, -4.0, 0.5, -1.625, -0.125, 1.25, -0.25, -0.625, 1.375, -1.0, 0.25, 4.125, 3.125, 1.375, -1.0, 2.375, 3.875, 2.125, -2.5, -0.5, 1.125, 0.875, 2.75, -1.125, 1.75, 2.75, 2.75, 1.5, -1.125, 0.625, 0.0, 3.75, 0.25, 3.0, 1.75, -0.125, 3.25, 1.125, 3.625, 0.75}

func conv3dInputs() []*HostTensor {
	x := &HostTensor{Shape: sh(1, 4, 3, 4, 3), Data: make([]float32, 144)}
	for i := range x.Data {
		x.Data[i] = float32((i*7)%11-5) / 4
	}
	w := &HostTensor{Shape: sh(4, 2, 2, 2, 2), Data: make([]float32, 64)}
	for i := range w.Data {
		w.Data[i] = float32((i*5)%7-3) / 2
	}
	b := &HostTensor{Shape: sh(4), Data: []float32{0.5, -1, 0.25, 2}}
	return []*HostTensor{x, w, b}
}

// TestConv3D runs a grouped, strided, dilated, padded 3-D Conv with its bias, then with
// a fused residual and ReLU, against conv3dWant at the harness's tolerance (1e-4
// relative); the op's Reference is held to the same values.
func TestConv3D(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	attrs := Attrs{"group": 2, "strides": []int{1, 2, 1}, "dilations": []int{1, 1, 2}, "pads": []int{1, 0, 1, 0, 1, 1}}
	out := shapes(sh(1, 4, 3, 2, 3))
	in := conv3dInputs()
	want := &HostTensor{Shape: out[0], Data: conv3dWant}

	res := &HostTensor{Shape: out[0], Data: make([]float32, len(conv3dWant))}
	fused := &HostTensor{Shape: out[0], Data: make([]float32, len(conv3dWant))}
	for i, v := range conv3dWant {
		res.Data[i] = float32(i%5-2) / 2
		fused.Data[i] = float32(math.Max(0, float64(v+res.Data[i])))
	}
	fusedAttrs := Attrs{opspec.FusedActivationAttr: opspec.ActRelu}
	for k, v := range attrs {
		fusedAttrs[k] = v
	}

	op := convOp{}
	for _, c := range []struct {
		name  string
		attrs Attrs
		in    []*HostTensor
		want  *HostTensor
	}{
		{"bias", attrs, in, want},
		{"residual relu", fusedAttrs, append(in[:3:3], res), fused},
	} {
		inShapes := make([][]int, len(c.in))
		for i, t := range c.in {
			inShapes[i] = t.Shape
		}
		got, err := op.OutputShapes(c.attrs, inShapes)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !sameShape(got[0], out[0]) {
			t.Fatalf("%s: output shape %v, want %v", c.name, got[0], out[0])
		}
		ref, err := op.Reference(c.attrs, c.in, out)
		if err != nil {
			t.Fatalf("%s: reference: %v", c.name, err)
		}
		compare(t, c.name+" reference", ref[0], c.want)
		plan, err := op.Plan(c.attrs, inShapes, out, env.dev)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		y, err := RunPlan(env.ctx, q, plan, c.in, out)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		compare(t, c.name, y[0], c.want)
	}
}
