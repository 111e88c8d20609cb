package host

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestGuardsCatchStrayWrites: a plain inference of a kernel that writes past the end or
// before the start of its output fails with a *GuardError naming the layer, kernel,
// argument, distance, work sizes and the config's file:line; the guards are restored,
// so the next inference reports the same and a correct layer of the same engine runs
// clean.
func TestGuardsCatchStrayWrites(t *testing.T) {
	ctParallel(t)
	shape := []int{1, 4, 8, 8}
	xml := ctPath(t, "../sanitize/faults.xml")
	cases := []struct {
		typ, entry string
		line       int
		after      bool
		bytes      int
	}{
		{"PastEnd", "past_end", 21, true, 64},
		{"BeforeStart", "before_start", 30, false, 8},
	}
	for _, path := range []string{"HostCheck", "CheckKernel"} {
		for _, c := range cases {
			t.Run(path+"/"+c.typ, func(t *testing.T) {
				e, log := ctEngine(t, Options{NoGlobalConfig: true, Configs: []string{xml}})
				e.guardCheckKernel = path == "CheckKernel"
				n, err := e.Compile(sanChain(t, c.typ, shape))
				if err != nil {
					t.Fatalf("Compile: %v\nlog:\n%s", err, log)
				}
				if byKernel := n.guard.kernel != nil; byKernel != e.guardCheckKernel {
					t.Fatalf("guards checked by the kernel: %v, want %v", byKernel, e.guardCheckKernel)
				}
				in := map[string]*Tensor{"x": ctRand(5, shape...)}
				for i := 0; i < 2; i++ {
					_, err := n.Infer(context.Background(), in)
					var ge *GuardError
					if !errors.As(err, &ge) {
						t.Fatalf("inference %d: error %v is not a *GuardError", i, err)
					}
					if len(ge.Violations) != 1 {
						t.Fatalf("inference %d: violations %+v", i, ge.Violations)
					}
					v := ge.Violations[0]
					if v.Layer != "c1" || v.Entry != c.entry || v.Arg != "output 0" || v.After != c.after || v.Bytes != c.bytes || v.TensorBytes != 1024 {
						t.Errorf("inference %d: violation %+v", i, v)
					}
					side := "past the end of output 0"
					if !c.after {
						side = "before the start of output 0"
					}
					ctContains(t, "the error", err.Error(), `layer "c1" (`+c.typ+`, kernel `+c.entry, "faults.xml:", side, "global 256, local chosen by the driver")
					if !strings.Contains(err.Error(), "faults.xml:"+itoa(c.line)) {
						t.Errorf("the error does not name faults.xml:%d: %v", c.line, err)
					}
				}
			})
		}
	}
	// A write inside the guard two tensors share, touching neither edge, is named as
	// either the tensor below's or the one above's.
	for _, path := range []string{"HostCheck", "CheckKernel"} {
		t.Run(path+"/SharedGuard", func(t *testing.T) {
			e, _ := ctEngine(t, Options{NoGlobalConfig: true, Configs: []string{xml}})
			e.guardCheckKernel = path == "CheckKernel"
			n, err := e.Compile(sanChain(t, "FarBefore", shape))
			if err != nil {
				t.Fatal(err)
			}
			_, err = n.Infer(context.Background(), map[string]*Tensor{"x": ctRand(5, shape...)})
			var ge *GuardError
			if !errors.As(err, &ge) || len(ge.Violations) != 2 {
				t.Fatalf("error %v, want a *GuardError of two violations", err)
			}
			below, above := ge.Violations[0], ge.Violations[1]
			if !below.Either || !above.Either || below.Tensor != "r0" || !below.After || above.Tensor != "c" || above.After ||
				above.Bytes != 32768 || above.Words != 2 || above.Layer != "c1" || below.Layer != "c1" || below.Arg != "input 0" {
				t.Errorf("violations %+v", ge.Violations)
			}
			ctContains(t, "the error", err.Error(), "wrote 32,768 bytes before the start of output 0", "this one's or its neighbour's")
		})
	}
	t.Run("Correct", func(t *testing.T) {
		n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{xml}}, sanChain(t, "Twice", shape))
		if n.guard == nil {
			t.Fatal("a network with a custom layer has no guards")
		}
		if off, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{xml}, GuardBytes: -1}, sanChain(t, "Twice", shape)); off.guard != nil {
			t.Error("GuardBytes -1 left guards on")
		}
		in := ctRand(5, shape...)
		out := ctInfer(t, n, map[string]*Tensor{"x": in})
		var want []float32
		for _, v := range in.Data {
			want = append(want, 2*max(v, 0))
		}
		ctClose(t, "relu(2 relu(x))", out[n.Outputs()[0].Name].Data, want, 0)
		// The check kernel's flags start clear and stay clear over inferences.
		e, _ := ctEngine(t, Options{NoGlobalConfig: true, Configs: []string{xml}})
		e.guardCheckKernel = true
		k, err := e.Compile(sanChain(t, "Twice", shape))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			out := ctInfer(t, k, map[string]*Tensor{"x": in})
			ctClose(t, "relu(2 relu(x)), guards checked by the kernel", out[k.Outputs()[0].Name].Data, want, 0)
		}
	})
}

func itoa(n int) string { return thousands(n) }
