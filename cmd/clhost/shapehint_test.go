package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/tensorio"
)

// TestRunLoadErrorHint: a model that fails to load because of the -i files' shapes says
// where the shapes came from; one that is damaged whatever the inputs does not, so that
// the user is not sent to the input files.
func TestRunLoadErrorHint(t *testing.T) {
	dir := t.TempDir()
	x, err := os.ReadFile(filepath.Join(irData, "custom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(irData, "custom.bin"))
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.xml")
	if err := os.WriteFile(short, x, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "short.bin"), b[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong.npy")
	if err := tensorio.WriteFile(wrong, []int{1, 3, 5, 5}, make([]float32, 75)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(irData, "scaleshift", "scaleshift.xml")
	input := filepath.Join(irData, "custom_input.npy")
	run := func(model, in string) string {
		var code int
		s := captureStderr(t, func() {
			code = runMain([]string{"run", "-m", model, "-c", cfg, "-d", "cpu", "--quiet", "--cache-dir", "", "-i", in, "-o", dir})
		})
		if code != 1 {
			t.Errorf("%s with %s: exit %d, want 1", model, in, code)
		}
		return s
	}
	if s := run(short, input); !strings.Contains(s, "past the end of the weights file") || strings.Contains(s, "input shapes taken from") {
		t.Errorf("a short .bin:\n%s", s)
	}
	if s := run(filepath.Join(irData, "custom.xml"), wrong); !strings.Contains(s, "input shapes taken from -i "+wrong) {
		t.Errorf("an input of the wrong shape:\n%s", s)
	}
}
