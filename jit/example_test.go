package jit_test

import (
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
)

// Generate writes the program of one layer instance: defines for its parameters and
// for each tensor's shape, layout and type, in front of the user's kernel source.
func ExampleGenerate() {
	config := []byte(`<CustomLayer name="ReLU" type="SimpleGPU" version="1">
  <Kernel entry="leaky_relu">
    <Source filename="relu.cl"/>
    <Define name="neg_slope" type="float" param="negative_slope" default="0.0"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
    <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>`)
	sources := fstest.MapFS{"relu.cl": {Data: []byte("__kernel void leaky_relu(__global const INPUT0_TYPE* x, __global OUTPUT0_TYPE* y) {}\n")}}
	layers, err := customlayer.Parse("relu.xml", config, customlayer.Options{FS: sources})
	if err != nil {
		fmt.Println(err)
		return
	}
	shape := []int{1, 8, 4, 6}
	p, err := jit.Generate(layers[0], jit.Instance{
		Name:    "relu1",
		Inputs:  []jit.Tensor{{Shape: shape}},
		Outputs: []jit.Tensor{{Shape: shape}},
		Params:  jit.ParamMap{"negative_slope": jit.Float(0.1)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(p.Source, "\n") {
		for _, name := range []string{"neg_slope", "INPUT0_DIMS", "INPUT0_PITCHES", "INPUT0_TYPE", "GLOBAL_WORKSIZE"} {
			if strings.HasPrefix(line, "#define "+name+" ") {
				fmt.Println(line)
			}
		}
	}
	fmt.Println("entry", p.Entry, "options", p.Options, "global", p.Global)
	// Output:
	// #define GLOBAL_WORKSIZE (size_t []){ 6,4,8, }
	// #define INPUT0_DIMS (int []){ 1,8,4,6, }
	// #define INPUT0_TYPE float
	// #define INPUT0_PITCHES (int []){ 192,24,6,1, }
	// #define neg_slope 0.1f
	// entry leaky_relu options -cl-mad-enable global [6 4 8]
}
