package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func()) string { return capture(t, &os.Stdout, f) }

const sampleDir = "../../samples/onnx_custom_op"

// runSample runs `clhost run` on the ONNX custom-op sample with config and extra flags,
// and returns the exit status, stdout and stderr.
func runSample(t *testing.T, config string, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"run", "-m", filepath.Join(sampleDir, "model.onnx"), "-d", "cpu", "-c", filepath.Join(sampleDir, config),
		"-i", filepath.Join(sampleDir, "input.npy"), "-o", t.TempDir()}, extra...)
	var code int
	var stdout string
	stderr := captureStderr(t, func() {
		stdout = captureStdout(t, func() { code = runMain(args) })
	})
	return code, stdout, stderr
}

// TestRunCheckVerdicts: --check gives every layer a verdict, says that the whole-network
// comparison took hs1 from the device, and fails only on a failed check.
func TestRunCheckVerdicts(t *testing.T) {
	t.Run("good kernel, no reference", func(t *testing.T) {
		code, out, errOut := runSample(t, "hardswish.xml", "--check")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{
			"ok  ",
			"conv1  Conv ",
			"not checked  hs1    HardSwishX (custom)  no reference: values not checked",
			"sanitizer: no findings",
			"taking the device's outputs of hs1, which this comparison therefore does not check",
			"check passed: 2 of 3 layers' values checked; not checked: hs1",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("times2 against the expected values", func(t *testing.T) {
		code, out, errOut := runSample(t, "broken/times2.xml", "--check", "--expect", "hs1="+filepath.Join(sampleDir, "h1_ref.npy"))
		if code != 1 || !strings.Contains(errOut, "check failed") {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{"MISMATCH  hs1", "expected values: h1 max abs error", "taking the expected values of hs1", "check FAILED: hs1 first"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("against a second device", func(t *testing.T) {
		code, out, errOut := runSample(t, "hardswish.xml", "--check-device", "cpu")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{"ok  conv1  Conv ", "ok  hs1    HardSwishX (custom)  on ", ": h1 max abs error 0, max rel error 0", "ok  pool1  MaxPool ", "check passed: 3 of 3 layers' values checked"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("half the work items", func(t *testing.T) {
		code, out, errOut := runSample(t, "broken/half_global.xml", "--sanitize")
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
		}
		if want := "hs1: 3,072 of 6,144 elements of output 0 never written; first [0,4,0,0] (kernel hardswish, "; !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	})
}

// TestRunCheckFlagErrors: flag mistakes and an output path that is a file fail at once,
// before a device is opened.
func TestRunCheckFlagErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-o", file}, 1, "output folder " + file + ": a file of that name exists"},
		{[]string{"-o", dir, "--expect", "h1"}, 2, "--expect h1: want NAME=FILE.npy"},
		{[]string{"-o", dir, "--expect", "h1=" + filepath.Join(dir, "none.npy")}, 1, "none.npy"},
		{[]string{"-o", dir, "--expect", "nosuch=" + filepath.Join(sampleDir, "h1_ref.npy")}, 1, `--expect: expected tensor "nosuch": no tensor or single-output layer of that name`},
		{[]string{"-o", dir, "--expect", "y=" + filepath.Join(sampleDir, "h1_ref.npy")}, 1, `the reference has shape [1 8 24 32], the tensor [1 8 12 16]`},
	}
	for _, c := range cases {
		args := append([]string{"run", "-m", filepath.Join(sampleDir, "model.onnx"), "-d", "cpu", "-c", filepath.Join(sampleDir, "hardswish.xml")}, c.args...)
		var code int
		errOut := captureStderr(t, func() { code = runMain(args) })
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("clhost %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), code, errOut, c.code, c.want)
		}
		if c.code != 0 && strings.Contains(c.want, "output folder") && strings.Contains(errOut, "using device") {
			t.Errorf("the output folder was checked after the device was opened:\n%s", errOut)
		}
	}
}

// TestRunLayerTypeHints: a type no configuration defines gets the -c hint; one whose
// name differs only in case from a loaded layer gets "did you mean" instead.
func TestRunLayerTypeHints(t *testing.T) {
	dir := t.TempDir()
	kernel, err := filepath.Abs(filepath.Join(sampleDir, "hardswish.cl"))
	if err != nil {
		t.Fatal(err)
	}
	xml := filepath.Join(dir, "hs.xml")
	text := `<CustomLayer name="HardSwishx" type="SimpleGPU" version="1">
  <Kernel entry="hardswish"><Source filename="` + kernel + `"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>`
	if err := os.WriteFile(xml, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(sampleDir, "model.onnx")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", xml}, `no implementation for layer type "HardSwishX" (layer "hs1"): did you mean "HardSwishx" (` + xml + `:1)?`},
		{nil, "(load a custom-layer configuration that defines them with -c FILE.xml)"},
	} {
		args := append([]string{"run", "-m", model, "-d", "cpu", "-o", dir}, c.args...)
		var code int
		errOut := captureStderr(t, func() { code = runMain(args) })
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("clhost %s: exit %d, stderr %q; want exit 1 and %q", strings.Join(args, " "), code, errOut, c.want)
		}
	}
}

// TestJitRunAlone: `clhost jit --run` runs one custom layer on given data, without a
// model, under the sanitizer and against the expected output.
func TestJitRunAlone(t *testing.T) {
	for _, c := range []struct {
		config string
		code   int
		want   string
	}{
		{"hardswish.xml", 0, "ok  hs1  HardSwishX (custom)  expected values: output0 max abs error"},
		{"broken/times2.xml", 1, "MISMATCH  hs1  HardSwishX (custom)  expected values: output0 max abs error 21.9"},
	} {
		args := []string{"jit", "-c", filepath.Join(sampleDir, c.config), "-l", "HardSwishX", "--name", "hs1", "--output", "1x8x24x32",
			"--param", "alpha=0.16666667", "--param", "beta=0.5", "-d", "cpu", "--run",
			"--input-data", filepath.Join(sampleDir, "c1_ref.npy"), "--expect", filepath.Join(sampleDir, "h1_ref.npy")}
		var code int
		var out string
		errOut := captureStderr(t, func() { out = captureStdout(t, func() { code = runMain(args) }) })
		if code != c.code || !strings.Contains(out, c.want) || !strings.Contains(out, "sanitizer: no findings") {
			t.Errorf("%s: exit %d (want %d), stdout lacks %q or the sanitizer's line:\n%s\n%s", c.config, code, c.code, c.want, out, errOut)
		}
	}
}
