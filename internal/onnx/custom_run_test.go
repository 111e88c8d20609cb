package onnx_test

// The custom-domain operator of testdata/custom.onnx run end to end on the OpenCL CPU
// device: imported, bound to the kernel of testdata/scaleshift by its XML (Data from the
// node's initializers, defines from its list and int attributes), compiled and run next to
// the built-in Relu that follows it.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/internal/onnx"
)

func TestCustomOpRuns(t *testing.T) {
	m, err := onnx.Load(filepath.Join("testdata", "custom.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// Without a configuration the runtime has nothing to run ScaleShift with.
	bare, err := host.NewEngine(host.Options{Device: "cpu", NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := bare.Compile(m); err == nil || !strings.Contains(err.Error(), "ScaleShift") {
		t.Errorf("compiling without a config: %v", err)
	}

	e, err := host.NewEngine(host.Options{Device: "cpu", NoGlobalConfig: true,
		Configs: []string{filepath.Join("testdata", "scaleshift", "scaleshift.xml")}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, -2, 3, 0.5, -10, 4, 0, 2, 1.5, -3, 0.25, -8}
	out, err := n.Infer(context.Background(), map[string]*host.Tensor{"x": {Shape: []int{1, 3, 2, 2}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	// scale (0.5, 1, 2) and shift (-1, 0, 1) per channel, weights (0.5, 1.5), count 3:
	// z = max(0, (x·scale + shift)·0.5 + 4.5).
	want := []float32{
		4.25, 3.5, 4.75, 4.125, // (0.25·x - 0.5) + 4.5
		0, 6.5, 4.5, 5.5, // 0.5·x + 4.5
		6.5, 2, 5.25, 0, // (x + 0.5) + 4.5
	}
	z := out["z"]
	if z == nil || len(z.Data) != len(want) {
		t.Fatalf("output z: %+v", z)
	}
	for i := range want {
		if d := z.Data[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Errorf("z[%d] = %g, want %g", i, z.Data[i], want[i])
		}
	}
}
