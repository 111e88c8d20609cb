package builtinkernels

import (
	"fmt"
	"strings"
	"testing"
)

// linearPool is an independent reference for pooling an input whose value is linear in
// its position: x = plane + Σ coef[a]·p[a] over the spatial axes. The window's positions
// inside the input form a product of one arithmetic progression per axis, so the maximum
// is the function at each axis's last such position and the mean is the function at each
// axis's mean position; with countPad the sum is divided by the positions inside the
// padding too.
type linearPool struct {
	in, k, s, d, pb, pe, out []int // spatial axes only
	max, countPad            bool
}

var linearCoef = []float64{1.5, 0.25, 0.125}

func (l linearPool) input(n, c int) *HostTensor {
	shape := append([]int{n, c}, l.in...)
	x := &HostTensor{Shape: shape, Data: make([]float32, numel(shape))}
	for i := range x.Data {
		idx := unravel(i, shape)
		v := float64(idx[0]*c + idx[1])
		for a := range l.in {
			v += linearCoef[a] * float64(idx[2+a])
		}
		x.Data[i] = float32(v)
	}
	return x
}

func (l linearPool) want(n, c int) *HostTensor {
	shape := append([]int{n, c}, l.out...)
	y := &HostTensor{Shape: shape, Data: make([]float32, numel(shape))}
	for i := range y.Data {
		idx := unravel(i, shape)
		maxV := float64(idx[0]*c + idx[1])
		meanV, inside, counted := maxV, 1.0, 1.0
		for a := range l.in {
			var sum, last float64
			in, cnt := 0, 0
			for t := 0; t < l.k[a]; t++ {
				p := idx[2+a]*l.s[a] - l.pb[a] + t*l.d[a]
				if p >= 0 && p < l.in[a] {
					sum += float64(p)
					last = float64(p)
					in++
				}
				if p >= -l.pb[a] && p < l.in[a]+l.pe[a] {
					cnt++
				}
			}
			maxV += linearCoef[a] * last
			meanV += linearCoef[a] * sum / float64(in)
			inside *= float64(in)
			counted *= float64(cnt)
		}
		switch {
		case l.max:
			y.Data[i] = float32(maxV)
		case l.countPad:
			y.Data[i] = float32(meanV * inside / counted)
		default:
			y.Data[i] = float32(meanV)
		}
	}
	return y
}

func (l linearPool) attrs() Attrs {
	a := Attrs{"kernel_shape": l.k, "strides": l.s, "dilations": l.d, "pads": append(append([]int{}, l.pb...), l.pe...)}
	if l.countPad {
		a["count_include_pad"] = 1
	}
	return a
}

func (l linearPool) typ() string {
	if l.max {
		return "MaxPool"
	}
	return "AveragePool"
}

// runLinearPool plans the pool on dev, checks the plan with check, runs it and compares
// it (and the op's Reference) with linearPool's values at the harness's tolerance
// (1e-4 relative).
func runLinearPool(t *testing.T, name string, l linearPool, dev DeviceInfo, check func(*Plan) error) {
	t.Helper()
	env := deviceEnv(t)
	q := mustQueue(t, env)
	const n, c = 1, 2
	op, _ := Lookup(l.typ())
	in := []*HostTensor{l.input(n, c)}
	want := l.want(n, c)
	out := shapes(want.Shape)
	plan, err := op.Plan(l.attrs(), shapes(in[0].Shape), out, dev)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := check(plan); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ref, err := op.Reference(l.attrs(), in, out)
	if err != nil {
		t.Fatalf("%s: reference: %v", name, err)
	}
	compare(t, name+" reference", ref[0], want)
	got, err := RunPlan(env.ctx, q, plan, in, out)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	compare(t, name, got[0], want)
}

// TestPoolLargeWindow: windows of thousands of taps (ONNX's MaxPool2d_stride_padding_
// dilation has 60×80) run pool.cl's kernels with their loops rolled, not window_cpu.cl's
// or fully unrolled ones, whose compiles took PoCL minutes.
func TestPoolLargeWindow(t *testing.T) {
	t.Parallel()
	cpu := DeviceInfo{FloatVectorWidth: 8, ComputeUnits: 2}
	cases := []struct {
		name   string
		l      linearPool
		kernel string
	}{
		// Small enough for window_cpu.cl's row buffer, but 40 taps wide over 40+ rows.
		{"max 40x40", linearPool{max: true, in: []int{45, 47}, k: []int{40, 40}, s: []int{1, 1}, d: []int{1, 1}, pb: []int{1, 0}, pe: []int{0, 2}, out: []int{7, 10}}, "maxpool2d"},
		{"avg 60x80 dilated", linearPool{in: []int{64, 170}, k: []int{60, 80}, s: []int{10, 10}, d: []int{1, 2}, pb: []int{10, 20}, pe: []int{10, 20}, out: []int{3, 6}}, "avgpool2d"},
		{"avg 60x80 count pad", linearPool{countPad: true, in: []int{64, 170}, k: []int{60, 80}, s: []int{10, 10}, d: []int{1, 2}, pb: []int{10, 20}, pe: []int{10, 20}, out: []int{3, 6}}, "avgpool2d"},
	}
	for _, c := range cases {
		runLinearPool(t, c.name, c.l, cpu, func(p *Plan) error {
			if k := p.Launches[0].Kernel; k != c.kernel {
				return fmt.Errorf("plan runs %s, want %s", k, c.kernel)
			}
			if !strings.Contains(p.Source, "#define UNROLL 0\n") {
				return fmt.Errorf("pool.cl's window loops are unrolled")
			}
			return nil
		})
	}
}

// TestPool3D runs 3-D MaxPool and AveragePool (N,C,D,H,W) with strides, dilations,
// asymmetric pads and count_include_pad against linearPool.
func TestPool3D(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		l    linearPool
	}{
		{"max s2 pad dil", linearPool{max: true, in: []int{5, 6, 7}, k: []int{3, 2, 3}, s: []int{2, 1, 2}, d: []int{1, 2, 1}, pb: []int{1, 0, 1}, pe: []int{1, 1, 0}, out: []int{3, 5, 3}}},
		{"avg", linearPool{in: []int{4, 5, 6}, k: []int{2, 3, 2}, s: []int{1, 2, 2}, d: []int{1, 1, 1}, pb: []int{0, 1, 1}, pe: []int{1, 1, 1}, out: []int{4, 3, 4}}},
		{"avg count pad", linearPool{countPad: true, in: []int{4, 5, 6}, k: []int{2, 3, 2}, s: []int{1, 2, 2}, d: []int{1, 1, 1}, pb: []int{0, 1, 1}, pe: []int{1, 1, 1}, out: []int{4, 3, 4}}},
	}
	for _, c := range cases {
		runLinearPool(t, c.name, c.l, deviceEnv(t).dev, func(p *Plan) error {
			if k := p.Launches[0].Kernel; k != "pool3d" {
				return fmt.Errorf("plan runs %s, want pool3d", k)
			}
			return nil
		})
	}
}
