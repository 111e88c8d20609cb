package builtinkernels

import (
	"strings"
	"testing"
)

// The cases of reduce.go's and norm.go's ops in the one harness (TestOpsMatchReference).
func init() {
	x := sh(4, 4, 6, 8)
	red := func(name, typ string, attrs Attrs, out []int, gen string) opCase {
		return opCase{name: name, typ: typ, attrs: attrs, in: shapes(x), out: shapes(out), gen: gen}
	}
	opCases = append(opCases,
		red("axis1_drop", "ReduceSum", Attrs{"axes": []int{1}, "keepdims": 0}, sh(4, 6, 8), "r"),
		red("axes_1_3_apart", "ReduceMean", Attrs{"axes": []int{1, 3}}, sh(4, 1, 6, 1), "r"),
		red("all_axes_scalar", "ReduceMax", Attrs{"keepdims": 0}, []int{}, "w"),
		red("last_axis", "ReduceMin", Attrs{"axes": []int{-1}}, sh(4, 4, 6, 1), "w"),
		red("axis0", "ReduceProd", Attrs{"axes": []int{0}}, sh(1, 4, 6, 8), "p"),
		red("inner_plane", "ReduceL1", Attrs{"axes": []int{2, 3}}, sh(4, 4, 1, 1), "r"),
		red("axis2", "ReduceL2", Attrs{"axes": []int{2}}, sh(4, 4, 1, 8), "r"),
		red("axes_0_2", "ReduceSumSquare", Attrs{"axes": []int{0, 2}, "keepdims": 0}, sh(4, 8), "r"),
		red("axis3", "ReduceLogSum", Attrs{"axes": []int{3}}, sh(4, 4, 6, 1), "p"),
		red("axis1", "ReduceLogSumExp", Attrs{"axes": []int{1}}, sh(4, 1, 6, 8), "w"),
		red("noop_empty_axes", "ReduceSum", Attrs{"noop_with_empty_axes": 1}, x, "r"),
		red("axis2", "ArgMax", Attrs{"axis": 2}, sh(4, 4, 1, 8), "w"),
		// 0/1 inputs tie: select_last_index picks the last of the maxima, else the first.
		red("ties_last", "ArgMax", Attrs{"axis": -1, "keepdims": 0, "select_last_index": 1}, sh(4, 4, 6), "b"),
		red("ties_first", "ArgMin", Attrs{"axis": 1}, sh(4, 1, 6, 8), "b"),
		opCase{name: "axis1", typ: "LogSoftmax", attrs: Attrs{"axis": 1}, in: shapes(x), out: shapes(x), gen: "w"},
		opCase{name: "last_axis", typ: "LogSoftmax", attrs: Attrs{"axis": -1}, in: shapes(x), out: shapes(x), gen: "w"},
		opCase{name: "axis0_ties", typ: "Hardmax", attrs: Attrs{"axis": 0}, in: shapes(x), out: shapes(x), gen: "b"},
		opCase{name: "axis2", typ: "Hardmax", attrs: Attrs{"axis": 2}, in: shapes(x), out: shapes(x), gen: "w"},
		opCase{name: "last_axis_bias", typ: layerNormType, in: shapes(sh(4, 6, 8), sh(8), sh(8)), out: shapes(sh(4, 6, 8)), gen: "wrr"},
		opCase{name: "axis1_no_bias", typ: layerNormType, attrs: Attrs{"axis": 1, "epsilon": 1e-3}, in: shapes(sh(2, 3, 4, 5), sh(3, 4, 5)), out: shapes(sh(2, 3, 4, 5)), gen: "wr"},
		opCase{name: "one_scale", typ: layerNormType, attrs: Attrs{"axis": -2}, in: shapes(sh(2, 3, 4, 5), sh(1), sh(4, 5)), out: shapes(sh(2, 3, 4, 5)), gen: "wrr"},
		opCase{name: "nchw", typ: instanceNormType, in: shapes(sh(2, 3, 4, 5), sh(3), sh(3)), out: shapes(sh(2, 3, 4, 5)), gen: "wrr"},
		opCase{name: "default_axes", typ: mvnType, in: shapes(sh(3, 4, 5, 6)), out: shapes(sh(3, 4, 5, 6)), gen: "w"},
		opCase{name: "axes_1_3", typ: mvnType, attrs: Attrs{"axes": []int{1, 3}}, in: shapes(sh(3, 4, 5, 6)), out: shapes(sh(3, 4, 5, 6)), gen: "w"},
		opCase{name: "size3", typ: "LRN", attrs: Attrs{"size": 3, "alpha": 0.02, "beta": 0.6, "bias": 2.0}, in: shapes(sh(2, 5, 3, 4)), out: shapes(sh(2, 5, 3, 4)), gen: "w"},
		opCase{name: "size4_defaults", typ: "LRN", attrs: Attrs{"size": 4}, in: shapes(sh(2, 5, 3, 4)), out: shapes(sh(2, 5, 3, 4)), gen: "w"},
	)
}

