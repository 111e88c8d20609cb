package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
)

// TestBrokenKernels runs every kernel of testdata/broken through `clhost run`, in a
// process of its own as a user would, on the CPU device: each mistake must be caught and
// named (layer, kernel, config file) with exit status 1, and none may crash the process
// (a signal, or an exit status other than 0 and 1). The correct kernel must pass the
// same commands.
func TestBrokenKernels(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	xml, err := filepath.Abs("testdata/broken/broken.xml")
	if err != nil {
		t.Fatal(err)
	}
	pocl := t.TempDir() // shared by the cases: broken.cl builds once
	check := []string{"--check", "--sanitize"}
	cases := []struct {
		typ   string
		flags []string
		exit  int
		wants []string
	}{
		{"Twice", nil, 0, nil},
		{"Twice", check, 0, []string{"check passed"}},
		{"PastOne", nil, 1, []string{"past_one", "wrote 4 bytes past the end of output 0"}},
		{"PastTensor", nil, 1, []string{"past_tensor", "wrote 16,384 bytes past the end of output 0"}},
		{"PastPage", nil, 1, []string{"past_page", "wrote 4,100 bytes past the end of output 0"}},
		{"BeforeStart", nil, 1, []string{"before_start", "wrote 4 bytes before the start of output 0"}},
		{"BeforeTensor", nil, 1, []string{"before_tensor", "before the start of output 0"}},
		{"PastOne", check, 1, []string{"past_one", "wrote 4 bytes past the end of output 0"}},
		{"Unwritten", check, 1, []string{"unwritten", "3,072 of 4,096 elements of output 0 never written"}},
		{"WritesInput", check, 1, []string{"writes_input", "wrote into its input 0"}},
		{"Race", check, 1, []string{"kernel race"}},
		{"ReadsPast", check, 1, []string{"reads_past", "reads past the end (or before the start) of a buffer"}},
		{"MakesNaN", []string{"--check"}, 1, []string{"makes_nan", "4,096 of 4,096 elements of output 0 are NaN or infinite from finite inputs"}},
		{"ExtraArg", nil, 1, []string{`kernel "extra_arg" takes 3 arguments, but the config declares 2 buffers`}},
		{"NeverEnds", []string{"--timeout", "2s"}, 1, []string{"never_ends", "has not finished after "}},
		{"Syntax", nil, 1, []string{"syntax.cl:5"}},
		{"WrongEntry", nil, 1, []string{`kernel entry "twice_typo" is not in the built program`}},
		{"WildWrite", nil, 1, []string{"SIGSEGV", "accessed memory at 0x40", "wild_write", "likely cause"}},
		{"WildEverywhere", nil, 1, []string{"SIGSEGV", "wild_everywhere", "likely cause"}},
		// --check-device runs the sanitizer: a kernel that writes into its input leaves
		// both devices the same wrong values, and the writer must be named, not its
		// producer.
		{"WritesInput", []string{"--check-device", "cpu"}, 1, []string{"writes_input", "wrote into its input 0"}},
		{"SwappedArgs", []string{"--check-device", "cpu"}, 1, []string{"kernel twice", "check FAILED: c1 writes into its input"}},
		{"ZeroGlobal", nil, 1, []string{`global work size (`, `formula "X/64"`, "result 0 is not positive"}},
		{"BigGroup", nil, 1, []string{"work-items per group, more than the kernel can run with on this device"}},
		{"BigLocal", nil, 1, []string{`kernel "big_local" uses 4,194,304 bytes of __local memory per work-group, more than the device has`}},
		// A megabyte past a 16 KB output: beyond a plain run's guards, but within the
		// sanitizer's. The plain inference before the sanitizer may already crash on it,
		// which names the kernel too.
		{"FarPast", []string{"--sanitize"}, 1, []string{"far_past"}},
		{"WildInSanitizer", []string{"--sanitize"}, 1, []string{"SIGSEGV", `the sanitizer's run of layer "c1" (WildInSanitizer, kernel wild_in_sanitizer`}},
	}
	for _, c := range cases {
		name := c.typ
		if len(c.flags) > 0 {
			name += strings.ReplaceAll(strings.Join(c.flags, ""), "-", "_")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			m := filepath.Join(dir, "m.clm")
			if err := model.Save(brokenChain(t, c.typ), m); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "-m", m, "-c", xml, "-d", "cpu", "--cache-dir", "", "-o", filepath.Join(dir, "out"), "--quiet"}, c.flags...)
			cmd := exec.Command(self, args...)
			cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1", "POCL_CACHE_DIR="+pocl)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee) && !ee.Exited():
				t.Fatalf("clhost %s crashed (%v):\n%s", strings.Join(args, " "), err, out.String())
			case errors.As(err, &ee):
				code = ee.ExitCode()
			case err != nil:
				t.Fatal(err)
			}
			if code != c.exit {
				t.Fatalf("exit status %d, want %d:\n%s", code, c.exit, out.String())
			}
			text := out.String()
			if c.exit != 0 {
				c.wants = append(c.wants, "c1", "broken.xml")
			}
			for _, w := range c.wants {
				if !strings.Contains(text, w) {
					t.Errorf("the output lacks %q:\n%s", w, text)
				}
			}
			if c.typ == "NeverEnds" && !regexp.MustCompile(`has not finished after (1\.9\d*|2(\.\d+)?)s`).MatchString(text) {
				t.Errorf("the timeout message does not give the 2 s waited:\n%s", text)
			}
			if n := strings.Count(text, "clhost: SIGSEGV"); strings.Contains(text, "SIGSEGV") && n != 1 {
				t.Errorf("the fault report came %d times, interleaved:\n%s", n, text)
			}
			if c.typ == "NeverEnds" && time.Since(start) > 30*time.Second {
				t.Errorf("a 2 s timeout took %s to end the run", time.Since(start))
			}
		})
	}
}

// brokenChain is x → Relu → a layer of type typ → Relu, so that the custom layer's
// tensors lie between the network's own.
func brokenChain(t *testing.T, typ string) *model.Model {
	t.Helper()
	shape := []int{1, 4, 32, 32}
	b := model.NewBuilder("broken-" + typ)
	x := b.Input("x", model.Float32, shape...)
	r0 := b.Layer("Relu", "r0", []string{x})
	c := b.Tensor("c", model.Float32, shape...)
	b.LayerOutputs(typ, "c1", []string{r0}, []string{c})
	b.Output(b.Layer("Relu", "r2", []string{c}))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
