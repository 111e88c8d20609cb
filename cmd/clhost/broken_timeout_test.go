package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestTimeoutNamesTheRunningLayer: a never-ending kernel followed by another custom
// layer, on the CPU's out-of-order queue: the timeout names the layer that runs, not
// the one queued behind it, which never started.
func TestTimeoutNamesTheRunningLayer(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	xml, err := filepath.Abs("testdata/broken/broken.xml")
	if err != nil {
		t.Fatal(err)
	}
	shape := []int{1, 4, 32, 32}
	b := model.NewBuilder("stuck-then-twice")
	x := b.Input("x", model.Float32, shape...)
	c := b.Tensor("c", model.Float32, shape...)
	b.LayerOutputs("NeverEnds", "c1", []string{x}, []string{c})
	d := b.Tensor("d", model.Float32, shape...)
	b.LayerOutputs("Twice", "c2", []string{c}, []string{d})
	b.Output(d)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run", "-m", path, "-c", xml, "-d", "cpu", "--queue", "out-of-order", "--cache-dir", "", "-o", filepath.Join(dir, "out"), "--quiet", "--timeout", "2s")
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1", "POCL_CACHE_DIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1:\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, `layer "c1" (NeverEnds, kernel never_ends`) || !strings.Contains(text, "has not finished after") {
		t.Errorf("the timeout does not name c1:\n%s", text)
	}
	if strings.Contains(text, `layer "c2"`) {
		t.Errorf("the timeout names c2, which waits for c1 and never ran:\n%s", text)
	}
}
