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
