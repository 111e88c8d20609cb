package main

import (
	"path/filepath"
	"strings"
	"testing"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/serve"
)

// TestIsolatedCheckAtServedPrecision runs serve's load-time check of custom layers in a
// child process at fp16, the precision the model would be served at: a model whose
// custom kernel is sound passes, one whose kernel leaves its output unwritten is refused
// with the layer named.
func TestIsolatedCheckAtServedPrecision(t *testing.T) {
	dev, _, err := cl.Select("cpu")
	if err != nil {
		t.Fatal(err) // PoCL is on every machine the tests run on
	}
	xml, err := filepath.Abs("testdata/broken/broken.xml")
	if err != nil {
		t.Fatal(err)
	}
	check := isolatedCheck(t.TempDir(), builtinkernels.PrecisionFP16)
	for typ, want := range map[string]string{"Twice": "", "Unwritten": "c1"} {
		path := filepath.Join(t.TempDir(), typ+".clm")
		if err := model.Save(brokenChain(t, typ), path); err != nil {
			t.Fatal(err)
		}
		t.Setenv("CLHOST_AS_MAIN", "1")
		reason := check(serve.Source{Path: path, Configs: []string{xml}}, dev)
		t.Logf("%s: %q", typ, reason)
		switch {
		case want == "" && reason != "":
			t.Errorf("%s at fp16: refused: %s", typ, reason)
		case want != "" && !strings.Contains(reason, want):
			t.Errorf("%s at fp16: reason %q, want it to name %s", typ, reason, want)
		}
	}
}
