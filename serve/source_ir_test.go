package serve

// An OpenVINO IR in a model folder: its .xml is the model (root <net>), the other .xml
// beside it is a custom-layer configuration for it.

import (
	"os"
	"path/filepath"
	"strings"
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

// TestIRSourceWeights: a single IR's weights may lie elsewhere (serve -m --weights), at
// every batch size; a repository's IR takes the .bin beside it, and a missing one is
// named without advice about a flag the repository does not take.
func TestIRSourceWeights(t *testing.T) {
	src := "../internal/openvino/testdata"
	dir := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("custom.xml", "net.xml")
	copyFile("custom.bin", "weights.data")
	cfg := filepath.Join(src, "scaleshift", "scaleshift.xml")
	reg, err := host.LoadConfigs(host.Options{Configs: []string{cfg}, NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	xml := filepath.Join(dir, "net.xml")
	s := IRSource(xml, filepath.Join(dir, "weights.data"), []string{cfg})
	for _, batch := range []int{0, 3} {
		m, err := s.Load(batch, reg)
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		if batch > 0 && m.Tensor(m.Inputs[0]).Shape[0] != batch {
			t.Errorf("batch %d: input shape %v", batch, m.Tensor(m.Inputs[0]).Shape)
		}
	}
	if _, err := FileSource(xml, []string{cfg}).Load(0, reg); err == nil || !strings.Contains(err.Error(), "net.bin is missing") {
		t.Errorf("without the weights: %v", err)
	}
	srcs, err := DirSources(dir, []string{cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, err = srcs[0].Load(0, reg)
	if err == nil || !strings.Contains(err.Error(), "net.bin is missing") || strings.Contains(err.Error(), "--weights") {
		t.Errorf("a repository IR without its .bin: %v", err)
	}
}
