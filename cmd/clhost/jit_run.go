package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/tensorio"
)

// jitRunFlags are the flags of `clhost jit --run`: one custom layer run alone on given
// data, without a model.
type jitRunFlags struct {
	run    *bool
	data   stringList
	expect stringList
	outDir *string
	seed   *int64
}

func addJitRunFlags(fs *flag.FlagSet, f *jitRunFlags) {
	f.run = fs.Bool("run", false, "run the layer alone on the device, under the sanitizer, on --input-data (seeded random data for inputs without)")
	fs.Var(&f.data, "input-data", "data of an input `inputN=FILE.npy`, of a Data blob NAME=FILE.npy, or FILE.npy alone for the next input port (repeatable; gives the input's shape when --input is left out)")
	fs.Var(&f.expect, "expect", "the expected value of an output, `outputN=FILE.npy` or FILE.npy alone for the next output port (repeatable)")
	f.outDir = fs.String("o", "", "with --run, write the outputs to this folder as outputN.npy")
	f.seed = fs.Int64("seed", 1, "seed of the random data for inputs without --input-data")
}

// jitData is the --input-data files sorted by what they feed.
type jitData struct {
	inputs map[int]*host.Tensor    // by input port
	blobs  map[string]*host.Tensor // by Data name
}

// readJitData reads the --input-data files: inputN=FILE, a Data name=FILE, or FILE for the
// next input port not yet given.
func readJitData(specs []string, layer *customlayer.Layer) (*jitData, error) {
	d := &jitData{inputs: map[int]*host.Tensor{}, blobs: map[string]*host.Tensor{}}
	next := 0
	for _, s := range specs {
		name, file, named := strings.Cut(s, "=")
		if !named {
			file = s
		}
		a, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--input-data %s: %w", s, err)
		}
		t := &host.Tensor{Shape: a.Shape, Data: a.Data}
		port, isPort := portName(name, "input")
		switch {
		case !named:
			for d.inputs[next] != nil {
				next++
			}
			d.inputs[next] = t
		case isPort:
			if d.inputs[port] != nil {
				return nil, usagef("--input-data %s: input %d given twice", s, port)
			}
			d.inputs[port] = t
		default:
			found := false
			for _, b := range layer.Data {
				found = found || b.Name == name
			}
			if !found {
				return nil, usagef("--input-data %s: %q is neither inputN nor a Data blob of layer type %q", s, name, layer.Name)
			}
			d.blobs[name] = t
		}
	}
	return d, nil
}

// portName reads "inputN" (or "outputN"): N and whether name has that form.
func portName(name, kind string) (int, bool) {
	rest, ok := strings.CutPrefix(name, kind)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0 && n <= 64
}

// readJitExpect reads the --expect files by output port.
func readJitExpect(specs []string, outputs int) (map[string]*host.Tensor, error) {
	out := map[string]*host.Tensor{}
	next := 0
	for _, s := range specs {
		name, file, named := strings.Cut(s, "=")
		port := next
		if named {
			p, ok := portName(name, "output")
			if !ok {
				return nil, usagef("--expect %s: name the output outputN (or give FILE.npy alone for the next one)", s)
			}
			port = p
		} else {
			file = s
			next++
		}
		if port >= outputs {
			return nil, usagef("--expect %s: the layer has %d outputs", s, outputs)
		}
		a, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--expect %s: %w", s, err)
		}
		out[fmt.Sprintf("output%d", port)] = &host.Tensor{Shape: a.Shape, Data: a.Data}
	}
	return out, nil
}

// runJitLayer runs one instance of a custom layer alone under the sanitizer and
// compares its outputs with the expected ones; it prints the report on stdout.
func runJitLayer(layer *customlayer.Layer, inst jit.Instance, data *jitData, f *jitRunFlags, configs []string, dev string, stdout, stderr io.Writer) error {
	expect, err := readJitExpect(f.expect, len(inst.Outputs))
	if err != nil {
		return err
	}
	if *f.outDir != "" {
		if err := checkOutDir(*f.outDir); err != nil {
			return err
		}
	}
	for _, d := range layer.Data {
		if data.blobs[d.Name] == nil {
			return usagef("Data %q of layer type %q: give its values with --input-data %s=FILE.npy", d.Name, layer.Name, d.Name)
		}
	}
	m, err := host.SingleLayerModel(layer, inst, data.blobs)
	if err != nil {
		return err
	}
	e, err := host.NewEngine(host.Options{Device: dev, Configs: configs, KeepIntermediates: true, Log: stderr})
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Fprintf(stderr, "clhost: running %s (%s) alone on %s\n", inst.Name, layer.Name, e.Device().Name)
	n, err := e.Compile(m)
	if err != nil {
		return err
	}
	in := map[string]*host.Tensor{}
	rng := rand.New(rand.NewSource(*f.seed))
	for i, t := range inst.Inputs {
		name := fmt.Sprintf("input%d", i)
		if d := data.inputs[i]; d != nil {
			in[name] = d
			continue
		}
		v := make([]float32, elementsOf(t.Shape))
		for k := range v {
			v[k] = float32(rng.NormFloat64())
		}
		fmt.Fprintf(stderr, "clhost: %s %v: random normal data (seed %d)\n", name, t.Shape, *f.seed)
		in[name] = &host.Tensor{Shape: t.Shape, Data: v}
	}
	r, outs, err := n.Check(context.Background(), in, host.CheckOptions{Sanitize: true, Expect: expect, NoReferences: true})
	if err != nil {
		return expectFlagError(err)
	}
	for i := range inst.Outputs {
		name := fmt.Sprintf("output%d", i)
		t := outs[name]
		line := fmt.Sprintf("%s %v", name, t.Shape)
		if *f.outDir != "" {
			path := filepath.Join(*f.outDir, name+".npy")
			if err := tensorio.WriteFile(path, t.Shape, t.Data); err != nil {
				return err
			}
			line += " -> " + path
		}
		fmt.Fprintf(stdout, "%s\n  %s\n", line, summarize(t.Data))
	}
	if err := r.Write(stdout); err != nil {
		return err
	}
	if r.Failed() {
		return errCheckFailed
	}
	return nil
}

// shapesFromData fills the input tensors that --input left out from the --input-data
// files' shapes.
func shapesFromData(inputs []jit.Tensor, data *jitData) ([]jit.Tensor, error) {
	for port := range data.inputs {
		for len(inputs) <= port {
			inputs = append(inputs, jit.Tensor{Format: customlayer.ANY})
		}
	}
	for port, t := range inputs {
		d := data.inputs[port]
		switch {
		case t.Shape == nil && d == nil:
			return nil, usagef("input %d has neither --input nor --input-data", port)
		case t.Shape == nil:
			inputs[port].Shape = append([]int(nil), d.Shape...)
		case d != nil && !slices.Equal(t.Shape, d.Shape) && elementsOf(t.Shape) != elementsOf(d.Shape):
			return nil, usagef("input %d: --input says %v, --input-data holds %v", port, t.Shape, d.Shape)
		case d != nil:
			d.Shape = t.Shape
		}
	}
	return inputs, nil
}
