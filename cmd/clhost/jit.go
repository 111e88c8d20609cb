package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/jit"
)

func init() {
	register(command{name: "jit", summary: "print the program text of a custom layer instance (build it with --build, run it alone with --run)", run: func(args []string) error {
		return runJit(args, os.Stdout, os.Stderr)
	}})
}

// tensorList is a repeatable --input/--output flag: DIMS[:FORMAT][:TYPE].
type tensorList []jit.Tensor

func (l *tensorList) String() string { return fmt.Sprint(len(*l), " tensors") }

func (l *tensorList) Set(v string) error {
	t, err := parseTensorSpec(v)
	if err != nil {
		return err
	}
	*l = append(*l, t)
	return nil
}

// parseTensorSpec reads DIMS[:FORMAT][:TYPE], e.g. 1x96x55x55, 1x3x8x8:byxf, 4x10:half.
// Without a format the tensor takes the one the layer declares.
func parseTensorSpec(s string) (jit.Tensor, error) {
	t := jit.Tensor{Format: customlayer.ANY}
	parts := strings.Split(s, ":")
	if parts[0] == "" {
		return t, fmt.Errorf("%q: no dimensions (want e.g. 1x96x55x55[:byxf][:half])", s)
	}
	for _, d := range strings.Split(parts[0], "x") {
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || n < 1 {
			return t, fmt.Errorf("%q: dimension %q is not a positive integer (want e.g. 1x96x55x55)", s, d)
		}
		t.Shape = append(t.Shape, n)
	}
	if len(t.Shape) > 4 {
		return t, fmt.Errorf("%q: %d dimensions, at most 4", s, len(t.Shape))
	}
	haveFormat := false
	for _, p := range parts[1:] {
		if f, ok := customlayer.ParseFormat(p); ok {
			if haveFormat {
				return t, fmt.Errorf("%q: two formats", s)
			}
			t.Format, haveFormat = f, true
			continue
		}
		if !jit.IsElementType(p) {
			return t, fmt.Errorf("%q: %q is neither a format (bfyx, byxf, yxfb, fyxb, any) nor an element type (%s)", s, p, jit.ElementTypes)
		}
		if t.Type != "" {
			return t, fmt.Errorf("%q: two element types", s)
		}
		t.Type = p
	}
	return t, nil
}

// paramList is a repeatable --param NAME=VALUE flag.
type paramList struct {
	m     jit.ParamMap
	order []string
}

func (p *paramList) String() string { return strings.Join(p.order, ",") }

func (p *paramList) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE (e.g. negative_slope=0.1 or width=2,3,4)", v)
	}
	if p.m == nil {
		p.m = jit.ParamMap{}
	}
	if _, dup := p.m[name]; dup {
		return fmt.Errorf("parameter %q given twice", name)
	}
	p.m[name] = jit.ParseValue(val)
	p.order = append(p.order, name)
	return nil
}

