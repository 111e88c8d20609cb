package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	reluXML   = filepath.Join("..", "..", "customlayer", "testdata", "relu", "custom_layer_example.xml")
	globalXML = filepath.Join("..", "..", "customlayer", "testdata", "global", "cldnn_global_custom_kernels.xml")
)

// writeConfig writes files (name → content) into a fresh folder and returns its path.
func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidateTable(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runValidate([]string{"--no-build", "-c", reluXML, "-c", globalXML}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	header := lines[0]
	for _, col := range []string{"TYPE", "ENTRY", "SOURCES", "BUFFERS", "DEFINES", "WORK SIZES", "OPTIONS", "ORIGIN"} {
		if !strings.Contains(header, col) {
			t.Errorf("header lacks %s: %q", col, header)
		}
	}
	wantRows := [][]string{
		{"ReLU", "example_relu_kernel", "custom_layer_kernel.cl", "0:input0 BFYX, 1:output0 BFYX", `neg_slope float param=negative_slope default="0.0"`, "global=X,Y,B*F local=driver dim=output", "-cl-mad-enable", reluXML + ":1"},
		{"PriorBoxStyle", "prior_box_style", "0:input0 ANY, 1:output0 ANY", `VARIANCE float[] param=variance default="0.1"`, "TILE 16", "global=Y,((X + 31)/32)*32 local=1,32 dim=input 0", "-cl-mad-enable -cl-fast-relaxed-math", globalXML + ":5"},
		{"Grn", "grn_GPU"},
		{"ScaleWithData", `1:data "weights"`, "2:output0 BYXF", "global=B*F*Y*X"},
	}
	for i, want := range wantRows {
		row := lines[i+1]
		for _, cell := range want {
			if !strings.Contains(row, cell) {
				t.Errorf("row %d lacks %q:\n%s", i+1, cell, row)
			}
		}
	}
	if !strings.Contains(out.String(), "XML: 4 custom layer(s) from 2 file(s): ") || !strings.HasSuffix(out.String(), "\nok\n") {
		t.Errorf("no summary:\n%s", out.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
}

func TestValidateOverride(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"k.cl": "__kernel void mine(__global float* a, __global float* b) {}\n",
		"mine.xml": `<CustomLayer name="ReLU" type="SimpleGPU" version="1">
  <Kernel entry="mine"><Source filename="k.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>`,
	})
	mine := filepath.Join(dir, "mine.xml")
	var out, errOut bytes.Buffer
	if err := runValidate([]string{"--no-build", "-c", reluXML, "-c", mine}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	note := `clhost: custom layer "ReLU" from ` + mine + `:1 replaces the one from ` + reluXML + ":1\n"
	if errOut.String() != note {
		t.Errorf("stderr %q, want %q", errOut.String(), note)
	}
	if strings.Count(out.String(), "ReLU") != 1 || !strings.Contains(out.String(), "mine") || strings.Contains(out.String(), "example_relu_kernel") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestValidateReportsEverything(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"bad.xml": `<CustomLayer name="ReLU" type="SimpleGPU" version="1">
  <Kernel entry="k"><Source filename="gone.cl"/></Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0"/>
    <Tensor arg-index="0" type="output" port-index="0"/>
  </Buffers>
  <WorkSizes global="X,Y,F,B"/>
</CustomLayer>`,
		"broken.xml": "<CustomLayer>\n<Kernel>\n",
	})
	bad, broken := filepath.Join(dir, "bad.xml"), filepath.Join(dir, "broken.xml")
	var out, errOut bytes.Buffer
	err := runValidate([]string{"-c", bad, "-c", broken}, &out, &errOut)
	if err == nil {
		t.Fatal("no error")
	}
	if errors.As(err, new(usageError)) {
		t.Error("a bad file is a failure (exit 1), not a usage error")
	}
	want := "5 problems in the custom-layer configuration:\n" +
		bad + `:2: layer "ReLU": Source "gone.cl": cannot read ` + filepath.Join(dir, "gone.cl") + ": no such file or directory\n" +
		bad + `:5: layer "ReLU": Tensor #2: arg-index 0 is already used by Tensor #1` + "\n" +
		bad + `:3: layer "ReLU": Buffers: gap in the arg-index sequence: no buffer has arg-index 1 (the 2 buffers must use 0 to 1)` + "\n" +
		bad + `:7: layer "ReLU": WorkSizes: global: formula "X,Y,F,B": 4 entries, at most 3 are allowed` + "\n" +
		broken + ":3: malformed XML: unexpected EOF"
	if err.Error() != want {
		t.Errorf("got:\n%s\nwant:\n%s", err, want)
	}
	if out.Len() != 0 {
		t.Errorf("table printed despite errors:\n%s", out.String())
	}
}

func TestValidateHostileFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"empty.xml":   nil,
		"garbage.xml": {0x7f, 'E', 'L', 'F', 0, 0, 1, 2, 0xff, 0xfe, '<', '>'},
		"deep.xml":    []byte(strings.Repeat("<a>", 200000) + strings.Repeat("</a>", 200000)),
		"big.xml":     bytes.Repeat([]byte("<CustomLayer name=\"x\">"), 500000), // ~11 MB
		"dir.xml":     nil,
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if name == "dir.xml" {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		var out, errOut bytes.Buffer
		err := runValidate([]string{"-c", filepath.Join(dir, name)}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if code := runMain([]string{"validate", "-c", filepath.Join(dir, "garbage.xml")}); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

func TestValidateUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runValidate(nil, &out, &errOut); !errors.As(err, new(usageError)) {
		t.Errorf("no -c: %v", err)
	}
	if err := runValidate([]string{"-x"}, &out, &errOut); !errors.As(err, new(usageError)) {
		t.Errorf("bad flag: %v", err)
	}
	if code := runMain([]string{"validate"}); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if code := runMain([]string{"validate", "-c", reluXML}); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}
