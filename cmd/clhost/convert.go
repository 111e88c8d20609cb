package main

import (
	"fmt"
	"os"

	"github.com/clhost/clhost/host"
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
	if host.ModelFormat(in) == "" {
		return usagef("input %s: unknown model format: use %s, %s or %s", in, host.FormatCLM, host.FormatJSON, host.FormatONNX)
	}
	switch host.ModelFormat(out) {
	case host.FormatCLM, host.FormatJSON:
	default:
		return usagef("output %s: clhost writes %s or %s", out, host.FormatCLM, host.FormatJSON)
	}
	m, err := host.LoadModel(in)
	if err != nil {
		return err
	}
	if err := host.SaveModel(m, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s → %s: %d layers, %d tensors\n", in, out, len(m.Layers), len(m.Tensors))
	return nil
}
