package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

// TestSampleAgainstReference runs the sample model with OpenVINO's example kernel on the
// test device (CLHOST_TEST_DEVICE, else the CPU) and compares pool1 with the plain-Go
// reference that -reference writes. A third of relu1's values are negative and some reach
// pool1, so a kernel that ignored neg_slope would fail here.
func TestSampleAgainstReference(t *testing.T) {
	p := newParams()
	m, err := build(p)
	if err != nil {
		t.Fatal(err)
	}
	log := &bytes.Buffer{}
	opts := host.Options{Device: "cpu", NoGlobalConfig: true, Log: log, Configs: []string{"custom_layer_example.xml"}}
	if d := os.Getenv("CLHOST_TEST_DEVICE"); d != "" {
		opts.Device = d
	}
	e, err := host.NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	image := randn(rand.New(rand.NewSource(2)), 3*32*32, 1)
	_, want := reference(p, image)
	negative := 0
	for _, v := range want {
		if v < 0 {
			negative++
		}
	}
	if negative == 0 {
		t.Fatal("no negative value reaches pool1: the test would not see neg_slope")
	}
	out, err := n.Infer(context.Background(), map[string]*host.Tensor{"image": {Shape: []int{1, 3, 32, 32}, Data: image}})
	if err != nil {
		t.Fatal(err)
	}
	got := out["pool1"]
	if fmt.Sprint(got.Shape) != "[1 8 16 16]" {
		t.Fatalf("pool1 shape %v, want [1 8 16 16]", got.Shape)
	}
	const tol = 1e-5 // relative to 1 + |want|: float32 sums of 27 products
	for i := range want {
		if d := math.Abs(float64(got.Data[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("pool1[%d] = %g, want %g", i, got.Data[i], want[i])
		}
	}
}

// TestWriteReference: the files -reference writes read back with their shapes, and pool1
// is the max pool of relu1, whose negative values are the convolution's scaled by the
// slope (so relu1 is not the convolution alone).
func TestWriteReference(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ref")
	if err := writeReference(newParams(), dir); err != nil {
		t.Fatal(err)
	}
	read := func(name, shape string) []float32 {
		a, err := tensorio.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a.Shape) != shape {
			t.Fatalf("%s has shape %v, want %s", name, a.Shape, shape)
		}
		return a.Data
	}
	read("image.npy", "[1 3 32 32]")
	relu := read("relu1.npy", "[1 8 32 32]")
	pool := read("pool1.npy", "[1 8 16 16]")
	smallest := float32(0)
	for _, v := range relu {
		smallest = min(smallest, v)
	}
	if smallest >= 0 || smallest < -1 {
		t.Errorf("relu1's smallest value %g: want a small negative one (slope %g)", smallest, negativeSlope)
	}
	for i, v := range pool {
		c, y, x := i/256, i/16%16, i%16
		at := func(dy, dx int) float32 { return relu[(c*32+2*y+dy)*32+2*x+dx] }
		if want := max(at(0, 0), at(0, 1), at(1, 0), at(1, 1)); v != want {
			t.Fatalf("pool1[%d] = %g, want %g", i, v, want)
		}
	}
}
