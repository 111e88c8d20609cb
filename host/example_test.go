package host_test

import (
	"context"
	"fmt"
	"log"

	"github.com/clhost/clhost/host"
)

// A model whose one layer, of type "ReLU", has no built-in kernel: the custom-layer
// configuration supplies it (the leaky ReLU of samples/custom_relu). The zero Options
// choose what the clhost command does for the device.
func Example() {
	m, err := host.LoadModel("testdata/leaky_relu.json") // .clm, .json or .onnx
	if err != nil {
		log.Fatal(err)
	}
	e, err := host.NewEngine(host.Options{
		Device:  "cpu",
		Configs: []string{"../samples/custom_relu/custom_layer_example.xml"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("custom layers:", n.CustomLayers())

	x := &host.Tensor{Shape: []int{1, 2, 3, 4}, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i-12) / 4 // -3 to 2.75
	}
	out, err := n.Infer(context.Background(), map[string]*host.Tensor{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	y := out["y"]
	sum := 0.0
	for _, v := range y.Data {
		sum += float64(v)
	}
	fmt.Printf("y: shape %v, y[0] %.4g, sum %.4f\n", y.Shape, y.Data[0], sum)
	// Output:
	// custom layers: [relu (ReLU)]
	// y: shape [1 2 3 4], y[0] -0.3, sum 14.5500
}
