// Command custom_relu writes the sample model of samples/custom_relu: a convolution whose
// output goes through a layer of type "ReLU" — a type clhost has no built-in for, so it
// runs the user's example_relu_kernel from custom_layer_example.xml — and a max pool.
//
// With -reference DIR it also writes an input and what each layer must compute from it,
// worked out here in plain Go, for `clhost run -i DIR/image.npy --expect
// relu1=DIR/relu1.npy --check`: the custom kernel's values checked against a reference
// that does not come from clhost.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"github.com/clhost/clhost/model"
	"github.com/clhost/clhost/tensorio"
)

func main() {
	out := flag.String("o", "custom_relu.clm", "model file to write")
	ref := flag.String("reference", "", "also write an input (image.npy) and the values the layers must compute from it (relu1.npy, pool1.npy) to this folder")
	flag.Parse()
	p := newParams()
	m, err := build(p)
	if err == nil {
		err = model.Save(m, *out)
	}
	if err == nil && *ref != "" {
		err = writeReference(p, *ref)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom_relu:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
	if *ref != "" {
		fmt.Printf("wrote %s: image.npy, and relu1.npy and pool1.npy computed from it in Go\n", *ref)
	}
}

// params are the sample's weights, drawn from a fixed seed so that the model file and the
// reference agree.
type params struct {
	weight, bias []float32 // conv1: 8 filters of 3×3×3, 8 biases
}

// negativeSlope is the ReLU layer's negative_slope attribute: the kernel's neg_slope.
const negativeSlope = 0.1

func newParams() params {
	rng := rand.New(rand.NewSource(1))
	return params{weight: randn(rng, 8*3*3*3, 0.3), bias: randn(rng, 8, 0.1)}
}

func randn(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return v
}

func build(p params) (*model.Model, error) {
	b := model.NewBuilder("custom_relu")
	x := b.Input("image", model.Float32, 1, 3, 32, 32)
	w := b.ConstFloat32("conv1.weight", []int{8, 3, 3, 3}, p.weight)
	bias := b.ConstFloat32("conv1.bias", []int{8}, p.bias)
	c := b.Layer("Conv", "conv1", []string{x, w, bias},
		model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	// A custom layer's output shape comes from the model, so it is declared here.
	r := b.Tensor("relu1", model.Float32, 1, 8, 32, 32)
	b.LayerOutputs("ReLU", "relu1", []string{c}, []string{r}, model.FloatAttr("negative_slope", negativeSlope))
	p1 := b.Layer("MaxPool", "pool1", []string{r},
		model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(p1)
	return b.Build()
}

// writeReference writes image.npy (normal random values of another seed), relu1.npy and
// pool1.npy to dir.
func writeReference(p params, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	image := randn(rand.New(rand.NewSource(2)), 3*32*32, 1)
	relu, pool := reference(p, image)
	for _, f := range []struct {
		name  string
		shape []int
		data  []float32
	}{
		{"image.npy", []int{1, 3, 32, 32}, image},
		{"relu1.npy", []int{1, 8, 32, 32}, relu},
		{"pool1.npy", []int{1, 8, 16, 16}, pool},
	} {
		if err := tensorio.WriteFile(filepath.Join(dir, f.name), f.shape, f.data); err != nil {
			return err
		}
	}
	return nil
}

// reference computes the sample's layers in plain loops: the 3×3 convolution with padding
// 1 (sums in float64), the leaky ReLU the custom kernel implements, and the 2×2 max pool
// of stride 2. It returns relu1 and pool1.
func reference(p params, image []float32) (relu, pool []float32) {
	const cin, cout, h, w = 3, 8, 32, 32
	relu = make([]float32, cout*h*w)
	for o := range cout {
		for y := range h {
			for x := range w {
				sum := float64(p.bias[o])
				for c := range cin {
					for ky := range 3 {
						for kx := range 3 {
							iy, ix := y+ky-1, x+kx-1
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue
							}
							sum += float64(p.weight[((o*cin+c)*3+ky)*3+kx]) * float64(image[(c*h+iy)*w+ix])
						}
					}
				}
				if sum < 0 {
					sum *= negativeSlope
				}
				relu[(o*h+y)*w+x] = float32(sum)
			}
		}
	}
	pool = make([]float32, cout*(h/2)*(w/2))
	for o := range cout {
		for y := range h / 2 {
			for x := range w / 2 {
				m := relu[(o*h+2*y)*w+2*x]
				for _, v := range []float32{relu[(o*h+2*y)*w+2*x+1], relu[(o*h+2*y+1)*w+2*x], relu[(o*h+2*y+1)*w+2*x+1]} {
					m = max(m, v)
				}
				pool[(o*(h/2)+y)*(w/2)+x] = m
			}
		}
	}
	return relu, pool
}
