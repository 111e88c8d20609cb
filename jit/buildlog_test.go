package jit

import "testing"

func TestMapBuildLog(t *testing.T) {
	src := "// Custom Layer Built-ins\n#define A 1\n// Custom Layer User Defines\n#line 1 \"dir/first.cl\"\nint a;\nint b;\n#line 1 \"second \\\"q\\\".cl\"\nint c;\nint d;\n"
	cases := map[string]string{
		// assembled line 6 is "int b;", line 2 of first.cl
		"<kernel>:6:3: error: x":   "dir/first.cl:2:3: error: x",
		"<kernel>:9:1: error: y":   `second "q".cl:2:1: error: y`,
		"<source>:5: warning":      "dir/first.cl:1: warning",
		"input.cl:8:2: error: z":   `second "q".cl:1:2: error: z`,
		"<kernel>:2:9: error: def": `<kernel>:2:9 (in the generated defines: "#define A 1"): error: def`,
		// PoCL's clang names its temporary copy of the program where a macro was spelled.
		"first.cl:2:3 <Spelling=/root/.cache/pocl/kcache/tempfile_I5FFbd.cl:6:2>: error: e": "first.cl:2:3 <Spelling=dir/first.cl:2:2>: error: e",
		"first.cl:2:3 <Spelling=/tmp/k/tempfile_x1.cl:2:9>: error: f":                       `first.cl:2:3 <Spelling=line 2:9 of the generated defines: "#define A 1">: error: f`,
		"first.cl:2:3: error: kept": "first.cl:2:3: error: kept",
	}
	for in, want := range cases {
		if got := MapBuildLog(src, in); got != want {
			t.Errorf("MapBuildLog(%q) = %q, want %q", in, got, want)
		}
	}
}
