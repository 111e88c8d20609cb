package builtinkernels

import "fmt"

// MMAProbeCase is one tensor-core probe: a plan of a single warp-wide mma at one
// precision, its inputs A, B, C, and the D it must give exactly (small whole numbers,
// which tf32 and f16 hold and fp32 sums without rounding).
type MMAProbeCase struct {
	Precision Precision
	Plan      *Plan
	Inputs    []*HostTensor
	Out       [][]int
	Want      []float32
}

// MMAProbeCases are the probe's two cases, m16n8k8 tf32 and m16n8k16 f16, written for
// PTX (ptx) or for the emulation of the same fragments.
func MMAProbeCases(ptx bool) ([]MMAProbeCase, error) {
	ops, err := kernelSource("mma_ops.cl")
	if err != nil {
		return nil, err
	}
	body, err := kernelSource("mma_probe.cl")
	if err != nil {
		return nil, err
	}
	var cases []MMAProbeCase
	for _, prec := range []Precision{PrecisionTF32, PrecisionFP16} {
		k := 8
		if prec == PrecisionFP16 {
			k = 16
		}
		var d defines
		d.bool("MMA_PTX", ptx)
		d.bool("MMA_FP16", prec == PrecisionFP16)
		d.int("MMA_NW", 1)
		a, b, c := make([]float32, 16*k), make([]float32, k*8), make([]float32, 16*8)
		// Values in -3..3 from the position, so that a misplaced element changes D.
		for i := range a {
			a[i] = float32((i*3+i/7)%7 - 3)
		}
		for i := range b {
			b[i] = float32((i*5+i/3+1)%7 - 3)
		}
		for i := range c {
			c[i] = float32(i%5 - 2)
		}
		want := make([]float32, 16*8)
		for m := 0; m < 16; m++ {
			for n := 0; n < 8; n++ {
				s := c[m*8+n]
				for kk := 0; kk < k; kk++ {
					s += a[m*k+kk] * b[kk*8+n]
				}
				want[m*8+n] = s
			}
		}
		args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgInput, Index: 2}, {Kind: ArgOutput, Index: 0}}
		cases = append(cases, MMAProbeCase{
			Precision: prec,
			Plan: &Plan{Source: d.b.String() + ops + body, AliasInput: -1,
				Launches: []Launch{{Kernel: "mma_probe", Global: []int{32}, Local: []int{32}, Args: args}}},
			Inputs: []*HostTensor{{Shape: []int{16, k}, Data: a}, {Shape: []int{k, 8}, Data: b}, {Shape: []int{16, 8}, Data: c}},
			Out:    [][]int{{16, 8}},
			Want:   want,
		})
	}
	return cases, nil
}

// Check compares the probe's output with the D it must give.
func (c MMAProbeCase) Check(got []float32) error {
	if len(got) != len(c.Want) {
		return fmt.Errorf("mma probe %v: %d values, want %d", c.Precision, len(got), len(c.Want))
	}
	for i, w := range c.Want {
		if got[i] != w {
			return fmt.Errorf("mma probe %v: D[%d][%d] = %v, want %v", c.Precision, i/8, i%8, got[i], w)
		}
	}
	return nil
}
