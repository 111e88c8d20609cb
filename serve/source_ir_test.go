package serve

// An OpenVINO IR in a model folder: its .xml is the model (root <net>), the other .xml
// beside it is a custom-layer configuration for it.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/host"
)

func TestIRDirSources(t *testing.T) {
	src := "../internal/openvino/testdata"
	dir := t.TempDir()
	sub := filepath.Join(dir, "scaled")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		"custom.xml": "net.xml", "custom.bin": "net.bin",
		"scaleshift/scaleshift.xml": "scaleshift.xml", "scaleshift/scaleshift.cl": "scaleshift.cl",
	} {
		b, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srcs, err := DirSources(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Name != "net" || srcs[0].Platform != "openvino" {
		t.Fatalf("sources %+v", srcs)
	}
	if len(srcs[0].Configs) != 1 || filepath.Base(srcs[0].Configs[0]) != "scaleshift.xml" {
		t.Fatalf("configs %q: the IR must not be taken for a configuration", srcs[0].Configs)
	}
	reg, err := host.LoadConfigs(host.Options{Configs: srcs[0].Configs, NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := srcs[0].Load(0, reg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers[0].Type != "ScaleShift" {
		t.Errorf("layers %+v", m.Layers)
	}
}
