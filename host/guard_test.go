package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
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

// TestGuardLayout: every tensor lies between guards of at least the asked size, the
// regions cover exactly the gaps, and a write running a whole tensor's length before
// its start or past its end stays inside the buffer.
func TestGuardLayout(t *testing.T) {
	for _, sizes := range [][]int{{1024}, {4 << 20, 256, 4096}, {256, 4096, 4 << 20}, {256, 8 << 20, 256}} {
		var names []string
		bytes := map[string]int{}
		for i, s := range sizes {
			name := "t" + itoa(i)
			names = append(names, name)
			bytes[name] = s
		}
		const guard, align = 64 << 10, 64
		offsets, regions, total := guardLayout(names, bytes, guard, align)
		if len(regions) != len(names)+1 {
			t.Fatalf("%v: %d regions", sizes, len(regions))
		}
		for i, name := range names {
			off, size := offsets[name], bytes[name]
			before, after := regions[i], regions[i+1]
			if off%align != 0 || 4*(before.start+before.words) != off || 4*after.start != off+size {
				t.Errorf("%v: %s at %d is not between its guards %+v and %+v", sizes, name, off, before, after)
			}
			if 4*before.words < guard || 4*after.words < guard || before.above != name || after.below != name {
				t.Errorf("%v: %s's guards %+v, %+v", sizes, name, before, after)
			}
			if off-size < 0 || off+2*size > total {
				t.Errorf("%v: a run of %s's length from %s's edges leaves the buffer of %d bytes (offset %d)", sizes, itoa(size), name, total, off)
			}
		}
	}
}

// TestGuardedTensorsShareMemory: custom layers' tensors of one size whose lifetimes do
// not overlap, and that the same custom types take, share a guarded place, so a chain of
// custom layers takes the memory of a few tensors, not of one per layer; an overrun
// names the kernel and every layer of it that writes into that place.
func TestGuardedTensorsShareMemory(t *testing.T) {
	ctParallel(t)
	xml := ctPath(t, "../sanitize/faults.xml")
	shape := []int{1, 4, 8, 8}
	b := model.NewBuilder("chain")
	x := b.Input("x", model.Float32, shape...)
	prev := b.Layer("Relu", "r0", []string{x})
	for i := 1; i <= 6; i++ {
		var over int64
		if i == 5 {
			over = 1
		}
		out := b.Tensor("t"+itoa(i), model.Float32, shape...)
		b.LayerOutputs("MaybePast", "c"+itoa(i), []string{prev}, []string{out}, model.IntAttr("over", over))
		prev = out
	}
	b.Output(b.Layer("Relu", "r7", []string{prev}))
	n, _ := ctCompile(t, Options{NoGlobalConfig: true, Configs: []string{xml}}, ctBuild(t, b))
	// r0 (read by the first), t1..t5 (written and read), t6 (written): four places.
	if places := len(n.guard.members); places != 4 {
		t.Errorf("7 guarded tensors of one size in a chain take %d places, want 4: %v", places, n.guard.members)
	}
	_, err := n.Infer(context.Background(), map[string]*Tensor{"x": ctRand(3, shape...)})
	var ge *GuardError
	if !errors.As(err, &ge) || len(ge.Violations) != 1 {
		t.Fatalf("error %v, want one violation", err)
	}
	v := ge.Violations[0]
	if !v.After || v.Bytes != 64 {
		t.Errorf("violation %+v", v)
	}
	// The check cannot tell c5 from the other writers of its place: all three are named.
	ctContains(t, "the error", err.Error(), `layer "c1" or "c3" or "c5" (their outputs share this memory at different times) (MaybePast, kernel maybe_past`)
}
