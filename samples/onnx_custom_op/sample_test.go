package onnxcustomop

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

func readNpy(t *testing.T, path string) *host.Tensor {
	t.Helper()
	a, err := tensorio.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &host.Tensor{Shape: a.Shape, Data: a.Data}
}

// check runs model.onnx with config under Check (sanitizer on, h1 expected to be
// numpy's value) and returns the report and its text.
func check(t *testing.T, config string) (*host.CheckReport, map[string]*host.Tensor, string) {
	t.Helper()
	m, err := host.LoadModel("model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	dev := "cpu"
	if d := os.Getenv("CLHOST_TEST_DEVICE"); d != "" {
		dev = d
	}
	e, err := host.NewEngine(host.Options{Device: dev, NoGlobalConfig: true, Configs: []string{config}, KeepIntermediates: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*host.Tensor{"x": readNpy(t, "input.npy")}
	r, outs, err := n.Check(context.Background(), in, host.CheckOptions{Sanitize: true, Expect: map[string]*host.Tensor{"hs1": readNpy(t, "h1_ref.npy")}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	return r, outs, b.String()
}

func layer(r *host.CheckReport, name string) *host.LayerCheck {
	for i := range r.Layers {
		if r.Layers[i].Layer == name {
			return &r.Layers[i]
		}
	}
	return nil
}

func TestGoodKernel(t *testing.T) {
	r, outs, text := check(t, "hardswish.xml")
	if r.Failed() {
		t.Fatalf("the good kernel fails its check:\n%s", text)
	}
	if hs := layer(r, "hs1"); hs == nil || !hs.ValuesChecked() || !hs.Sanitized {
		t.Fatalf("hs1 not checked against its expected values and sanitized:\n%s", text)
	}
	// The graph output against numpy's, independently of the report.
	want := readNpy(t, "y_ref.npy")
	got := outs["y"]
	if got == nil || len(got.Data) != len(want.Data) {
		t.Fatalf("output y: %v", got)
	}
	for i := range want.Data {
		if d := math.Abs(float64(got.Data[i] - want.Data[i])); d > 1e-4*(1+math.Abs(float64(want.Data[i]))) {
			t.Fatalf("y[%d] = %g, numpy %g", i, got.Data[i], want.Data[i])
		}
	}
}

func TestBrokenKernels(t *testing.T) {
	t.Run("times2", func(t *testing.T) {
		r, _, text := check(t, "broken/times2.xml")
		hs := layer(r, "hs1")
		if !r.Failed() || hs == nil || hs.Verdict() != "MISMATCH" {
			t.Fatalf("x*2 is not a mismatch at hs1:\n%s", text)
		}
		if !strings.Contains(text, "check FAILED: hs1") {
			t.Errorf("the summary does not name hs1 first:\n%s", text)
		}
	})
	t.Run("half_global", func(t *testing.T) {
		r, _, text := check(t, "broken/half_global.xml")
		f := r.Findings()
		if len(f) == 0 || f[0].Kind != host.Unwritten {
			t.Fatalf("no unwritten-output finding:\n%s", text)
		}
		if want := "hs1: 3,072 of 6,144 elements of output 0 never written; first [0,4,0,0] (kernel hardswish, broken/half_global.xml:3, global 32,24,4"; !strings.HasPrefix(f[0].String(), want) {
			t.Errorf("finding %q, want it to start %q", f[0], want)
		}
	})
}
