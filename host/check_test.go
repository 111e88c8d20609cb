package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckOtherNetwork: CheckOptions.Other runs the same inputs through a second
// network and compares every tensor both compute, custom layers included. Here both run
// on the test device; the second binds the custom type to a kernel that leaves elements
// unwritten, so the custom layer and the layer after it differ, and nothing else.
func TestCheckOtherNetwork(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 4, 8, 8}
	faults := ctPath(t, "../sanitize/faults.xml")
	cl, err := filepath.Abs(filepath.Join(filepath.Dir(faults), "faults.cl"))
	if err != nil {
		t.Fatal(err)
	}
	skipping := filepath.Join(t.TempDir(), "twice_skips.xml")
	xml := `<CustomLayer name="Twice" type="SimpleGPU" version="1">
  <Kernel entry="skips"><Source filename="` + cl + `"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>`
	if err := os.WriteFile(skipping, []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	in := map[string]*Tensor{"x": ctRand(95, shape...)}
	t.Run("both skip", func(t *testing.T) {
		// The same kernel leaves the same elements unwritten on both sides: filled with
		// the NaN pattern first, they must not compare equal, and the report names the
		// layer that left them.
		n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{skipping}, KeepIntermediates: true}, sanChain(t, "Twice", shape))
		o, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{skipping}, KeepIntermediates: true}, sanChain(t, "Twice", shape))
		r, _, err := n.Check(context.Background(), in, CheckOptions{Other: o, NoReferences: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range r.Layers {
			if l.Layer != "c1" {
				continue
			}
			if !l.Failed() || len(l.Other) != 1 || l.Other[0].Unwritten != elements(shape)/4 {
				t.Errorf("c1 compared %+v, want %d elements unwritten", l.Other, elements(shape)/4)
			}
		}
		var b strings.Builder
		if err := r.Write(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"64 elements unwritten on both devices", "check FAILED: c1"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, b.String())
			}
		}
	})
	for _, c := range []struct {
		name   string
		other  string
		differ map[string]bool
	}{
		{"same kernel", faults, nil},
		{"kernel that skips", skipping, map[string]bool{"c1": true, "r2": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{faults}, KeepIntermediates: true}, sanChain(t, "Twice", shape))
			o, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{c.other}, KeepIntermediates: true}, sanChain(t, "Twice", shape))
			r, _, err := n.Check(context.Background(), in, CheckOptions{Other: o, NoReferences: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.OtherDevice == "" {
				t.Error("the report does not name the other device")
			}
			for _, l := range r.Layers {
				if len(l.Other) == 0 {
					t.Errorf("layer %s not compared with the other network", l.Layer)
					continue
				}
				if l.Failed() != c.differ[l.Layer] {
					t.Errorf("layer %s: failed %v, want %v: %+v", l.Layer, l.Failed(), c.differ[l.Layer], l.Other)
				}
			}
			if r.Failed() != (c.differ != nil) {
				t.Errorf("report failed: %v", r.Failed())
			}
		})
	}
}

// TestCheckVerdictBlamesInputWriter: a custom layer whose XML swaps its input and output
// arg-index writes into its producer's output, so the producer fails its CPU reference
// first in execution order; the verdict must name the custom layer as the cause and
// attribute the producer's mismatch to it.
func TestCheckVerdictBlamesInputWriter(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 4, 8, 8}
	cfg := Options{NoGlobalConfig: true, Configs: []string{ctPath(t, "../sanitize/swapped_args.xml")}, KeepIntermediates: true}
	n, _ := ctCompile(t, cfg, sanChain(t, "Twice", shape))
	r, _, err := n.Check(context.Background(), map[string]*Tensor{"x": ctRand(96, shape...)}, CheckOptions{Sanitize: true})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary()
	if !strings.HasPrefix(s, "check FAILED: c1 writes into its input (sanitizer); r0") || !strings.Contains(s, "follow from it") {
		t.Errorf("summary %q, want c1 named as the cause and r0 attributed to it", s)
	}
}
