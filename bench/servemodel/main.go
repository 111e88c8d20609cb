// Command servemodel writes the small model bench/serve.sh measures clhost serve with
// when no other is given: a multilayer perceptron (three Gemm layers, 2048 wide)
// whose first activation is the custom leaky ReLU of samples/custom_relu. At batch 1
// its inference reads every weight for one row, so batching requests shares that
// traffic, which is what a server's dynamic batching is for.
//
// With -image CxHxW its input is an image of that shape, averaged per channel before
// the perceptron: requests as large as a vision model's (3x224x224 is ResNet-18's
// 602 KB) at almost no compute, so that a server's cost per byte of request shows.
//
//	go run ./bench/servemodel -o mlp.clm
//	clhost serve -m mlp.clm -c samples/custom_relu/custom_layer_example.xml
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"

	"github.com/clhost/clhost/model"
)

func main() {
	out := flag.String("o", "mlp.clm", "model file to write")
	width := flag.Int("width", 2048, "inputs and hidden units per layer")
	image := flag.String("image", "", "take an image of this shape (CxHxW, such as 3x224x224), averaged per channel, as the input")
	flag.Parse()
	chw, err := parseImage(*image)
	var m *model.Model
	if err == nil {
		m, err = build(*width, chw)
	}
	if err == nil {
		err = model.Save(m, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "servemodel:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

// parseImage reads CxHxW; "" is no image.
func parseImage(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return nil, fmt.Errorf("-image %q: want CxHxW, such as 3x224x224", s)
	}
	chw := make([]int, 3)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("-image %q: %q is not a positive size", s, p)
		}
		chw[i] = v
	}
	return chw, nil
}

func build(n int, image []int) (*model.Model, error) {
	rng := rand.New(rand.NewSource(1))
	weights := func(rows, cols int) []float32 {
		v := make([]float32, rows*cols)
		scale := math.Sqrt(2 / float64(cols))
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	const classes = 1000
	b := model.NewBuilder("mlp")
	var x string
	in := n
	if image != nil {
		img := b.Input("x", model.Float32, 1, image[0], image[1], image[2])
		pooled := b.Layer("GlobalAveragePool", "pool", []string{img})
		x = b.Layer("Flatten", "flat0", []string{pooled}, model.IntAttr("axis", 1))
		in = image[0]
	} else {
		x = b.Input("x", model.Float32, 1, n)
	}
	h := b.Layer("Gemm", "fc1", []string{x, b.ConstFloat32("fc1.weight", []int{n, in}, weights(n, in)),
		b.ConstFloat32("fc1.bias", []int{n}, make([]float32, n))}, model.IntAttr("transB", 1))
	// The custom kernel takes BFYX tensors: the activations as n channels of 1×1.
	h4 := b.Layer("Reshape", "to4d", []string{h, b.ConstInt64("shape4", []int{4}, []int64{-1, int64(n), 1, 1})})
	r := b.Tensor("relu1", model.Float32, 1, n, 1, 1)
	b.LayerOutputs("ReLU", "relu1", []string{h4}, []string{r}, model.FloatAttr("negative_slope", 0.1))
	f := b.Layer("Flatten", "flat", []string{r}, model.IntAttr("axis", 1))
	h = b.Layer("Gemm", "fc2", []string{f, b.ConstFloat32("fc2.weight", []int{n, n}, weights(n, n)),
		b.ConstFloat32("fc2.bias", []int{n}, make([]float32, n))}, model.IntAttr("transB", 1))
	h = b.Layer("Relu", "relu2", []string{h})
	y := b.Layer("Gemm", "logits", []string{h, b.ConstFloat32("fc3.weight", []int{classes, n}, weights(classes, n)),
		b.ConstFloat32("fc3.bias", []int{classes}, make([]float32, classes))}, model.IntAttr("transB", 1))
	b.Output(y)
	return b.Build()
}
