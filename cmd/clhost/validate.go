package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/jit/formula"
)

func init() {
	register(command{name: "validate", summary: "check custom-layer configurations (-c) and list their layers", run: func(args []string) error {
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
	fmt.Fprintf(stdout, "\n%d custom layer(s) from %d file(s): ok\n", reg.Len(), len(configs))
	return nil
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
