// Command convpool writes OCL-ENGINE's benchmark model with the model Builder: a 1×3×416×416
// input, a 10×3×4×4 convolution with bias and stride 4 (→ 1×10×104×104), and a 2×2 max pool
// with stride 2 (→ 1×10×52×52). The weights are seeded random numbers, so the same seed
// always writes the same file.
//
//	go run ./samples/convpool -o convpool.clm
//	clhost inspect -m convpool.clm
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/clhost/clhost/model"
)

func main() {
	out := flag.String("o", "convpool.clm", "output model file (.clm)")
	seed := flag.Uint64("seed", 1, "seed of the random weights")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "convpool: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	m, err := build(*seed)
	if err == nil {
		err = model.Save(m, *out)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "convpool: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", *out)
}

// build makes the model. Weights are uniform in ±1/√fan_in, PyTorch's default range for a
// convolution, so activations stay of order one.
func build(seed uint64) (*model.Model, error) {
	rng := rand.New(rand.NewPCG(seed, 0x636f6e76706f6f6c)) // "convpool"
	const outC, inC, k = 10, 3, 4
	bound := float32(1 / math.Sqrt(inC*k*k))
	uniform := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = (2*rng.Float32() - 1) * bound
		}
		return v
	}

	b := model.NewBuilder("convpool")
	x := b.Input("data", model.Float32, 1, inC, 416, 416)
	w := b.ConstFloat32("conv1.weight", []int{outC, inC, k, k}, uniform(outC*inC*k*k))
	bias := b.ConstFloat32("conv1.bias", []int{outC}, uniform(outC))
	// Every shape is declared in the file, so readers can check them without inferring.
	c := b.Tensor("conv1", model.Float32, 1, outC, 104, 104)
	b.LayerOutputs("Conv", "conv1", []string{x, w, bias}, []string{c},
		model.IntsAttr("kernel_shape", k, k),
		model.IntsAttr("strides", k, k),
		model.IntsAttr("pads", 0, 0, 0, 0))
	p := b.Tensor("pool1", model.Float32, 1, outC, 52, 52)
	b.LayerOutputs("MaxPool", "pool1", []string{c}, []string{p},
		model.IntsAttr("kernel_shape", 2, 2),
		model.IntsAttr("strides", 2, 2))
	b.Output(p)
	m, err := b.Build()
	if err != nil {
		return nil, err
	}
	return m, nil
}
