package main

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/model"
)

//go:embed custom_layers.xml kernels/*.cl
var embedded embed.FS

// TestSampleModel writes the sample model, loads it back, runs it on the CPU device with
// custom_layers.xml — read from its file, and embedded in the test binary as a program
// would embed it — and compares the output with a reference computed here in plain loops
// from the weights in the file.
func TestSampleModel(t *testing.T) {
	m, err := build(1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mixed.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	if m, err = model.Load(path); err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 3*16*16)
	for i := range in {
		in[i] = float32(math.Sin(float64(i) * 0.37))
	}
	want := reference(t, m, in)

	for _, c := range []struct {
		name string
		opts host.Options
	}{
		{"config file", host.Options{Configs: []string{"custom_layers.xml"}}},
		{"embedded config", host.Options{ConfigFS: []host.ConfigFile{{FS: embedded, Path: "custom_layers.xml"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := &bytes.Buffer{}
			c.opts.Device, c.opts.NoGlobalConfig, c.opts.Log = "cpu", true, log
			if d := os.Getenv("CLHOST_TEST_DEVICE"); d != "" {
				c.opts.Device = d
			}
			e, err := host.NewEngine(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			n, err := e.Compile(m)
			if err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			if got, want := strings.Join(n.CustomLayers(), ", "), "block1 (ScaleShift), mix1 (ChannelMix)"; got != want {
				t.Errorf("custom layers %q, want %q", got, want)
			}
			out, err := n.Infer(context.Background(), map[string]*host.Tensor{"image": {Shape: []int{1, 3, 16, 16}, Data: in}})
			if err != nil {
				t.Fatal(err)
			}
			got := out["mix1"]
			if fmt.Sprint(got.Shape) != "[1 4 8 8]" || len(got.Data) != len(want) {
				t.Fatalf("output %v with %d values, want [1 4 8 8] with %d", got.Shape, len(got.Data), len(want))
			}
			const tol = 1e-5 // relative to 1 + |want|: float32 sums of 27 products
			for i := range want {
				if d := math.Abs(float64(got.Data[i] - want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
					t.Fatalf("mix1[%d] = %g, want %g", i, got.Data[i], want[i])
				}
			}
		})
	}
}

// reference computes the sample model on the CPU with plain loops.
func reference(t *testing.T, m *model.Model, in []float32) []float32 {
	floats := func(name string) []float32 {
		v, err := m.Tensor(name).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	w, bias := floats("conv1.weight"), floats("conv1.bias")
	scale, shift := floats("block1.scale"), floats("block1.shift")
	const C, O, H, W = 3, 8, 16, 16

	// conv1 (3×3, pads 1), block1 (scale, shift), relu1
	act := make([]float32, O*H*W)
	for o := 0; o < O; o++ {
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				sum := float64(bias[o])
				for c := 0; c < C; c++ {
					for ky := 0; ky < 3; ky++ {
						for kx := 0; kx < 3; kx++ {
							iy, ix := y+ky-1, x+kx-1
							if iy >= 0 && ix >= 0 && iy < H && ix < W {
								sum += float64(in[(c*H+iy)*W+ix]) * float64(w[((o*C+c)*3+ky)*3+kx])
							}
						}
					}
				}
				v := float32(sum)*scale[o] + shift[o]
				act[(o*H+y)*W+x] = max(v, 0)
			}
		}
	}
	// pool1 (2×2, stride 2)
	pool := make([]float32, O*8*8)
	for o := 0; o < O; o++ {
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				v := act[(o*H+2*y)*W+2*x]
				for _, d := range [][2]int{{0, 1}, {1, 0}, {1, 1}} {
					v = max(v, act[(o*H+2*y+d[0])*W+2*x+d[1]])
				}
				pool[(o*8+y)*8+x] = v
			}
		}
	}
	// mix1
	out := make([]float32, len(Perm)*8*8)
	for f, src := range Perm {
		for i := 0; i < 64; i++ {
			out[f*64+i] = pool[int(src)*64+i] * Gain[f]
		}
	}
	return out
}

// TestSampleIsDeterministic: the same seed writes the same file.
func TestSampleIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, seed uint64) []byte {
		m, err := build(seed)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := model.Save(m, p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b, c := write("a", 1), write("b", 1), write("c", 2); !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Error("the seed does not decide the file")
	}
}
