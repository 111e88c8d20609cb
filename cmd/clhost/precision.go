package main

import (
	"flag"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
)

// precisionFlag is --precision fp32|tf32|fp16 (docs/precision.md).
type precisionFlag struct{ p builtinkernels.Precision }

func (f *precisionFlag) String() string {
	if f == nil {
		return builtinkernels.PrecisionFP32.String()
	}
	return f.p.String()
}

func (f *precisionFlag) Set(s string) error {
	p, err := builtinkernels.ParsePrecision(s)
	if err != nil {
		return err
	}
	f.p = p
	return nil
}

// addPrecisionFlag registers --precision on fs.
func addPrecisionFlag(fs *flag.FlagSet) *precisionFlag {
	f := &precisionFlag{}
	fs.Var(f, "precision", "fp32 (the default), tf32 (tensor cores where the device has them, else fp32) or fp16 (activations and weights stored as half, arithmetic in float where the device has no half arithmetic)")
	return f
}
