package configs

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
)

// The embedded global configuration loads without a problem, defines the layers the
// README promises, uses every kernel file it embeds, and every layer turns into a
// program without any parameter (each define has a default).
func TestGlobalConfiguration(t *testing.T) {
	layers, err := customlayer.LoadFS(FS, GlobalFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	used := map[string]bool{}
	for _, l := range layers {
		names = append(names, l.Name)
		for _, s := range l.Sources {
			used[path.Clean(s.Path)] = true
		}
	}
	if got, want := strings.Join(names, " "), "GRN Swish Tile"; got != want {
		t.Errorf("layers %q, want %q", got, want)
	}
	kernels, err := fs.Glob(FS, "kernels/*.cl")
	if err != nil {
		t.Fatal(err)
	}
	if len(kernels) == 0 {
		t.Fatal("no kernel is embedded")
	}
	for _, k := range kernels {
		if !used[k] {
			t.Errorf("%s is embedded but no layer of %s uses it", k, GlobalFile)
		}
	}

	shape := []int{2, 3, 4, 5}
	for _, l := range layers {
		prog, err := jit.Generate(l, jit.Instance{
			Name:    "test",
			Inputs:  []jit.Tensor{{Shape: shape}},
			Outputs: []jit.Tensor{{Shape: shape}},
		})
		if err != nil {
			t.Errorf("%s: %v", l.Name, err)
			continue
		}
		if prog.Entry == "" || len(prog.Global) == 0 || !strings.Contains(prog.Source, "__kernel void "+prog.Entry+"(") {
			t.Errorf("%s: entry %q, global %v, source without the entry:\n%s", l.Name, prog.Entry, prog.Global, prog.Source)
		}
		for _, s := range l.Sources {
			if !strings.Contains(prog.Source, "#line 1 \""+s.Path+"\"\n") {
				t.Errorf("%s: the program does not mark the start of %s", l.Name, s.Path)
			}
		}
	}
	// Every .cl file is in the embedded FS, and nothing else but global.xml.
	all, err := fs.Glob(FS, "*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	if got := strings.Join(all, " "); got != "global.xml kernels" {
		t.Errorf("embedded top level %q, want %q", got, "global.xml kernels")
	}
}
