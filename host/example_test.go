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

// Checking an inference: the custom ReLU of Example runs under the sanitizer, and its
// output is compared with values computed here (the kernel's slope is 0.1). Built-in
// layers would also be compared with their CPU references, and the graph outputs with
// the whole network computed on the CPU.
func ExampleNetwork_Check() {
	m, err := host.LoadModel("testdata/leaky_relu.json")
	if err != nil {
		log.Fatal(err)
	}
	e, err := host.NewEngine(host.Options{
		Device:            "cpu",
		Configs:           []string{"../samples/custom_relu/custom_layer_example.xml"},
		KeepIntermediates: true, // every activation stays readable for the check
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	x := &host.Tensor{Shape: []int{1, 2, 3, 4}, Data: make([]float32, 24)}
	want := &host.Tensor{Shape: x.Shape, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i-12) / 4
		want.Data[i] = max(x.Data[i], 0.1*x.Data[i])
	}
	r, _, err := n.Check(context.Background(), map[string]*host.Tensor{"x": x}, host.CheckOptions{
		Sanitize: true,
		Expect:   map[string]*host.Tensor{"y": want},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range r.Layers {
		fmt.Printf("%s (%s): %s, sanitized %v\n", l.Layer, l.Type, l.Verdict(), l.Sanitized)
	}
	fmt.Println(r.Summary())
	// Output:
	// relu (ReLU): ok, sanitized true
	// check passed: 1 of 1 layers' values checked
}
