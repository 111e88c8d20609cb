package main

import (
	"fmt"
	"os"
)

func init() {
	register(command{name: "convert", summary: "convert a model: .clm ↔ .json, .onnx → .clm/.json", run: runConvert})
}

func runConvert(args []string) error {
	fs := newFlagSet("convert")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want two arguments, IN and OUT (clhost convert model.onnx model.clm); got %d", fs.NArg())
	}
	in, out := fs.Arg(0), fs.Arg(1)
	switch modelExt(in) {
	case extCLM, extJSON, extONNX:
	default:
		return usagef("input %s: unknown model format: use %s, %s or %s", in, extCLM, extJSON, extONNX)
	}
	switch modelExt(out) {
	case extCLM, extJSON:
	default:
		return usagef("output %s: clhost writes %s or %s", out, extCLM, extJSON)
	}
	m, err := loadModel(in)
	if err != nil {
		return err
	}
	if err := saveModel(m, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s → %s: %d layers, %d tensors\n", in, out, len(m.Layers), len(m.Tensors))
	return nil
}
