package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/customlayer/formula"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/jit"
)

func init() {
	register(command{name: "validate", summary: "check custom-layer configurations (-c): list their layers, build each kernel, and with -m check a model's custom layers", run: func(args []string) error {
		return runValidate(args, os.Stdout, os.Stderr)
	}})
}

// loadConfigs builds the custom-layer registry from the -c files in order, a later
// definition of a layer type replacing an earlier one (noted on stderr). Every problem of
// every file is returned at once, as a customlayer.Errors.
//
// withGlobal puts the global configuration (configs/) first, as an engine does: `clhost
// jit` needs it to find those layers; `clhost validate` checks just the files it is given.
func loadConfigs(paths []string, stderr io.Writer, withGlobal bool) (*customlayer.Registry, error) {
	return host.LoadConfigs(host.Options{Configs: paths, Log: stderr, NoGlobalConfig: !withGlobal})
}

// configError turns load problems into one error listing them all, one a line.
func configError(err error) error {
	var es customlayer.Errors
	if errors.As(err, &es) {
		n := "1 problem"
		if len(es) != 1 {
			n = fmt.Sprintf("%d problems", len(es))
		}
		return fmt.Errorf("%s in the custom-layer configuration:\n%v", n, es)
	}
	return err
}

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate")
	var configs stringList
	fs.Var(&configs, "c", "custom-layer configuration `file` (XML); repeat for several, later ones replace earlier layers of the same name")
	modelPath := fs.String("m", "", "also check every custom layer of this `model` against its shapes and attributes (the global configuration loads first, as when it runs)")
	weights := fs.String("weights", "", "the -m OpenVINO IR's weights `file` (default: the .bin beside the .xml)")
	noBuild := fs.Bool("no-build", false, "check the XML only: compile nothing")
	dev := deviceFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	configs = append(configs, fs.Args()...)
	if len(configs) == 0 {
		return usagef("no configuration to validate: give one or more -c FILE")
	}
	reg, err := loadConfigs(configs, stderr, false)
	if err != nil {
		return configError(err)
	}
	printLayers(stdout, reg.Layers())
	v := &validation{stdout: stdout}
	v.ran(fmt.Sprintf("XML: %d custom layer(s) from %d file(s): attributes, sources read, arg-index sequence, formats, work-size formulas parse", reg.Len(), len(configs)))
	if !*noBuild {
		pc, note, err := host.NewProgramChecker(*dev)
		if note != "" {
			fmt.Fprintln(stderr, "clhost: "+note)
		}
		if err != nil {
			return err
		}
		defer pc.Close()
		v.pc = pc
		v.buildRepresentative(reg.Layers())
	}
	if *modelPath != "" {
		if err := v.checkModel(*modelPath, *weights, configs, stderr); err != nil {
			return err
		}
	}
	return v.finish()
}

// validation collects what `clhost validate` checked and what it found.
type validation struct {
	stdout   io.Writer
	pc       *host.ProgramChecker // nil with -no-build
	checks   []string
	problems []string
}

func (v *validation) ran(s string) { v.checks = append(v.checks, s) }

func (v *validation) problem(format string, a ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, a...))
}

// build compiles a program (once for all layers that share it) and checks the layer's
// entry and argument count; who names the layer in messages.
func (v *validation) build(who string, layer *customlayer.Layer, prog *jit.Program) bool {
	log, err := v.pc.Check(layer, prog)
	switch {
	case errors.Is(err, host.ErrBuildFailedBefore):
		v.problem("%s: its program failed to build (above)", who)
		return false
	case err != nil:
		v.problem("%s: %v", who, err)
		return false
	}
	if log != "" {
		fmt.Fprintf(v.stdout, "%s: build log:\n%s\n", who, log)
	}
	return true
}

// buildRepresentative builds each layer as its configuration alone gives it
// (host.StandInProgram).
func (v *validation) buildRepresentative(layers []*customlayer.Layer) {
	ok := 0
	var defaulted []string
	shape := dims(host.StandInShape())
	for _, l := range layers {
		who := fmt.Sprintf("layer type %q (%s)", l.Name, l.Where())
		prog, d, err := host.StandInProgram(l)
		defaulted = append(defaulted, d...)
		if err != nil {
			v.problem("%s: with every tensor %s: %v", who, shape, err)
			continue
		}
		if v.build(who, l, prog) {
			ok++
		}
	}
	s := fmt.Sprintf("built on %s: each layer with every tensor %s and its defines' defaults; entry and argument count against the Buffers, the device's limits: %d of %d ok", v.pc.DeviceName(), shape, ok, len(layers))
	if len(defaulted) > 0 {
		s += fmt.Sprintf(" (defines without a default took 1: %s)", strings.Join(defaulted, ", "))
	}
	v.ran(s)
}

