package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/model"
)

func init() {
	register(command{name: "inspect", summary: "print a model's layers, shapes, levels and parameter counts, or a Graphviz graph", run: runInspect})
}

func runInspect(args []string) error {
	fs := newFlagSet("inspect")
	path := fs.String("m", "", "model file (.clm, .json, .onnx, or an OpenVINO IR .xml with its .bin)")
	weights := fs.String("weights", "", "an OpenVINO IR's weights `file` (default: the .bin beside the .xml)")
	dot := fs.Bool("dot", false, "print a Graphviz graph (dot -Tsvg) instead of the table")
	var configs stringList
	fs.Var(&configs, "c", "custom-layer configuration XML (repeatable): nodes of the types it defines are read as written, with the shapes the model declares")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("-m MODEL is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	layers, err := host.LoadConfigs(host.Options{Configs: configs})
	if err != nil {
		return configError(err)
	}
	// A model is shown before its custom layers' configurations exist, as for ONNX.
	return inspectWith(os.Stdout, host.LoadOptions{Layers: layers, Weights: *weights, KeepUnknown: true}, *path, *dot)
}

// inspect prints a model. Shape inference fills the shapes the file leaves out; when it
// fails (a custom layer with undeclared outputs, a shape mismatch) what is known is still
// printed, unknown shapes as "?", and the failure is returned.
func inspect(w io.Writer, path string, dot bool, layers *customlayer.Registry) error {
	return inspectWith(w, host.LoadOptions{Layers: layers}, path, dot)
}

// inspectWith is inspect with the loader's options (an IR's weights file).
func inspectWith(w io.Writer, o host.LoadOptions, path string, dot bool) error {
	lay, err := o.LoadLayout(path)
	if err != nil {
		return err
	}
	m, shapeErr := lay.Model, lay.ShapeError
	v := newModelView(m)
	if dot {
		err = writeDot(w, m, v)
	} else {
		err = writeTable(w, path, m, lay.Levels, v)
	}
	if err != nil {
		return err
	}
	if shapeErr != nil {
		return fmt.Errorf("shape inference: %w", shapeErr)
	}
	return nil
}

// modelView answers the questions both outputs ask of a model.
type modelView struct {
	tensors map[string]*model.Tensor
}

func newModelView(m *model.Model) *modelView {
	v := &modelView{tensors: make(map[string]*model.Tensor, len(m.Tensors))}
	for i := range m.Tensors {
		v.tensors[m.Tensors[i].Name] = &m.Tensors[i]
	}
	return v
}

// dims writes a shape the way the CLI takes one (1x3x416x416); "?" when unknown.
func (v *modelView) dims(name string) string {
	t := v.tensors[name]
	if t == nil {
		return "?"
	}
	if len(t.Shape) == 0 {
		return "scalar"
	}
	parts := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

// params counts the elements of a layer's constant inputs, each constant once.
func (v *modelView) params(l *model.Layer) int64 {
	var n int64
	seen := map[string]bool{}
	for _, in := range l.Inputs {
		if t := v.tensors[in]; t != nil && t.IsConst() && !seen[in] {
			seen[in] = true
			n += int64(t.Elements())
		}
	}
	return n
}

func writeTable(w io.Writer, path string, m *model.Model, levels [][]int, v *modelView) error {
	var consts, params, bytes int64
	for i := range m.Tensors {
		if t := &m.Tensors[i]; t.IsConst() {
			consts++
			params += int64(t.Elements())
			bytes += int64(len(t.Data))
		}
	}
	fmt.Fprintf(w, "model %q (%s)\n", m.Name, path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, sec := range []struct {
		title string
		names []string
	}{{"inputs", m.Inputs}, {"outputs", m.Outputs}} {
		fmt.Fprintf(tw, "%s:\n", sec.title)
		for _, n := range sec.names {
			typ := "?"
			if t := v.tensors[n]; t != nil {
				typ = t.Type.String()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", n, typ, v.dims(n))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "level\tlayer\ttype\tinputs\toutputs\tparams\tattributes")
	for lv, layers := range levels {
		for _, li := range layers {
			l := &m.Layers[li]
			row := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%d", lv, l.Name, l.Type,
				v.tensorList(l.Inputs), v.tensorList(l.Outputs), v.params(l))
			// The last cell is left unterminated when empty so that no line ends in blanks.
			if attrs := attrText(l.Attrs); attrs != "" {
				row += "\t" + attrs
			}
			fmt.Fprintln(tw, row)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d layers in %d levels; %d parameters (%s) in %d constant tensors\n",
		len(m.Layers), len(levels), params, humanBytes(bytes), consts)
	return err
}

// tensorList writes names with shapes: data[1x3x416x416], conv1.weight[10x3x4x4]; an
// omitted optional input shows as "-".
func (v *modelView) tensorList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		if n == "" {
			parts[i] = "-"
			continue
		}
		parts[i] = n + "[" + v.dims(n) + "]"
	}
	return strings.Join(parts, " ")
}

func attrText(attrs []model.Attr) string {
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		var val string
		switch a.Kind {
		case model.AttrInt:
			val = strconv.FormatInt(a.Int, 10)
		case model.AttrFloat:
			val = strconv.FormatFloat(float64(a.Float), 'g', -1, 32)
		case model.AttrInts:
			s := make([]string, len(a.Ints))
			for k, x := range a.Ints {
				s[k] = strconv.FormatInt(x, 10)
			}
			val = strings.Join(s, ",")
		case model.AttrFloats:
			s := make([]string, len(a.Floats))
			for k, x := range a.Floats {
				s[k] = strconv.FormatFloat(float64(x), 'g', -1, 32)
			}
			val = strings.Join(s, ",")
		case model.AttrString:
			val = strconv.Quote(a.Str)
		}
		parts[i] = a.Name + "=" + val
	}
	return strings.Join(parts, " ")
}

// writeDot draws layers as boxes and graph inputs and outputs as ellipses; each edge is a
// tensor, labelled with its name and shape. Constants are not drawn, to keep weights from
// burying the structure; each layer box says how many parameters it holds instead.
func writeDot(w io.Writer, m *model.Model, v *modelView) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(m.Name))
	b.WriteString("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	// source names the node a tensor comes from.
	source := map[string]string{}
	for _, in := range m.Inputs {
		id := "input:" + in
		source[in] = id
		fmt.Fprintf(&b, "  %s [shape=ellipse, label=%s];\n", dotQuote(id), dotLabel(in, v.dims(in)))
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		id := "layer:" + strconv.Itoa(i)
		for _, o := range l.Outputs {
			source[o] = id
		}
		lines := []string{l.Name, l.Type}
		if p := v.params(l); p > 0 {
			lines = append(lines, fmt.Sprintf("%d params", p))
		}
		fmt.Fprintf(&b, "  %s [label=%s];\n", dotQuote(id), dotLabel(lines...))
	}
	edge := func(tensor, to string) {
		from, ok := source[tensor]
		if !ok {
			// A constant that is itself a graph output gets a node of its own.
			from = "const:" + tensor
			source[tensor] = from
			fmt.Fprintf(&b, "  %s [shape=note, label=%s];\n", dotQuote(from), dotLabel(tensor, v.dims(tensor)))
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", dotQuote(from), dotQuote(to), dotLabel(tensor, v.dims(tensor)))
	}
	for i := range m.Layers {
		seen := map[string]bool{}
		for _, in := range m.Layers[i].Inputs {
			if t := v.tensors[in]; in == "" || seen[in] || (t != nil && t.IsConst()) {
				continue
			}
			seen[in] = true
			edge(in, "layer:"+strconv.Itoa(i))
		}
	}
	for _, o := range m.Outputs {
		id := "output:" + o
		fmt.Fprintf(&b, "  %s [shape=ellipse, style=bold, label=%s];\n", dotQuote(id), dotLabel(o, v.dims(o)))
		edge(o, id)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotQuote makes a DOT quoted string; DOT needs only backslashes and quotes escaped, and
// newlines would end up literal in labels, so they become \n.
func dotQuote(s string) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
	return `"` + s + `"`
}

// dotLabel is a quoted label of several centred lines.
func dotLabel(lines ...string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l)
	}
	return `"` + strings.Join(q, `\n`) + `"`
}
