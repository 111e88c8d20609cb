package main

import (
	"fmt"
	"os"

	"github.com/clhost/clhost/host"
)

func init() {
	register(command{name: "convert", summary: "convert a model: .clm ↔ .json, .onnx or OpenVINO IR (.xml + .bin) → .clm/.json", run: runConvert})
}

func runConvert(args []string) error {
	fs := newFlagSet("convert")
	inFlag := fs.String("m", "", "the model to convert (or the first argument)")
	outFlag := fs.String("o", "", "the file to write, .clm or .json (or the second argument)")
	weights := fs.String("weights", "", "an OpenVINO IR's weights `file` (default: the .bin beside the .xml)")
	var configs stringList
	fs.Var(&configs, "c", "custom-layer configuration XML (repeatable): layers of the types it defines are kept as the model writes them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	in, out := *inFlag, *outFlag
	rest := fs.Args()
	if in == "" && len(rest) > 0 {
		in, rest = rest[0], rest[1:]
	}
	if out == "" && len(rest) > 0 {
		out, rest = rest[0], rest[1:]
	}
	if in == "" || out == "" || len(rest) > 0 {
		return usagef("want a model and an output (clhost convert -m model.xml -o model.clm, or clhost convert model.onnx model.clm)")
	}
	if host.ModelFormat(in) == "" {
		return usagef("input %s: unknown model format: use %s, %s, %s or %s (OpenVINO IR)", in, host.FormatCLM, host.FormatJSON, host.FormatONNX, host.FormatIR)
	}
	switch host.ModelFormat(out) {
	case host.FormatCLM, host.FormatJSON:
	default:
		return usagef("output %s: clhost writes %s or %s", out, host.FormatCLM, host.FormatJSON)
	}
	// Custom layers are read first: an IR's extension ops, and ONNX nodes they
	// implement, are kept as written only when the configurations name them.
	layers, err := host.LoadConfigs(host.Options{Configs: configs})
	if err != nil {
		return configError(err)
	}
	m, err := host.LoadOptions{Layers: layers, Weights: *weights}.Load(in)
	if err != nil {
		return err
	}
	if err := host.SaveModel(m, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s → %s: %d layers, %d tensors\n", in, out, len(m.Layers), len(m.Tensors))
	return nil
}
