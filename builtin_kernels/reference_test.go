package builtinkernels

import (
	"strings"
	"testing"
)

func ht(shape []int, data ...float32) *HostTensor { return &HostTensor{Shape: shape, Data: data} }

// TestReferenceByHand pins the CPU references, the harness's yardstick, to values
// worked out by hand.
func TestReferenceByHand(t *testing.T) {
	x33 := ht(sh(1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9)
	ones33 := ht(sh(1, 1, 3, 3), 1, 1, 1, 1, 1, 1, 1, 1, 1)
	cases := []struct {
		name  string
		typ   string
		attrs Attrs
		in    []*HostTensor
		want  *HostTensor
	}{
		{"conv 2x2 kernel with bias", "Conv", nil,
			[]*HostTensor{x33, ht(sh(1, 1, 2, 2), 1, 2, 3, 4), ht(sh(1), 1)},
			// 1·1+2·2+4·3+5·4 = 37, 2+6+15+24 = 47, 4+10+21+32 = 67, 5+12+24+36 = 77; +1
			ht(sh(1, 1, 2, 2), 38, 48, 68, 78)},
		{"conv 3x3 ones pad 1: neighbourhood sums", "Conv", Attrs{"pads": []int{1, 1, 1, 1}},
			[]*HostTensor{x33, ones33},
			ht(sh(1, 1, 3, 3), 12, 21, 16, 27, 45, 33, 24, 39, 28)},
		{"conv 3x3 ones pad 1 stride 2", "Conv", Attrs{"pads": []int{1, 1, 1, 1}, "strides": []int{2, 2}},
			[]*HostTensor{x33, ones33},
			ht(sh(1, 1, 2, 2), 12, 16, 24, 28)},
		{"conv asymmetric pad: left only", "Conv", Attrs{"pads": []int{0, 1, 0, 0}},
			[]*HostTensor{ht(sh(1, 1, 1, 3), 1, 2, 3), ht(sh(1, 1, 1, 2), 1, 10)},
			// windows over [0 1 2 3]: 0+10, 1+20, 2+30
			ht(sh(1, 1, 1, 3), 10, 21, 32)},
		{"conv dilation 2", "Conv", Attrs{"dilations": []int{1, 2}},
			[]*HostTensor{ht(sh(1, 1, 1, 5), 1, 2, 3, 4, 5), ht(sh(1, 1, 1, 2), 1, 1)},
			ht(sh(1, 1, 1, 3), 4, 6, 8)},
		{"depthwise scales each channel", "Conv", Attrs{"group": 2},
			[]*HostTensor{ht(sh(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), ht(sh(2, 1, 1, 1), 2, -1)},
			ht(sh(1, 2, 2, 2), 2, 4, 6, 8, -5, -6, -7, -8)},
		{"maxpool 2x2 stride 2", "MaxPool", Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}},
			[]*HostTensor{ht(sh(1, 1, 4, 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)},
			ht(sh(1, 1, 2, 2), 6, 8, 14, 16)},
		{"maxpool ceil_mode keeps the partial window", "MaxPool", Attrs{"kernel_shape": []int{2, 2}, "strides": []int{2, 2}, "ceil_mode": 1},
			[]*HostTensor{x33}, ht(sh(1, 1, 2, 2), 5, 6, 8, 9)},
		{"avgpool pad 1 excluding pad", "AveragePool", Attrs{"kernel_shape": []int{3, 3}, "pads": []int{1, 1, 1, 1}},
			[]*HostTensor{x33},
			// corner (1+2+4+5)/4, edge (1+2+3+4+5+6)/6, centre 45/9
			ht(sh(1, 1, 3, 3), 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7)},
		{"avgpool pad 1 including pad", "AveragePool", Attrs{"kernel_shape": []int{3, 3}, "pads": []int{1, 1, 1, 1}, "count_include_pad": 1},
			[]*HostTensor{x33},
			ht(sh(1, 1, 3, 3), 12.0/9, 21.0/9, 16.0/9, 27.0/9, 5, 33.0/9, 24.0/9, 39.0/9, 28.0/9)},
		{"global average", "GlobalAveragePool", nil,
			[]*HostTensor{ht(sh(1, 2, 1, 2), 1, 3, 10, 20)}, ht(sh(1, 2, 1, 1), 2, 15)},
		{"gemm", "Gemm", nil,
			[]*HostTensor{ht(sh(2, 2), 1, 2, 3, 4), ht(sh(2, 2), 5, 6, 7, 8)},
			ht(sh(2, 2), 19, 22, 43, 50)},
		{"gemm transA alpha beta with row bias", "Gemm", Attrs{"transA": 1, "alpha": 2.0, "beta": 1.0},
			[]*HostTensor{ht(sh(2, 2), 1, 2, 3, 4), ht(sh(2, 2), 5, 6, 7, 8), ht(sh(2), 1, -1)},
			// Aᵀ·B = [[26 30] [38 44]]
			ht(sh(2, 2), 53, 59, 77, 87)},
		{"gemm transB", "Gemm", Attrs{"transB": 1},
			[]*HostTensor{ht(sh(1, 2), 1, 2), ht(sh(3, 2), 1, 0, 0, 1, 1, 1)},
			ht(sh(1, 3), 1, 2, 3)},
		{"matmul batch broadcast", "MatMul", nil,
			[]*HostTensor{ht(sh(2, 1, 2), 1, 2, 3, 4), ht(sh(2, 1), 1, 1)},
			ht(sh(2, 1, 1), 3, 7)},
		{"softmax", "Softmax", nil,
			[]*HostTensor{ht(sh(1, 3), 1, 2, 3)},
			ht(sh(1, 3), 0.09003057, 0.24472847, 0.66524096)},
		{"softmax axis 0", "Softmax", Attrs{"axis": 0},
			[]*HostTensor{ht(sh(2, 2), 0, 5, 0, 5)},
			ht(sh(2, 2), 0.5, 0.5, 0.5, 0.5)},
		{"concat axis 1", "Concat", Attrs{"axis": 1},
			[]*HostTensor{ht(sh(2, 2), 1, 2, 3, 4), ht(sh(2, 1), 5, 6)},
			ht(sh(2, 3), 1, 2, 5, 3, 4, 6)},
		{"add per channel", "Add", nil,
			[]*HostTensor{ht(sh(1, 2, 2, 1), 1, 2, 3, 4), ht(sh(2, 1, 1), 10, 20)},
			ht(sh(1, 2, 2, 1), 11, 12, 23, 24)},
		{"div scalar first", "Div", nil,
			[]*HostTensor{ht(sh(), 12), ht(sh(3), 1, 2, 4)},
			ht(sh(3), 12, 6, 3)},
		{"batchnorm", "BatchNormalization", Attrs{"epsilon": 0.0},
			[]*HostTensor{ht(sh(1, 2, 1, 1), 3, 3), ht(sh(2), 2, 1), ht(sh(2), 1, 0), ht(sh(2), 1, 2), ht(sh(2), 4, 0.25)},
			// 2·(3-1)/2+1 = 3; 1·(3-2)/0.5+0 = 2
			ht(sh(1, 2, 1, 1), 3, 2)},
		{"hardswish", "HardSwish", nil,
			[]*HostTensor{ht(sh(3), 3, -1, -4)}, ht(sh(3), 3, -1.0/3, 0)},
		{"hardsigmoid", "HardSigmoid", nil,
			[]*HostTensor{ht(sh(3), 1, -5, 5)}, ht(sh(3), 0.7, 0, 1)},
		{"leakyrelu default alpha", "LeakyRelu", nil,
			[]*HostTensor{ht(sh(2), -2, 3)}, ht(sh(2), -0.02, 3)},
		{"clip", "Clip", Attrs{"min": -1.0, "max": 1.0},
			[]*HostTensor{ht(sh(3), -2, 0.5, 2)}, ht(sh(3), -1, 0.5, 1)},
		{"reorder bfyx to byxf", ReorderType, Attrs{"from": "BFYX", "to": "BYXF"},
			// F=2, X=2: BFYX memory f0x0 f0x1 f1x0 f1x1; BYXF memory x0f0 x0f1 x1f0 x1f1
			[]*HostTensor{ht(sh(1, 2, 1, 2), 1, 2, 3, 4)}, ht(sh(1, 2, 1, 2), 1, 3, 2, 4)},
		{"reorder bfyx to yxfb", ReorderType, Attrs{"from": "BFYX", "to": "YXFB"},
			// B=2, F=2: BFYX b0f0 b0f1 b1f0 b1f1; YXFB f0b0 f0b1 f1b0 f1b1
			[]*HostTensor{ht(sh(2, 2, 1, 1), 1, 2, 3, 4)}, ht(sh(2, 2, 1, 1), 1, 3, 2, 4)},
		{"flatten", "Flatten", nil,
			[]*HostTensor{ht(sh(1, 2, 1, 2), 1, 2, 3, 4)}, ht(sh(1, 4), 1, 2, 3, 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, ok := Lookup(c.typ)
			if !ok {
				t.Fatalf("%q not registered", c.typ)
			}
			got, err := op.Reference(c.attrs, c.in, [][]int{c.want.Shape})
			if err != nil {
				t.Fatal(err)
			}
			compare(t, c.typ, got[0], c.want)
		})
	}
}

// TestPitches checks the layout table of the Reorder op against the formulas of the
// format definitions for B=2, F=3, Y=5, X=7.
func TestPitches(t *testing.T) {
	b, f, y, x := 2, 3, 5, 7
	want := map[string][4]int{
		"BFYX": {f * y * x, y * x, x, 1},
		"BYXF": {y * x * f, 1, x * f, f},
		"YXFB": {1, b, x * f * b, f * b},
		"FYXB": {1, y * x * b, x * b, b},
	}
	for format, w := range want {
		if got := pitches(format, [4]int{b, f, y, x}); got != w {
			t.Errorf("%s pitches %v, want %v", format, got, w)
		}
	}
}

// TestRegistered checks what every registered op promises: shape rules for the graph and
// for its own plans, and a case in the device harness. The list is the registry's own.
func TestRegistered(t *testing.T) {
	if len(Types()) == 0 {
		t.Fatal("no layer types registered")
	}
	tested := map[string]bool{}
	for _, c := range opCases {
		tested[c.typ] = true
	}
	for _, typ := range Types() {
		op, _ := Lookup(typ)
		if _, ok := op.(ShapeInferrer); !ok {
			t.Errorf("layer type %q does not infer output shapes", typ)
		}
		if _, ok := op.(Shaper); !ok {
			t.Errorf("layer type %q has no shape rule for the graph", typ)
		}
		if !tested[typ] {
			t.Errorf("layer type %q has no case in the device harness", typ)
		}
	}
}

// TestProgramSharing checks the property the runtime's program cache relies on: a plan's
// text depends only on what it bakes in, so equal shapes give one program, and ops that
// take shapes as arguments give one program for every shape.
func TestProgramSharing(t *testing.T) {
	dev := DeviceInfo{MaxWorkGroupSize: 256}
	plan := func(typ string, a Attrs, in, out [][]int) *Plan {
		t.Helper()
		op, _ := Lookup(typ)
		p, err := op.Plan(a, in, out, dev)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	convA := plan("Conv", nil, shapes(sh(1, 3, 8, 8), sh(4, 3, 3, 3)), shapes(sh(1, 4, 6, 6)))
	convB := plan("Conv", nil, shapes(sh(1, 3, 8, 8), sh(4, 3, 3, 3)), shapes(sh(1, 4, 6, 6)))
	convC := plan("Conv", nil, shapes(sh(1, 3, 9, 8), sh(4, 3, 3, 3)), shapes(sh(1, 4, 7, 6)))
	if convA.Source != convB.Source {
		t.Error("two Conv plans of the same shapes have different program text")
	}
	if convA.Source == convC.Source {
		t.Error("Conv plans of different shapes share program text, but shapes are baked in")
	}
	relu := plan("Relu", nil, shapes(sh(2, 3)), shapes(sh(2, 3)))
	add := plan("Add", nil, shapes(sh(4, 5, 6), sh(5, 1)), shapes(sh(4, 5, 6)))
	bn := plan("BatchNormalization", nil, shapes(sh(1, 2, 3, 3), sh(2), sh(2), sh(2), sh(2)), shapes(sh(1, 2, 3, 3)))
	if relu.Source != add.Source || relu.Source != bn.Source {
		t.Error("element-wise plans of different ops and shapes should share one program")
	}
	if relu.Launches[0].Kernel != "relu" || add.Launches[0].Kernel != "add_bcast" {
		t.Errorf("kernels %q and %q", relu.Launches[0].Kernel, add.Launches[0].Kernel)
	}
	if !strings.Contains(convA.Source, "#define OW 6\n") {
		t.Error("Conv source lacks its output width define")
	}
}

// TestBadInput feeds each op shapes and attributes it must refuse: an error naming the
// layer type and the problem, never a panic, from Plan and from Reference alike.
func TestBadInput(t *testing.T) {
	cases := []struct {
		typ   string
		attrs Attrs
		in    [][]int
		out   [][]int
		want  string
	}{
		{"Conv", nil, shapes(sh(1, 3, 5, 5), sh(2, 2, 3, 3)), shapes(sh(1, 2, 3, 3)), "dimension 1 is 2, want C/group"},
		{"Conv", Attrs{"group": 2}, shapes(sh(1, 3, 5, 5), sh(2, 1, 3, 3)), shapes(sh(1, 2, 3, 3)), "does not divide"},
		{"Conv", Attrs{"auto_pad": "FOO"}, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 3, 3)), "auto_pad \"FOO\""},
		{"Conv", Attrs{"pads": []int{1, 1}}, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 5, 5)), "pads has 2 values"},
		{"Conv", Attrs{"pads": []int{1, 1, 1, 1}, "auto_pad": "SAME_UPPER"}, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 5, 5)), "cannot be combined with auto_pad"},
		{"Conv", Attrs{"strides": []int{0, 1}}, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 3, 3)), "strides"},
		{"Conv", nil, shapes(sh(1, 1, 2, 2), sh(1, 1, 3, 3)), shapes(sh(1, 1, 1, 1)), "but the padded input only"},
		{"Conv", nil, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 5, 5)), "output 0 has shape [1 1 5 5]"},
		{"Conv", nil, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3), sh(2)), shapes(sh(1, 1, 3, 3)), "input 2 (B)"},
		{"Conv", Attrs{"kernel_shape": []int{2, 2}}, shapes(sh(1, 1, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 3, 3)), "kernel_shape"},
		{"Conv", nil, shapes(sh(1, 1, 0, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 3, 3)), "at least 1"},
		{"Conv", nil, shapes(sh(1, 1, 2, 2, 5, 5), sh(1, 1, 1, 1, 3, 3)), shapes(sh(1, 1, 2, 2, 3, 3)), "or 5 (N,C,D,H,W)"},
		{"Conv", nil, shapes(sh(1, 1, 2, 5, 5), sh(1, 1, 3, 3)), shapes(sh(1, 1, 2, 3, 3)), "want rank 5 like X"},
		{"MaxPool", Attrs{"kernel_shape": []int{2, 2}}, shapes(sh(1, 1, 2, 4, 4)), shapes(sh(1, 1, 1, 3, 3)), "want 3 (one per spatial dimension)"},
		{"Conv", nil, shapes(sh(1, 1, 5, 5)), shapes(sh(1, 1, 5, 5)), "1 inputs, want 2 to 4"},
		{"MaxPool", nil, shapes(sh(1, 1, 4, 4)), shapes(sh(1, 1, 2, 2)), "kernel_shape attribute is required"},
		{"MaxPool", Attrs{"kernel_shape": []int{2, 2}}, shapes(sh(1, 1, 4, 4)), shapes(sh(1, 1, 3, 3), sh(1, 1, 3, 3)), "Indices"},
		{"AveragePool", Attrs{"kernel_shape": []int{2, 2}, "ceil_mode": 2}, shapes(sh(1, 1, 4, 4)), shapes(sh(1, 1, 3, 3)), "ceil_mode 2"},
		{"GlobalAveragePool", nil, shapes(sh(2, 3)), shapes(sh(2, 3)), "want rank 3 or more"},
		{"Add", nil, shapes(sh(2, 3), sh(4)), shapes(sh(2, 3)), "do not broadcast"},
		{"Mul", nil, shapes(sh(2, 3), sh(3)), shapes(sh(3)), "output 0 has shape [3]"},
		{"Concat", Attrs{"axis": 1}, shapes(sh(2, 3), sh(3, 3)), shapes(sh(2, 6)), "differ in dimension 0"},
		{"Concat", Attrs{"axis": 2}, shapes(sh(2, 3), sh(2, 3)), shapes(sh(2, 6)), "axis 2 is out of range"},
		{"Concat", nil, shapes(sh(2, 3)), shapes(sh(2, 3)), "axis attribute is required"},
		{"Gemm", nil, shapes(sh(2, 3), sh(4, 5)), shapes(sh(2, 5)), "inner dimensions differ"},
		{"Gemm", nil, shapes(sh(2, 3), sh(3, 5), sh(3, 5)), shapes(sh(2, 5)), "does not broadcast"},
		{"Gemm", Attrs{"transA": 2}, shapes(sh(2, 3), sh(3, 5)), shapes(sh(2, 5)), "transA 2"},
		{"MatMul", nil, shapes(sh(2, 3), sh(4, 5)), shapes(sh(2, 5)), "inner dimensions differ"},
		{"MatMul", nil, shapes(sh(2, 2, 3), sh(3, 3, 5)), shapes(sh(2, 2, 5)), "do not broadcast"},
		{"Softmax", Attrs{"axis": 5}, shapes(sh(2, 3)), shapes(sh(2, 3)), "axis 5 is out of range"},
		{"BatchNormalization", nil, shapes(sh(1, 3, 2, 2), sh(2), sh(3), sh(3), sh(3)), shapes(sh(1, 3, 2, 2)), "input 1 (scale)"},
		{"Clip", nil, shapes(sh(4), sh(2), sh()), shapes(sh(4)), "must be scalars"},
		{"Reshape", nil, shapes(sh(2, 3)), shapes(sh(5)), "holds 5 elements"},
		{"Reshape", Attrs{"shape": []int{-1, -1}}, shapes(sh(2, 3)), shapes(sh(6)), "more than one -1"},
		{"Flatten", Attrs{"axis": 3}, shapes(sh(2, 3)), shapes(sh(6, 1)), "axis 3 is out of range"},
		{ReorderType, Attrs{"from": "BFYX", "to": "NHWC"}, shapes(sh(1, 2, 3, 4)), shapes(sh(1, 2, 3, 4)), "want one of"},
		{ReorderType, Attrs{"to": "BFYX"}, shapes(sh(1, 2, 3, 4)), shapes(sh(1, 2, 3, 4)), "from attribute is required"},
		{ReorderType, Attrs{"from": "BFYX", "to": "BYXF"}, shapes(sh(1, 2, 3, 4, 5)), shapes(sh(1, 2, 3, 4, 5)), "want rank 1 to 4"},
	}
	for _, c := range cases {
		t.Run(c.typ+"/"+c.want, func(t *testing.T) {
			op, ok := Lookup(c.typ)
			if !ok {
				t.Fatalf("%q not registered", c.typ)
			}
			_, err := op.Plan(c.attrs, c.in, c.out, DeviceInfo{})
			checkErr(t, "Plan", c.typ, err, c.want)
			in := make([]*HostTensor, len(c.in))
			for i, s := range c.in {
				n := 1
				for _, d := range s {
					n *= max(d, 0)
				}
				in[i] = &HostTensor{Shape: s, Data: make([]float32, n)}
			}
			_, err = op.Reference(c.attrs, in, c.out)
			checkErr(t, "Reference", c.typ, err, c.want)
		})
	}
}

