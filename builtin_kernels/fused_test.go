package builtinkernels

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestFusedReferenceByHand pins the fused forms of the Conv and Gemm references to values
// worked out by hand: act(conv + bias + residual).
func TestFusedReferenceByHand(t *testing.T) {
	x := ht(sh(1, 1, 2, 2), 1, -2, 3, -4)
	w := ht(sh(2, 1, 1, 1), 1, -1) // channel 0 copies x, channel 1 negates it
	res := ht(sh(1, 2, 2, 2), 0.5, 0.5, 0.5, 0.5, -10, 10, -10, 10)
	cases := []struct {
		name  string
		typ   string
		attrs Attrs
		in    []*HostTensor
		want  *HostTensor
	}{
		{"conv relu", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActRelu},
			[]*HostTensor{x, w},
			ht(sh(1, 2, 2, 2), 1, 0, 3, 0, 0, 2, 0, 4)},
		{"conv bias residual, no activation", "Conv", nil,
			[]*HostTensor{x, w, ht(sh(2), 1, 2), res},
			// channel 0: x+1+0.5; channel 1: -x+2±10
			ht(sh(1, 2, 2, 2), 2.5, -0.5, 4.5, -2.5, -9, 14, -11, 16)},
		{"conv residual without bias, relu", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActRelu},
			[]*HostTensor{x, w, nil, res},
			ht(sh(1, 2, 2, 2), 1.5, 0, 3.5, 0, 0, 12, 0, 14)},
		{"conv residual, leaky 0.5", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActLeakyRelu, opspec.FusedAlphaAttr: 0.5},
			[]*HostTensor{x, w, nil, res},
			ht(sh(1, 2, 2, 2), 1.5, -0.75, 3.5, -1.75, -5.5, 12, -6.5, 14)},
		{"conv clip [-1, 2]", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: -1.0, opspec.FusedMaxAttr: 2.0},
			[]*HostTensor{x, w},
			ht(sh(1, 2, 2, 2), 1, -1, 2, -1, -1, 2, -1, 2)},
		{"conv clip with min > max gives max", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: 1.0, opspec.FusedMaxAttr: -1.0},
			[]*HostTensor{x, w},
			ht(sh(1, 2, 2, 2), -1, -1, -1, -1, -1, -1, -1, -1)},
		{"conv sigmoid", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActSigmoid},
			[]*HostTensor{ht(sh(1, 1, 1, 2), 0, 2), ht(sh(1, 1, 1, 1), 1)},
			ht(sh(1, 1, 1, 2), 0.5, 0.880797077977882)},
		{"conv hardswish: x·clamp(x/6+1/2, 0, 1)", "Conv", Attrs{opspec.FusedActivationAttr: opspec.ActHardSwish},
			[]*HostTensor{ht(sh(1, 1, 1, 4), -4, -1, 1, 4), ht(sh(1, 1, 1, 1), 1)},
			ht(sh(1, 1, 1, 4), 0, -1.0/3, 2.0/3, 4)},
		{"depthwise residual relu", "Conv", Attrs{"group": 2, opspec.FusedActivationAttr: opspec.ActRelu},
			[]*HostTensor{ht(sh(1, 2, 1, 2), 1, 2, 3, 4), ht(sh(2, 1, 1, 1), 2, -1), nil, ht(sh(1, 2, 1, 2), -3, 0, 10, 1)},
			ht(sh(1, 2, 1, 2), 0, 4, 7, 0)},
		{"gemm relu", "Gemm", Attrs{opspec.FusedActivationAttr: opspec.ActRelu},
			[]*HostTensor{ht(sh(2, 2), 1, 2, 3, 4), ht(sh(2, 2), 1, -1, -1, 1), ht(sh(2), 0, 0.5)},
			// A·B = [[-1 1] [-1 1]] + [0 0.5]
			ht(sh(2, 2), 0, 1.5, 0, 1.5)},
		{"gemm leaky default slope", "Gemm", Attrs{opspec.FusedActivationAttr: opspec.ActLeakyRelu},
			[]*HostTensor{ht(sh(1, 2), 1, 2), ht(sh(2, 2), -1, 1, -2, 1)},
			ht(sh(1, 2), -0.05, 3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, _ := Lookup(c.typ)
			got, err := op.Reference(c.attrs, c.in, [][]int{c.want.Shape})
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.want.Data {
				if math.Abs(float64(got[0].Data[i]-c.want.Data[i])) > 1e-6 {
					t.Errorf("element %d: got %v, want %v (all: %v)", i, got[0].Data[i], c.want.Data[i], got[0].Data)
				}
			}
		})
	}
}