// TestLayerNormStatistics runs LayerNormalization with its Mean and InvStdDev outputs,
// which the harness's single-output table does not reach, against the reference.
func TestLayerNormStatistics(t *testing.T) {
	t.Parallel()
	env, q := deviceEnvQueue(t)
	c := opCase{name: "stats", typ: layerNormType, attrs: Attrs{"axis": 1}, in: shapes(sh(3, 4, 5), sh(4, 5), sh(4, 5)), gen: "wrr",
		out: shapes(sh(3, 4, 5), sh(3, 1, 1), sh(3, 1, 1))}
	op, _ := Lookup(c.typ)
	plan, err := op.Plan(c.attrs, c.in, c.out, env.dev)
	if err != nil {
		t.Fatal(err)
	}
	in := c.inputs()
	want, err := op.Reference(c.attrs, in, c.out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunPlan(env.ctx, q, plan, in, c.out)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Y", "Mean", "InvStdDev"} {
		compare(t, name, got[i], want[i])
	}
	if _, err := op.Plan(c.attrs, c.in, c.out[:2], env.dev); err == nil {
		t.Error("Y and Mean without InvStdDev: no error")
	}
}

// TestRowGroupPlans: on GPUs, LayerNormalization, InstanceNormalization and Softmax along
// the last axis give each row a work-group (reduce.cl's *_wg kernels). Their plans for a
// made-up GPU run here against the reference, with rows shorter than, equal to and several
// times the group, and one not a multiple of it; a CPU keeps a work-item per row.
func TestRowGroupPlans(t *testing.T) {
	t.Parallel()
	env := deviceEnv(t)
	gpu := DeviceInfo{IsGPU: true, ComputeUnits: 4, MaxWorkGroupSize: 256, LocalMemBytes: 1 << 14}
	cases := []struct {
		c      opCase
		kernel string
	}{
		{opCase{name: "ln 197", typ: layerNormType, in: shapes(sh(3, 197), sh(197), sh(197)), out: shapes(sh(3, 197)), gen: "wrr"}, "layernorm_wg"},
		{opCase{name: "ln 768 one scale no bias", typ: layerNormType, in: shapes(sh(2, 2, 768), sh(1)), out: shapes(sh(2, 2, 768)), gen: "wr"}, "layernorm_wg"},
		{opCase{name: "ln 32", typ: layerNormType, attrs: Attrs{"axis": 1}, in: shapes(sh(5, 2, 16), sh(2, 16), sh(1)), out: shapes(sh(5, 2, 16)), gen: "wrr"}, "layernorm_wg"},
		{opCase{name: "in 7x9", typ: instanceNormType, in: shapes(sh(2, 3, 7, 9), sh(3), sh(3)), out: shapes(sh(2, 3, 7, 9)), gen: "wrr"}, "instancenorm_wg"},
		{opCase{name: "softmax 197", typ: "Softmax", in: shapes(sh(2, 3, 197)), out: shapes(sh(2, 3, 197)), gen: "w"}, "softmax_wg"},
		{opCase{name: "softmax 600", typ: "Softmax", attrs: Attrs{"axis": 1}, in: shapes(sh(2, 600)), out: shapes(sh(2, 600)), gen: "w"}, "softmax_wg"},
		{opCase{name: "softmax inner axis", typ: "Softmax", attrs: Attrs{"axis": 1}, in: shapes(sh(2, 40, 3)), out: shapes(sh(2, 40, 3)), gen: "w"}, "softmax"},
		{opCase{name: "ln short rows", typ: layerNormType, in: shapes(sh(4, 31), sh(31)), out: shapes(sh(4, 31)), gen: "wr"}, "layernorm"},
	}
	for _, tc := range cases {
		c := tc.c
		if k := runOpCase(t, env, c, gpu).Launches[0].Kernel; k != tc.kernel {
			t.Errorf("%s: GPU plan runs %s, want %s", c.name, k, tc.kernel)
		}
		op, _ := Lookup(c.typ)
		cpu, err := op.Plan(c.attrs, c.in, c.out, DeviceInfo{ComputeUnits: 2, MaxWorkGroupSize: 4096})
		if err != nil {
			t.Fatalf("%s: CPU plan: %v", c.name, err)
		}
		if k := cpu.Launches[0].Kernel; strings.HasSuffix(k, "_wg") {
			t.Errorf("%s: CPU plan runs %s, want a work-item per row", c.name, k)
		}
	}
}