func runJit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("jit")
	var configs stringList
	var inputs, outputs tensorList
	var params paramList
	fs.Var(&configs, "c", "custom-layer configuration `file` (XML); repeatable")
	layerType := fs.String("l", "", "the custom layer `type` to instantiate")
	fs.Var(&inputs, "input", "an input tensor `DIMS[:FORMAT][:TYPE]` (e.g. 1x96x55x55, 1x3x8x8:byxf:half); repeat in port order")
	fs.Var(&outputs, "output", "an output tensor `DIMS[:FORMAT][:TYPE]`; repeat in port order")
	fs.Var(&params, "param", "a layer parameter `NAME=VALUE` (0.1 is a float, 3 an int, 2,3,4 a list); repeatable")
	name := fs.String("name", "", "the layer instance name used in messages (default: the type)")
	build := fs.Bool("build", false, "compile the program on the device and print ok or the build log instead of the program text")
	var rf jitRunFlags
	addJitRunFlags(fs, &rf)
	dev := deviceFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case len(configs) == 0:
		return usagef("no configuration: give -c FILE")
	case *layerType == "":
		return usagef("no layer type: give -l TYPE")
	case len(outputs) == 0:
		return usagef("no output tensor: give --output DIMS[:FORMAT]")
	}
	if *dev != "" && !*build && !*rf.run {
		return usagef("-d only matters with --build or --run")
	}
	if !*rf.run && (len(rf.data) > 0 || len(rf.expect) > 0 || *rf.outDir != "") {
		return usagef("--input-data, --expect and -o only matter with --run")
	}

	reg, err := loadConfigs(configs, stderr, true)
	if err != nil {
		return configError(err)
	}
	layer, ok := reg.Lookup(*layerType)
	if !ok {
		var have []string
		for _, l := range reg.Layers() {
			have = append(have, strconv.Quote(l.Name))
		}
		return fmt.Errorf("no custom layer of type %q in %s or the global configuration (defined: %s)", *layerType, strings.Join(configs, ", "), strings.Join(have, ", "))
	}
	var data *jitData
	if *rf.run {
		if data, err = readJitData(rf.data, layer); err != nil {
			return err
		}
		if inputs, err = shapesFromData(inputs, data); err != nil {
			return err
		}
	}
	inst := jit.Instance{Name: *name, Inputs: inputs, Outputs: outputs, Params: params.m}
	if inst.Name == "" {
		inst.Name = layer.Name
	}
	prog, err := jit.Generate(layer, inst)
	if err != nil {
		// An instance without inputs is most often a command line that forgot them: the
		// bare "binds input port 0, but the layer has 0 inputs" does not say how to give one.
		if len(inst.Inputs) < layerInputs(layer) {
			return fmt.Errorf("%w\n(the layer's Buffers bind %d input(s), %d given: pass each with --input DIMS[:FORMAT][:TYPE] or, with --run, --input-data inputN=FILE.npy)", err, layerInputs(layer), len(inst.Inputs))
		}
		return err
	}
	// --build answers ok or the build log, as the README says; the program text, pages
	// of it, would bury that answer, and jit without --build prints it.
	if !*rf.run && !*build {
		if _, err := io.WriteString(stdout, prog.Source); err != nil {
			return err
		}
	}
	local := "chosen by the driver"
	if len(prog.Local) > 0 {
		local = joinInts(prog.Local)
	}
	fmt.Fprintf(stderr, "clhost: entry %s, options %q, global work size %s, local %s\n", prog.Entry, prog.Options, joinInts(prog.Global), local)
	if *rf.run {
		return runJitLayer(layer, inst, data, &rf, configs, *dev, stdout, stderr)
	}
	if !*build {
		return nil
	}
	return buildProgram(layer, prog, *dev, stderr)
}

// layerInputs is the number of input ports the layer's Buffers bind: one more than the
// highest input port-index.
func layerInputs(l *customlayer.Layer) int {
	n := 0
	for _, t := range l.Tensors {
		if t.Kind == customlayer.Input && t.Port+1 > n {
			n = t.Port + 1
		}
	}
	return n
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// buildProgram compiles prog on the selected device and checks that the entry exists
// with one argument per declared buffer.
func buildProgram(layer *customlayer.Layer, prog *jit.Program, spec string, stderr io.Writer) error {
	pc, note, err := host.NewProgramChecker(spec)
	if note != "" {
		fmt.Fprintln(os.Stderr, "clhost: "+note)
	}
	if err != nil {
		return err
	}
	defer pc.Close()
	log, err := pc.Check(layer, prog)
	if err != nil {
		var be *host.ProgramBuildError
		if errors.As(err, &be) {
			return err
		}
		return fmt.Errorf("layer type %q: %w", layer.Name, err)
	}
	if log != "" {
		fmt.Fprintf(stderr, "clhost: build log:\n%s\n", log)
	}
	fmt.Fprintln(stderr, "ok")
	return nil
}