func checkErr(t *testing.T, what, typ string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, want)
		return
	}
	if !strings.HasPrefix(err.Error(), typ+": ") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q, want it to start with %q and contain %q", what, err, typ+": ", want)
	}
}

// TestRunPlanRefusesBadPlans checks RunPlan's own guards, which the CLI's --check relies
// on when a plan and its inputs disagree.
func TestRunPlanRefusesBadPlans(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	op, _ := Lookup("Relu")
	plan, err := op.Plan(nil, shapes(sh(4)), shapes(sh(4)), env.dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunPlan(env.ctx, q, plan, nil, shapes(sh(4))); err == nil || !strings.Contains(err.Error(), "input 0 is not bound") {
		t.Errorf("missing input: %v", err)
	}
	if _, err := RunPlan(env.ctx, q, plan, []*HostTensor{ht(sh(4), 1, 2)}, shapes(sh(4))); err == nil || !strings.Contains(err.Error(), "2 values for shape [4]") {
		t.Errorf("short input: %v", err)
	}
	bad := *plan
	bad.Launches = []Launch{{Kernel: "no_such_kernel", Global: []int{4}}}
	if _, err := RunPlan(env.ctx, q, &bad, []*HostTensor{ht(sh(4), 1, 2, 3, 4)}, shapes(sh(4))); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Errorf("unknown kernel: %v", err)
	}
	alias := &Plan{AliasInput: 0}
	got, err := RunPlan(env.ctx, q, alias, []*HostTensor{ht(sh(2, 2), 1, 2, 3, 4)}, shapes(sh(4)))
	if err != nil || !sameShape(got[0].Shape, sh(4)) || got[0].Data[3] != 4 {
		t.Errorf("alias plan: %v %v", got, err)
	}
	if _, err := RunPlan(env.ctx, q, alias, []*HostTensor{ht(sh(2, 2), 1, 2, 3, 4)}, shapes(sh(5))); err == nil {
		t.Error("alias plan with a wrong element count: no error")
	}
}
