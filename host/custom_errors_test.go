package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNearMissLayerType: a model type that differs from a loaded custom layer's name only
// in case gets "did you mean" with the XML file:line, and the library's error names no
// command-line flag.
func TestNearMissLayerType(t *testing.T) {
	ctParallel(t)
	kernel, err := filepath.Abs("../samples/onnx_custom_op/hardswish.cl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	xml := filepath.Join(dir, "hs.xml")
	text := `<CustomLayers>
<CustomLayer name="HardSwishx" type="SimpleGPU" version="1">
  <Kernel entry="hardswish"><Source filename="` + kernel + `"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>
</CustomLayers>`
	if err := os.WriteFile(xml, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := []int{1, 2, 3, 4}
	err = ctCompileError(t, Options{NoGlobalConfig: true, Configs: []string{xml}}, ctOneLayer(t, "HardSwishX", s, s))
	ctContains(t, "the error", err.Error(), `no implementation for layer type "HardSwishX" (layer "l1"): did you mean "HardSwishx" (`+xml+`:2)?`)
	var ue *UnimplementedError
	if !errors.As(err, &ue) || len(ue.Types) != 1 || ue.Types[0].Near == nil {
		t.Errorf("error %v is not an UnimplementedError with a near name", err)
	}
	if strings.Contains(err.Error(), "-c") {
		t.Errorf("the library's error names a flag: %v", err)
	}
}
