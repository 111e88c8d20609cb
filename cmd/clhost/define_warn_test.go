package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefineDefaultWarning: a Define whose param the layer lacks while its default is
// used (a misspelled param) is warned about by validate -m and by run, naming the nearest
// attribute the layer carries; neither fails over it.
func TestDefineDefaultWarning(t *testing.T) {
	kernel, err := filepath.Abs(filepath.Join(sampleDir, "hardswish.cl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]string{"hs.xml": `<CustomLayer name="HardSwishX" type="SimpleGPU" version="1">
  <Kernel entry="hardswish">
    <Source filename="` + kernel + `"/>
    <Define name="ALPHA" type="float" param="alpah" default="0.2"/>
    <Define name="BETA" type="float" param="beta"/>
  </Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>`})
	xml := filepath.Join(dir, "hs.xml")
	model := filepath.Join(sampleDir, "model.onnx")
	want := `layer "hs1" (HardSwishX): Define "ALPHA" (` + xml + `:4): param "alpah" is not an attribute of the layer; the default 0.2 is used (did you mean "alpha"?)`

	var out, errOut bytes.Buffer
	if err := runValidate([]string{"--no-build", "-c", xml, "-m", model}, &out, &errOut); err != nil {
		t.Fatalf("validate: %v\n%s", err, out.String())
	}
	if c := strings.Count(errOut.String(), want); c != 1 {
		t.Errorf("validate -m: the warning appears %d times, want once; stderr:\n%s", c, errOut.String())
	}

	var code int
	stderr := captureStderr(t, func() {
		code = runMain([]string{"run", "-m", model, "-d", "cpu", "-c", xml, "-o", t.TempDir(), "--quiet"})
	})
	if code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, stderr)
	}
	if c := strings.Count(stderr, want); c != 1 {
		t.Errorf("run: the warning appears %d times, want once; stderr:\n%s", c, stderr)
	}
}
