package builtinkernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clhost/clhost/internal/opspec"
)

// TestElementwiseTable: each row is one layer type (or an internal building block), and
// the generated programs carry each row's expression once.
func TestElementwiseTable(t *testing.T) {
	names := map[string]bool{}
	for _, f := range unaryFns {
		if names[f.name] {
			t.Errorf("unary row %s twice", f.name)
		}
		names[f.name] = true
		if _, ok := Lookup(f.name); ok == f.internal {
			t.Errorf("unary row %s: internal %v, registered %v", f.name, f.internal, ok)
		}
		if !f.internal && (f.ref == nil || f.attrs == nil) {
			t.Errorf("unary row %s lacks its reference or attributes", f.name)
		}
	}
	for _, f := range binaryFns {
		if _, ok := Lookup(f.name); ok == f.internal && f.name != "Max" && f.name != "Min" {
			t.Errorf("binary row %s: internal %v, registered %v", f.name, f.internal, ok)
		}
	}
	math, err := mathSource()
	if err != nil {
		t.Fatal(err)
	}
	ew, err := elementwiseSource()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range unaryFns {
		if c := fmt.Sprintf("case %d: return (%s); /* %s */", i, f.cl, f.name); strings.Count(math, c) != 1 {
			t.Errorf("math.cl lacks %q", c)
		}
		if k := fmt.Sprintf("UNARY(%s, %s)\n", f.kernel, f.cl); f.kernel != "" && strings.Count(ew, k) != 1 {
			t.Errorf("elementwise.cl lacks %q", k)
		}
	}
	for i, f := range binaryFns {
		if c := fmt.Sprintf("case %d: return (%s); /* %s */", i, f.cl, f.name); strings.Count(math, c) != 1 {
			t.Errorf("math.cl lacks %q", c)
		}
	}
	if strings.Contains(math, "@unary_f@") || strings.Contains(math, "@binary_f@") {
		t.Error("math.cl keeps a marker")
	}
}

// TestFusedActivationIsTheLayer: a fused activation computes what the layer of that type
// computes, on the CPU and in its OpenCL text, since both come from one row.
func TestFusedActivationIsTheLayer(t *testing.T) {
	attrs := map[string]Attrs{
		opspec.ActLeakyRelu: {opspec.FusedAlphaAttr: float32(0.2)},
		opspec.ActClip:      {opspec.FusedMinAttr: float32(-1), opspec.FusedMaxAttr: float32(3)},
	}
	layer := map[string]Attrs{
		opspec.ActLeakyRelu: {"alpha": float32(0.2)},
		opspec.ActClip:      {"min": float32(-1), "max": float32(3)},
	}
	xs := []float32{-7, -1.5, -0.25, 0, 0.3, 2, 9}
	for _, kind := range FusedActivations() {
		if kind == opspec.ActNone {
			continue
		}
		p := Attrs{opspec.FusedActivationAttr: kind}
		for k, v := range attrs[kind] {
			p[k] = v
		}
		act, err := readFusedAct("Conv", p)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		op, ok := Lookup(kind)
		if !ok {
			t.Fatalf("%s is no layer type", kind)
		}
		ref, err := op.Reference(layer[kind], []*HostTensor{{Shape: sh(len(xs)), Data: xs}}, shapes(sh(len(xs))))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for i, x := range xs {
			if got := float32(act.apply(float64(x))); got != ref[0].Data[i] {
				t.Errorf("%s(%v): fused %v, layer %v", kind, x, got, ref[0].Data[i])
			}
		}
		// Without parameters the fused text is the row's, operand and all.
		if row, _ := unaryRow(kind); kind == opspec.ActSigmoid || kind == opspec.ActRelu {
			if want := "(" + strings.ReplaceAll(row.cl, "v", "(x)") + ")"; act.expr("x") != want {
				t.Errorf("%s: fused text %q, want %q", kind, act.expr("x"), want)
			}
		}
	}
}
