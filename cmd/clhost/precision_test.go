package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/tensorio"
)

// TestPrecisionFlag: --precision is a flag of run, bench, serve and tune; fp16 runs with
// half storage and agrees with fp32; tf32 on a device without tensor cores runs fp32,
// says so once and gives fp32's values bit for bit.
func TestPrecisionFlag(t *testing.T) {
	for _, cmd := range []string{"run", "bench", "serve", "tune"} {
		var code int
		out := captureStderr(t, func() { code = runMain([]string{cmd, "--precision", "fp64"}) })
		if code != 2 || !strings.Contains(out, `unknown precision "fp64" (want fp32, tf32 or fp16)`) {
			t.Errorf("clhost %s --precision fp64: exit %d, stderr %q; want exit 2 naming the precisions", cmd, code, out)
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "x.npy")
	x := make([]float32, 2*3*4*4)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	if err := tensorio.WriteFile(in, []int{2, 3, 4, 4}, x); err != nil {
		t.Fatal(err)
	}
	outputs := map[string][]float32{}
	for _, p := range []string{"fp32", "fp16", "tf32"} {
		o := filepath.Join(dir, p)
		var code int
		log := captureStderr(t, func() {
			code = runMain([]string{"run", "-m", dynamicONNX, "-d", "cpu", "-i", in, "-o", o, "--precision", p, "--cache-dir", ""})
		})
		if code != 0 {
			t.Fatalf("--precision %s: exit %d: %s", p, code, log)
		}
		switch p {
		case "fp16":
			if !strings.Contains(log, "precision fp16: ") {
				t.Errorf("--precision fp16: the log does not say what stores half:\n%s", log)
			}
		case "tf32":
			if strings.Count(log, "precision tf32: ") != 1 || !strings.Contains(log, "the fp32 kernels run") {
				t.Errorf("--precision tf32 on a CPU: the log does not say once that fp32 runs:\n%s", log)
			}
		}
		a, err := tensorio.ReadFile(filepath.Join(o, "y.npy"))
		if err != nil {
			t.Fatal(err)
		}
		outputs[p] = a.Data
	}
	want := outputs["fp32"]
	var d, ref float64
	for i, v := range want {
		if math.Float32bits(outputs["tf32"][i]) != math.Float32bits(v) {
			t.Fatalf("tf32 falling back to fp32: y[%d] = %v, fp32 %v", i, outputs["tf32"][i], v)
		}
		d = math.Max(d, math.Abs(float64(outputs["fp16"][i]-v)))
		ref = math.Max(ref, math.Abs(float64(v)))
	}
	if d > 1e-2*ref {
		t.Errorf("fp16 against fp32: max error %g of max %g", d, ref)
	}
}
