// Command custom_layers writes the sample model of samples/custom_layers, which mixes
// built-in layers with the two custom layers of custom_layers.xml:
//
//	image 1×3×16×16
//	→ conv1   Conv 8×3×3×3, pads 1, bias   (built-in)      1×8×16×16
//	→ block1  ScaleShift                   (custom, Data)  1×8×16×16
//	          scale, shift = constants block1.scale, block1.shift
//	→ relu1   Relu                         (built-in)      1×8×16×16
//	→ pool1   MaxPool 2×2, stride 2        (built-in)      1×8×8×8
//	→ mix1    ChannelMix                   (custom, int[] and float[] parameters)
//	          perm = [7 0 3 5], gain = [0.5 -1 2 0.25]     1×4×8×8
//
// The weights are seeded random numbers, so the same seed always writes the same file.
//
//	go run ./samples/custom_layers -o mixed.clm
//	clhost run -m mixed.clm -c samples/custom_layers/custom_layers.xml --check --profile
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/clhost/clhost/model"
)

// The ChannelMix parameters: output channel f is input channel Perm[f] times Gain[f].
var (
	Perm = []int64{7, 0, 3, 5}
	Gain = []float32{0.5, -1, 2, 0.25}
)

func main() {
	out := flag.String("o", "mixed.clm", "output model file (.clm)")
	seed := flag.Uint64("seed", 1, "seed of the random weights")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "custom_layers: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	m, err := build(*seed)
	if err == nil {
		err = model.Save(m, *out)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "custom_layers: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", *out)
}

func build(seed uint64) (*model.Model, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6d69786564)) // "mixed"
	uniform := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = lo + (hi-lo)*rng.Float32()
		}
		return v
	}
	const inC, outC, k = 3, 8, 3

	b := model.NewBuilder("custom_layers")
	x := b.Input("image", model.Float32, 1, inC, 16, 16)
	w := b.ConstFloat32("conv1.weight", []int{outC, inC, k, k}, uniform(outC*inC*k*k, -0.2, 0.2))
	bias := b.ConstFloat32("conv1.bias", []int{outC}, uniform(outC, -0.1, 0.1))
	c := b.Layer("Conv", "conv1", []string{x, w, bias},
		model.IntsAttr("kernel_shape", k, k), model.IntsAttr("pads", 1, 1, 1, 1))

	// A custom layer's output shape comes from the model, so it is declared here. Its
	// constant inputs are bound to the kernel by name (Data name="scale", name="shift").
	scale := b.ConstFloat32("block1.scale", []int{outC}, uniform(outC, 0.5, 2))
	shift := b.ConstFloat32("block1.shift", []int{outC}, uniform(outC, -0.5, 0.5))
	s := b.Tensor("block1", model.Float32, 1, outC, 16, 16)
	b.LayerOutputs("ScaleShift", "block1", []string{c, scale, shift}, []string{s})

	r := b.Layer("Relu", "relu1", []string{s})
	p := b.Layer("MaxPool", "pool1", []string{r},
		model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))

	mix := b.Tensor("mix1", model.Float32, 1, len(Perm), 8, 8)
	b.LayerOutputs("ChannelMix", "mix1", []string{p}, []string{mix},
		model.IntsAttr("perm", Perm...), model.FloatsAttr("gain", Gain...))
	b.Output(mix)
	return b.Build()
}
