package customlayer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const includeConfig = `<CustomLayer name="T" type="SimpleGPU" version="1">
  <Kernel entry="k"><Source filename="k/k.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="output" port-index="0"/></Buffers>
</CustomLayer>`

// TestIncludesInlined: a quoted include found beside the including file is replaced by
// its text between #line directives, nested ones too and a #pragma once header once; one
// not found is left for the compiler. So the program text, the cache's key, changes with
// the header, and the folder clhost runs in does not matter.
func TestIncludesInlined(t *testing.T) {
	fsys := fstest.MapFS{
		"k/k.cl":          {Data: []byte("#include \"common.h\"\n#include \"once.h\" // twice below\n#include \"once.h\"\n#include \"missing.h\"\n__kernel void k(__global float* o) { o[0] = A + B; }\n")},
		"k/common.h":      {Data: []byte("#include \"sub/b.h\"\n#define A 1\n")},
		"k/sub/b.h":       {Data: []byte("#define B 2")},
		"k/once.h":        {Data: []byte("#pragma once\nint once_only;\n")},
		"k/self.h":        {Data: []byte("#include \"self.h\"\n")},
		"k/recursive.cl":  {Data: []byte("#include \"self.h\"\n")},
		"other/ignore.cl": {Data: []byte("")},
	}
	layers, err := Parse("cfg.xml", []byte(includeConfig), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	src := layers[0].Sources[0]
	want := "#line 1 \"k/common.h\"\n#line 1 \"k/sub/b.h\"\n#define B 2\n#line 2 \"k/common.h\"\n#define A 1\n#line 2 \"k/k.cl\"\n" +
		"#line 1 \"k/once.h\"\n\nint once_only;\n#line 3 \"k/k.cl\"\n" +
		"\n" +
		"#include \"missing.h\"\n__kernel void k(__global float* o) { o[0] = A + B; }\n"
	if src.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", src.Text, want)
	}
	if got := strings.Join(src.Includes, ","); got != "k/common.h,k/sub/b.h,k/once.h" {
		t.Errorf("includes %q", got)
	}
	_, err = Parse("cfg.xml", []byte(strings.Replace(includeConfig, "k/k.cl", "k/recursive.cl", 1)), Options{FS: fsys})
	if err == nil || !strings.Contains(err.Error(), "includes nest more than 16 deep") || !strings.Contains(err.Error(), `k/self.h:1: #include "self.h"`) {
		t.Errorf("a header including itself: %v", err)
	}
}

// TestIncludesFromOS: on the OS file system, headers resolve against the source's folder
// wherever the process runs.
func TestIncludesFromOS(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"k/k.cl": "#include \"h.h\"\n__kernel void k(__global float* o) { o[0] = H; }\n", "k/h.h": "#define H 3\n", "cfg.xml": includeConfig} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	layers, err := Load(filepath.Join(dir, "cfg.xml"))
	if err != nil {
		t.Fatal(err)
	}
	h := filepath.Join(dir, "k", "h.h")
	if src := layers[0].Sources[0]; !strings.HasPrefix(src.Text, "#line 1 \""+h+"\"\n#define H 3\n#line 2 ") || len(src.Includes) != 1 || src.Includes[0] != h {
		t.Errorf("source %q, includes %q", src.Text, src.Includes)
	}
}
