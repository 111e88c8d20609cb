package host

// The loader's OpenVINO IR hook: .xml is the IR format, an IR is told from a custom-layer
// configuration by content, and a weights file is refused for formats that have none.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIRLoadHook(t *testing.T) {
	dir := filepath.Join("..", "internal", "openvino", "testdata")
	if ModelFormat("Net.XML") != FormatIR {
		t.Errorf("ModelFormat(Net.XML) = %q", ModelFormat("Net.XML"))
	}
	if !IsIR(filepath.Join(dir, "custom.xml")) || IsIR(filepath.Join(dir, "scaleshift", "scaleshift.xml")) {
		t.Error("IsIR tells the IR and the configuration apart wrongly")
	}
	m, err := LoadOptions{Batch: 2}.Load(filepath.Join(dir, "classifier.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Tensor("image"); in == nil || in.Shape[0] != 2 {
		t.Errorf("input %+v: the IR's dynamic batch takes LoadOptions.Batch", in)
	}
	_, err = LoadOptions{Weights: "w.bin"}.Load(filepath.Join("..", "internal", "onnx", "testdata", "conv.onnx"))
	if err == nil || !strings.Contains(err.Error(), "only OpenVINO IR") {
		t.Errorf("weights for an ONNX model: %v", err)
	}
}

// TestIsIRLongPreamble: an IR whose root element comes after a long comment (a licence
// header) is still an IR, and a configuration after one is still not.
func TestIsIRLongPreamble(t *testing.T) {
	dir := t.TempDir()
	comment := "<!-- " + strings.Repeat("licence text ", 1000) + "-->\n"
	for name, body := range map[string]string{"net.xml": `<net name="n" version="11"><layers/></net>`, "cfg.xml": `<CustomLayer name="x"/>`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`<?xml version="1.0"?>`+"\n"+comment+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !IsIR(filepath.Join(dir, "net.xml")) {
		t.Error("an IR after a 13 KB comment is not taken for one")
	}
	if IsIR(filepath.Join(dir, "cfg.xml")) {
		t.Error("a configuration after a long comment is taken for an IR")
	}
}
