package main

import (
	"strings"
	"testing"
)

// TestChildReason: of a failed `clhost run --sanitize`, a crash, a finding, a guard
// violation and a timeout keep the model from being served, with their lines; a NaN
// finding (random inputs) and a compile error, which the server reports itself, do not.
func TestChildReason(t *testing.T) {
	for _, c := range []struct {
		name, out string
		unsafe    bool
		want      string
	}{
		{"crash", "clhost: compiling\n\nclhost: SIGSEGV: code running outside Go accessed memory at 0x40, while the device ran\n  model \"m\", whose custom kernels are the likely cause: layer \"c1\" (W, kernel w, a.xml:3)\n",
			true, `SIGSEGV: code running outside Go accessed memory at 0x40, while the device ran; model "m", whose custom kernels are the likely cause: layer "c1" (W, kernel w, a.xml:3)`},
		{"finding", "each layer:\n  not checked  c1  W (custom)\nfindings:\n  c1: 3 of 4 elements of output 0 never written; first [0,0,0,1] (kernel w, a.xml:3)\ncheck FAILED: c1\nclhost run: check failed (see the report above)\n",
			true, "c1: 3 of 4 elements of output 0 never written; first [0,0,0,1] (kernel w, a.xml:3)"},
		{"guard", "clhost run: a custom kernel wrote outside its buffer; the inference's results are discarded:\n  layer \"c1\" (W, kernel w, a.xml:3): wrote 4 bytes past the end of output 0\n",
			true, `a custom kernel wrote outside its buffer; the inference's results are discarded:; layer "c1" (W, kernel w, a.xml:3): wrote 4 bytes past the end of output 0`},
		{"timeout", "clhost run: layer \"c1\" (W, kernel w, a.xml:3) has not finished after 1m0s; OpenCL cannot stop a running kernel\n", true, "has not finished after 1m0s"},
		{"nan", "findings:\n  c1: 4 of 4 elements of output 0 are NaN or infinite from finite inputs; first [0,0,0,0] = NaN (kernel w, a.xml:3)\ncheck FAILED: c1\nclhost run: check failed (see the report above)\n", false, ""},
		{"build", "clhost run: m.json: layer \"c1\" (W, custom layer from a.xml:3): the program failed to build; build log:\nerror: w.cl:2:1: expected ';'\n", false, "the program failed to build"},
	} {
		reason, unsafe := childReason(c.out)
		if unsafe != c.unsafe || !strings.Contains(reason, c.want) {
			t.Errorf("%s: childReason = %q, %v; want %v and %q in it", c.name, reason, unsafe, c.unsafe, c.want)
		}
	}
}