// checkModel generates the program of every custom layer of the model from its shapes
// and attributes, and builds each distinct one.
func (v *validation) checkModel(path, weights string, configs []string, stderr io.Writer) error {
	reg, err := host.LoadConfigs(host.Options{Configs: configs})
	if err != nil {
		return configError(err)
	}
	m, err := host.LoadOptions{Layers: reg, Weights: weights}.Load(path)
	if err != nil {
		return err
	}
	insts, err := host.CustomInstances(m, reg)
	var ue *host.UnimplementedError
	switch {
	case errors.As(err, &ue):
		for _, line := range strings.Split(configHint(err, configs).Error(), "\n") {
			v.problem("%s: %s", path, line)
		}
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	}
	generated, built := 0, 0
	var warnings []jit.Warning
	for _, ci := range insts {
		if ci.Err != nil {
			v.problem("%s: %v", path, ci.Err)
			continue
		}
		generated++
		warnings = append(warnings, ci.Program.Warnings...)
		if v.pc != nil && v.build(fmt.Sprintf("%s: layer %q (%s)", path, ci.Layer, ci.Type), ci.Config, ci.Program) {
			built++
		}
	}
	// Warnings do not fail validation: the program is valid, but likely not the one the
	// author meant (a misspelled Define param takes its default).
	for _, w := range jit.GroupWarnings(warnings) {
		fmt.Fprintf(stderr, "clhost: warning: %s: %s\n", path, w)
	}
	impl := "every layer type implemented"
	if ue != nil {
		impl = fmt.Sprintf("%d layer type(s) without an implementation", len(ue.Types))
	}
	s := fmt.Sprintf("model %s: %s; %d custom layer(s) against the model's shapes and attributes (parameters, work sizes, formats): %d of %d ok", path, impl, len(insts), generated, len(insts))
	if v.pc != nil {
		s += fmt.Sprintf("; built with them: %d of %d ok", built, generated)
	}
	v.ran(s)
	return nil
}

// finish prints what was checked and returns the problems found.
func (v *validation) finish() error {
	fmt.Fprintln(v.stdout, "\nchecks run:")
	for _, c := range v.checks {
		fmt.Fprintf(v.stdout, "  %s\n", c)
	}
	fmt.Fprintln(v.stdout, "not checked: what the kernels compute (clhost run --check --expect, clhost jit --run)")
	if len(v.problems) > 0 {
		n := "1 problem"
		if len(v.problems) != 1 {
			n = fmt.Sprintf("%d problems", len(v.problems))
		}
		return fmt.Errorf("%s:\n%s", n, strings.Join(v.problems, "\n"))
	}
	fmt.Fprintln(v.stdout, "ok")
	return nil
}

func dims(s []int) string {
	p := make([]string, len(s))
	for i, d := range s {
		p[i] = fmt.Sprint(d)
	}
	return strings.Join(p, "x")
}

// printLayers writes one table row per layer.
func printLayers(w io.Writer, layers []*customlayer.Layer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tENTRY\tSOURCES\tBUFFERS (arg-index:binding)\tDEFINES\tWORK SIZES\tOPTIONS\tORIGIN")
	for _, l := range layers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			l.Name, l.Entry, sourcesCell(l), buffersCell(l), definesCell(l), workSizesCell(l), orDash(l.Options()), l.Where())
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sourcesCell(l *customlayer.Layer) string {
	s := make([]string, len(l.Sources))
	for i, src := range l.Sources {
		s[i] = src.Filename
	}
	return strings.Join(s, ", ")
}

func buffersCell(l *customlayer.Layer) string {
	var s []string
	for _, a := range l.Args() {
		switch {
		case a.Tensor != nil:
			s = append(s, fmt.Sprintf("%d:%s%d %v", a.Index, a.Tensor.Kind, a.Tensor.Port, a.Tensor.Format))
		case a.Data != nil:
			s = append(s, fmt.Sprintf("%d:data %q", a.Index, a.Data.Name))
		}
	}
	return strings.Join(s, ", ")
}

func definesCell(l *customlayer.Layer) string {
	var s []string
	for _, d := range l.Defines {
		var b strings.Builder
		b.WriteString(d.Name)
		if d.Type != customlayer.Untyped {
			b.WriteString(" " + string(d.Type))
		}
		if d.Param != "" {
			b.WriteString(" param=" + d.Param)
		}
		if d.HasDefault {
			b.WriteString(fmt.Sprintf(" default=%q", d.Default))
		}
		s = append(s, b.String())
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, "; ")
}

func workSizesCell(l *customlayer.Layer) string {
	ws := l.WorkSizes
	local := "driver"
	if len(ws.Local) > 0 {
		local = formula.Join(ws.Local)
	}
	return fmt.Sprintf("global=%s local=%s dim=%s", formula.Join(ws.Global), local, ws.Dim)
}
