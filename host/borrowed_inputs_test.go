package host

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestBorrowedInputs: on a CPU device the kernels read the graph input from the
// caller's Tensor (both halves of a split batch), with no copy in the network's memory;
// the outputs match a network that copies its inputs, over several inferences, for data
// that is aligned (read in place) and data that is not (copied into aligned staging);
// the caller's data is left as it was, and after each inference the kernels hold the
// stand-in again. On other devices nothing is borrowed and the outputs still match.
func TestBorrowedInputs(t *testing.T) {
	batch := 6
	if simulated() {
		batch = 2 // halves of one image
	}
	copying := newTestEngine(t, Options{SplitBatch: Off, Queue: QueueOutOfOrder, CopyInputs: true})
	borrowing := newTestEngine(t, Options{SplitBatch: On, Queue: QueueOutOfOrder})
	cn, err := copying.Compile(splitModel(t, batch))
	if err != nil {
		t.Fatal(err)
	}
	bn, err := borrowing.Compile(splitModel(t, batch))
	if err != nil {
		t.Fatal(err)
	}
	if !borrowing.device.IsCPU() {
		// A GPU's kernels cannot read host memory in place: its inputs are copied.
		if bn.borrowed != nil {
			t.Fatalf("%s (not a CPU): inputs %v borrowed", borrowing.device.Name, bn.borrowed)
		}
		inferAlike(t, "GPU", cn, bn, map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(9)), batch, 8, 12, 12)})
		return
	}
	if cn.borrowed != nil {
		t.Errorf("CopyInputs: inputs %v borrowed", cn.borrowed)
	}
	in := bn.borrowed["x"]
	if in == nil {
		t.Fatal("input x is not borrowed")
	}
	// c1 runs in two halves: at least one argument of each half's launch.
	if len(in.args) < 2 {
		t.Fatalf("input x is bound to %d kernels, want both halves of c1", len(in.args))
	}
	if bn.SumBytes != cn.SumBytes-4*int64(elements(bn.inputs[0].shape)) {
		t.Errorf("activations without reuse: %d bytes borrowing, %d copying: the input must not count", bn.SumBytes, cn.SumBytes)
	}
	rng := rand.New(rand.NewSource(9))
	shifts := []int{0, 1, 0, 3}
	if simulated() {
		shifts = shifts[:2] // read in place, then through the staging copy
	}
	for run, shift := range shifts {
		x := randomTensor(rng, batch, 8, 12, 12)
		// shift floats into a larger slice: 4, 12 bytes past an aligned start.
		raw := alignedFloats(len(x.Data)+shift, borrowAlign)
		copy(raw[shift:], x.Data)
		x.Data = raw[shift : shift+len(x.Data)]
		before := slices.Clone(x.Data)
		inferAlike(t, fmt.Sprintf("run %d (input %d bytes past alignment)", run, 4*shift), cn, bn, map[string]*Tensor{"x": x})
		if !slices.Equal(x.Data, before) {
			t.Fatalf("run %d: the inference changed the caller's input", run)
		}
		if staged := in.staging != nil; staged != (run > 0) {
			t.Errorf("run %d: staging allocated %v, want it from the first unaligned input on", run, staged)
		}
		for _, ka := range in.args {
			if got := ka.k.ArgsBoundTo(in.standIn); !slices.Equal(got, ka.pos) {
				t.Errorf("run %d: kernel %s holds the stand-in at %v after the inference, want %v", run, ka.k.Name, got, ka.pos)
			}
		}
	}
}

// TestBorrowedInputNotWhenOutput: an input that is also a graph output, through a
// Reshape, stays in the network's memory (its output is read after the kernels ran);
// another input of the same network is still borrowed on a CPU device.
func TestBorrowedInputNotWhenOutput(t *testing.T) {
	b := model.NewBuilder("echo")
	x := b.Input("x", model.Float32, 2, 3, 4, 4)
	y := b.Input("y", model.Float32, 2, 3, 4, 4)
	flat := b.Layer("Reshape", "flat", []string{x, b.ConstInt64("s", []int{2}, []int64{2, -1})})
	sum := b.Layer("Add", "sum", []string{x, y})
	b.Output(flat, sum)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{})
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	// On a CPU y alone is borrowed; elsewhere (a GPU) no input is.
	if wantY := e.device.IsCPU(); n.borrowed["x"] != nil || (n.borrowed["y"] != nil) != wantY {
		t.Fatalf("borrowed inputs %v on %s, want y borrowed: %v, x never", n.borrowed, e.device.Name, wantY)
	}
	rng := rand.New(rand.NewSource(4))
	for run := range 2 {
		xs, ys := randomTensor(rng, 2, 3, 4, 4), randomTensor(rng, 2, 3, 4, 4)
		out, err := n.Infer(context.Background(), map[string]*Tensor{"x": xs, "y": ys})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range xs.Data {
			if out["flat"].Data[i] != v || out["sum"].Data[i] != v+ys.Data[i] {
				t.Fatalf("run %d [%d]: flat %v sum %v, want %v and %v", run, i, out["flat"].Data[i], out["sum"].Data[i], v, v+ys.Data[i])
			}
		}
	}
}
