package customlayer_test

import (
	"fmt"
	"testing/fstest"

	"github.com/clhost/clhost/customlayer"
)

// A program can embed its configurations and kernels (//go:embed configs) and load
// them from the embedded fs.FS; sources resolve relative to the XML's folder.
func ExampleLoadFS() {
	fsys := fstest.MapFS{
		"configs/relu.xml": {Data: []byte(`<CustomLayer name="ReLU" type="SimpleGPU" version="1">
  <Kernel entry="relu"><Source filename="relu.cl"/></Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0"/>
    <Tensor arg-index="1" type="output" port-index="0"/>
  </Buffers>
</CustomLayer>`)},
		"configs/relu.cl": {Data: []byte("__kernel void relu(__global const float* in, __global float* out) {}\n")},
	}
	reg := customlayer.NewRegistry(func(note string) { fmt.Println("note:", note) })
	if err := reg.LoadFS(fsys, "configs/relu.xml"); err != nil {
		fmt.Println(err)
		return
	}
	l, _ := reg.Lookup("ReLU")
	fmt.Println(l.Entry, l.Sources[0].Path, l.NumBuffers(), l.WorkSizes.Global[0])
	// Output: relu configs/relu.cl 2 B*F*Y*X
}

// Parse checks a whole configuration at once; each layer tells which kernel it builds,
// what each kernel argument binds to, and its work sizes.
func ExampleParse() {
	config := []byte(`<CustomLayers>
  <CustomLayer name="ReLU" type="SimpleGPU" version="1">
    <Kernel entry="leaky_relu">
      <Source filename="relu.cl"/>
      <Define name="neg_slope" type="float" param="negative_slope" default="0.0"/>
    </Kernel>
    <Buffers>
      <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
      <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
    </Buffers>
    <WorkSizes global="X,Y,B*F"/>
  </CustomLayer>
  <CustomLayer name="ScaleShift" type="SimpleGPU" version="1">
    <Kernel entry="scale_shift"><Source filename="scale_shift.cl"/></Kernel>
    <Buffers>
      <Tensor arg-index="0" type="input" port-index="0"/>
      <Data arg-index="1" name="weights"/>
      <Tensor arg-index="2" type="output" port-index="0"/>
    </Buffers>
  </CustomLayer>
</CustomLayers>`)
	sources := fstest.MapFS{
		"relu.cl":        {Data: []byte("__kernel void leaky_relu(__global const float* x, __global float* y) {}\n")},
		"scale_shift.cl": {Data: []byte("__kernel void scale_shift(__global const float* x, __global const float* w, __global float* y) {}\n")},
	}
	layers, err := customlayer.Parse("layers.xml", config, customlayer.Options{FS: sources})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range layers {
		fmt.Printf("%s (%s): kernel %s from %s, global %v\n", l.Name, l.Where(), l.Entry, l.Sources[0].Path, l.WorkSizes.Global)
		for _, a := range l.Args() {
			if a.Tensor != nil {
				fmt.Printf("  arg %d: %v port %d, %v\n", a.Index, a.Tensor.Kind, a.Tensor.Port, a.Tensor.Format)
			} else {
				fmt.Printf("  arg %d: the layer's %q data\n", a.Index, a.Data.Name)
			}
		}
		for _, d := range l.Defines {
			fmt.Printf("  #define %s from parameter %q (default %s)\n", d.Name, d.Param, d.Default)
		}
	}
	// Output:
	// ReLU (layers.xml:2): kernel leaky_relu from relu.cl, global [X Y B*F]
	//   arg 0: input port 0, BFYX
	//   arg 1: output port 0, BFYX
	//   #define neg_slope from parameter "negative_slope" (default 0.0)
	// ScaleShift (layers.xml:13): kernel scale_shift from scale_shift.cl, global [B*F*Y*X]
	//   arg 0: input port 0, BFYX
	//   arg 1: the layer's "weights" data
	//   arg 2: output port 0, BFYX
}
