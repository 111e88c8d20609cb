// Command custom_relu writes the sample model of samples/custom_relu: a convolution whose
// output goes through a layer of type "ReLU" — a type clhost has no built-in for, so it
// runs the user's example_relu_kernel from custom_layer_example.xml — and a max pool.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"

	"github.com/clhost/clhost/host/model"
)

func main() {
	out := flag.String("o", "custom_relu.clm", "model file to write")
	flag.Parse()
	m, err := build()
	if err == nil {
		err = model.Save(m, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom_relu:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

func build() (*model.Model, error) {
	rng := rand.New(rand.NewSource(1))
	randn := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64()) * scale
		}
		return v
	}
	b := model.NewBuilder("custom_relu")
	x := b.Input("image", model.Float32, 1, 3, 32, 32)
	w := b.ConstFloat32("conv1.weight", []int{8, 3, 3, 3}, randn(8*3*3*3, 0.3))
	bias := b.ConstFloat32("conv1.bias", []int{8}, randn(8, 0.1))
	c := b.Layer("Conv", "conv1", []string{x, w, bias},
		model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	// A custom layer's output shape comes from the model, so it is declared here.
	r := b.Tensor("relu1", model.Float32, 1, 8, 32, 32)
	b.LayerOutputs("ReLU", "relu1", []string{c}, []string{r}, model.FloatAttr("negative_slope", 0.1))
	p := b.Layer("MaxPool", "pool1", []string{r},
		model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(p)
	return b.Build()
}