// TestFusedBadInput: fused attributes and residual shapes the ops must refuse, from Plan,
// OutputShapes and Reference alike, with errors naming the layer type.
func TestFusedBadInput(t *testing.T) {
	x, w := sh(1, 2, 5, 5), sh(3, 2, 3, 3)
	out := shapes(sh(1, 3, 3, 3))
	cases := []struct {
		typ   string
		attrs Attrs
		in    [][]int
		out   [][]int
		want  string
	}{
		{"Conv", Attrs{opspec.FusedActivationAttr: "Tanh"}, shapes(x, w), out, `clhost_activation "Tanh": want one of Relu, LeakyRelu, Sigmoid, HardSwish, Clip`},
		{"Conv", Attrs{opspec.FusedActivationAttr: opspec.ActLeakyRelu, opspec.FusedAlphaAttr: math.Inf(1)}, shapes(x, w), out, "slope must be a finite number"},
		{"Conv", Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: math.NaN()}, shapes(x, w), out, "NaN bounds"},
		{"Conv", nil, shapes(x, w, sh(3), sh(1, 3, 5, 5)), out, "input 3 (residual) has shape [1 3 5 5], want the output's shape [1 3 3 3]"},
		{"Conv", nil, shapes(x, w, nil, sh(3, 3, 3)), out, "input 3 (residual)"},
		{"Conv", nil, shapes(x, w, sh(3), sh(1, 3, 3, 3), sh(1)), out, "5 inputs, want 2 to 4"},
		{"Gemm", Attrs{opspec.FusedActivationAttr: "relu"}, shapes(sh(2, 3), sh(3, 4)), shapes(sh(2, 4)), `clhost_activation "relu"`},
	}
	for _, c := range cases {
		t.Run(c.typ+"/"+c.want, func(t *testing.T) {
			op, _ := Lookup(c.typ)
			_, err := op.Plan(c.attrs, c.in, c.out, DeviceInfo{})
			checkErr(t, "Plan", c.typ, err, c.want)
			_, err = op.(ShapeInferrer).OutputShapes(c.attrs, c.in)
			checkErr(t, "OutputShapes", c.typ, err, c.want)
			in := make([]*HostTensor, len(c.in))
			for i, s := range c.in {
				if s != nil {
					in[i] = &HostTensor{Shape: s, Data: make([]float32, numel(s))}
				}
			}
			_, err = op.Reference(c.attrs, in, c.out)
			checkErr(t, "Reference", c.typ, err, c.want)
		})
	}
	// An omitted bias is accepted; an omitted weight is not.
	op, _ := Lookup("Conv")
	if _, err := op.Reference(nil, []*HostTensor{{Shape: x, Data: make([]float32, 50)}, nil}, out); err == nil || !strings.Contains(err.Error(), "Conv: input 1 is nil") {
		t.Errorf("omitted weights: %v", err)
	}
}

// TestFusedProgramText checks the defines a fused plan writes, which the GPU kernels
// share, and that every activation gives its own program while equal ones share one.
func TestFusedProgramText(t *testing.T) {
	dev := DeviceInfo{MaxWorkGroupSize: 64}
	conv, _ := Lookup("Conv")
	in := shapes(sh(1, 2, 5, 5), sh(3, 2, 3, 3), sh(3), sh(1, 3, 3, 3))
	out := shapes(sh(1, 3, 3, 3))
	plan := func(a Attrs, in [][]int) *Plan {
		t.Helper()
		p, err := conv.Plan(a, in, out, dev)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		attrs Attrs
		want  []string
	}{
		{nil, []string{"#define ACT_NONE 1\n", "#define APPLY_ACT(v) (v)\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, []string{"#define ACT_RELU 1\n", "#define APPLY_ACT(v) (fmax((v), 0.0f))\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActLeakyRelu}, []string{"#define ACT_LEAKY 1\n", "#define ACT_ALPHA 0.01f\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActClip, opspec.FusedMinAttr: 0, opspec.FusedMaxAttr: 6}, []string{"#define ACT_CLIP 1\n", "#define ACT_MIN 0.0f\n", "#define ACT_MAX 6.0f\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActClip}, []string{"#define ACT_MIN (-INFINITY)\n", "#define ACT_MAX INFINITY\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActSigmoid}, []string{"#define ACT_SIGMOID 1\n"}},
		{Attrs{opspec.FusedActivationAttr: opspec.ActHardSwish}, []string{"#define ACT_HARDSWISH 1\n"}},
	}
	seen := map[string]int{}
	for i, c := range cases {
		p := plan(c.attrs, in)
		for _, w := range append(c.want, "#define HAS_RESIDUAL 1\n") {
			if !strings.Contains(p.Source, w) {
				t.Errorf("case %d: program lacks %q", i, w)
			}
		}
		if j, dup := seen[p.Source]; dup {
			t.Errorf("cases %d and %d give the same program", j, i)
		}
		seen[p.Source] = i
		if args := p.Launches[0].Args; len(args) != 5 || args[3].Kind != ArgInput || args[3].Index != 3 || args[4].Kind != ArgOutput {
			t.Errorf("case %d: arguments %+v, want x, w, bias, residual, y", i, args)
		}
	}
	first, second := plan(Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in), plan(Attrs{opspec.FusedActivationAttr: opspec.ActRelu}, in)
	if first.Source != second.Source {
		t.Error("equal fused layers give different programs")
	}
	noBias := plan(nil, shapes(in[0], in[1], nil, in[3]))
	if args := noBias.Launches[0].Args; len(args) != 4 || args[2].Index != 3 || !strings.Contains(noBias.Source, "#define HAS_BIAS 0\n") {
		t.Errorf("conv without bias, with residual: arguments %+v", args)
	}
}

// TestCLFloat checks that float literals in programs read back as the same float32.
func TestCLFloat(t *testing.T) {
	for _, f := range []float32{0, 1, 2, 0.01, 0.1, 1.0 / 6, -0.5, 6, 1e-7, 3e20, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32} {
		s := clFloat(f)
		lit := strings.TrimSuffix(strings.Trim(s, "()"), "f")
		if !strings.ContainsAny(lit, ".e") {
			t.Errorf("%v: %q is not a floating literal", f, s)
		}
		back, err := strconv.ParseFloat(lit, 32)
		if err != nil || float32(back) != f {
			t.Errorf("%v: %q reads back as %v (%v)", f, s, back, err)
		}
	}
}
