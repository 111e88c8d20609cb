package main

// OpenVINO IR through the commands: -m model.xml with the .bin beside it or named by
// --weights, for convert, run, inspect, validate and bench.

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/tensorio"
)

const irData = "../../internal/openvino/testdata"

// irElsewhere copies an IR's .xml alone into a folder and its .bin under another name, so
// only --weights finds it.
func irElsewhere(t *testing.T, name string) (xml, bin string) {
	t.Helper()
	dir := t.TempDir()
	x, err := os.ReadFile(filepath.Join(irData, name+".xml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(irData, name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	xml, bin = filepath.Join(dir, "net.xml"), filepath.Join(dir, "weights.data")
	if err := os.WriteFile(xml, x, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return xml, bin
}

func TestIRConvert(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ssd.clm")
	if code := runMain([]string{"convert", "-m", filepath.Join(irData, "ssd_head.xml"), "-o", out}); code != 0 {
		t.Fatalf("exited %d", code)
	}
	m, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Outputs, " ") != "mbox_loc mbox_conf mbox_priorbox" {
		t.Errorf("outputs %q", m.Outputs)
	}
	// Without its weights the conversion fails; with --weights it finds them.
	xml, bin := irElsewhere(t, "ssd_head")
	if code := runMain([]string{"convert", "-m", xml, "-o", out}); code != 1 {
		t.Errorf("without the .bin: exit %d, want 1", code)
	}
	if code := runMain([]string{"convert", "-m", xml, "--weights", bin, "-o", out}); code != 0 {
		t.Errorf("with --weights: exit %d", code)
	}
	// An extension op converts once its configuration is given.
	custom := filepath.Join(irData, "custom.xml")
	if code := runMain([]string{"convert", "-m", custom, "-o", out}); code != 1 {
		t.Errorf("custom op without -c: exit %d, want 1", code)
	}
	if code := runMain([]string{"convert", "-c", filepath.Join(irData, "scaleshift", "scaleshift.xml"), "-m", custom, "-o", out}); code != 0 {
		t.Errorf("custom op with -c: exit %d", code)
	}
}

// TestIRRunCommand: `clhost run -m classifier.xml --weights ... -i input.npy` takes the
// dynamic batch from the input file and writes what PyTorch computes.
func TestIRRunCommand(t *testing.T) {
	xml, bin := irElsewhere(t, "classifier")
	out := t.TempDir()
	args := []string{"run", "-m", xml, "--weights", bin, "-d", "cpu", "--quiet", "--cache-dir", "", "-i", filepath.Join(irData, "classifier_input.npy"), "-o", out}
	if code := runMain(args); code != 0 {
		t.Fatalf("exited %d", code)
	}
	got, err := tensorio.ReadFile(filepath.Join(out, "probs.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := tensorio.ReadFile(filepath.Join(irData, "classifier_probs.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != len(want.Data) || got.Shape[0] != 2 {
		t.Fatalf("probs %v, want %v", got.Shape, want.Shape)
	}
	for i := range want.Data {
		if math.Abs(float64(got.Data[i]-want.Data[i])) > 2e-5 {
			t.Fatalf("probs[%d] = %g, want %g", i, got.Data[i], want.Data[i])
		}
	}
}

func TestIRInspectValidateBench(t *testing.T) {
	xml, bin := irElsewhere(t, "ssd_head")
	if code := runMain([]string{"inspect", "-m", xml, "--weights", bin}); code != 0 {
		t.Errorf("inspect exited %d", code)
	}
	cfg := filepath.Join(irData, "scaleshift", "scaleshift.xml")
	if code := runMain([]string{"validate", "--no-build", "-c", cfg, "-m", filepath.Join(irData, "custom.xml")}); code != 0 {
		t.Errorf("validate exited %d", code)
	}
	if code := runMain([]string{"bench", "-m", xml, "--weights", bin, "-d", "cpu", "-n", "2", "--warmup", "1", "--quiet", "--cache-dir", "", "--layers=false", "--tune=false"}); code != 0 {
		t.Errorf("bench exited %d", code)
	}
}

// TestIRInspectUnknownOp: inspect shows an IR whose extension op has no configuration yet,
// as it shows an ONNX model's unknown node; run still refuses it, naming what to write.
func TestIRInspectUnknownOp(t *testing.T) {
	custom := filepath.Join(irData, "custom.xml")
	var code int
	out := captureStdout(t, func() { code = runMain([]string{"inspect", "-m", custom}) })
	if code != 0 || !strings.Contains(out, "ScaleShift") {
		t.Errorf("inspect without -c: exit %d\n%s", code, out)
	}
	s := captureStderr(t, func() {
		code = runMain([]string{"run", "-m", custom, "-d", "cpu", "--quiet", "--cache-dir", "", "-o", t.TempDir()})
	})
	if code != 1 || !strings.Contains(s, "no built-in op and no custom layer for ScaleShift") {
		t.Errorf("run without -c: exit %d\n%s", code, s)
	}
}
