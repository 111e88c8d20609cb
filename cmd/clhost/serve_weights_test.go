package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServeWeightsFlag: serve --weights names the .bin of its one -m IR, as run's does;
// with several -m, or a model of another format, it is a usage error before anything
// compiles.
func TestServeWeightsFlag(t *testing.T) {
	xml, _ := irElsewhere(t, "ssd_head")
	base := []string{"serve", "-d", "cpu", "--http", "127.0.0.1:0", "--grpc", "off", "--cache-dir", ""}
	if code := runMain(append(base, "-m", xml, "-m", xml, "--weights", "w.bin")); code != 2 {
		t.Errorf("--weights with two -m: exit %d, want 2", code)
	}
	if code := runMain(append(base, "-m", "model.onnx", "--weights", "w.bin")); code != 2 {
		t.Errorf("--weights with an ONNX -m: exit %d, want 2", code)
	}
	// The file given is the one read: a missing one fails the strict start, named.
	missing := filepath.Join(t.TempDir(), "nowhere.bin")
	var code int
	s := captureStderr(t, func() { code = runMain(append(base, "--strict", "-m", xml, "--weights", missing)) })
	if code != 1 || !strings.Contains(s, "the weights file "+missing+" is missing") {
		t.Errorf("a missing --weights file: exit %d, stderr:\n%s", code, s)
	}
}
