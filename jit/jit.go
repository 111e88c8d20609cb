// Package jit turns a custom layer and one instance of it (shapes, formats and types of
// its tensors, and its parameters) into the exact program text handed to the OpenCL
// compiler, the build options, and the global and local work sizes. docs/custom-layers.md
// documents the text it writes.
//
// It is pure: text in, text out, no OpenCL. The same input always gives the same text,
// byte for byte, so the host can cache programs by their text.
package jit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/customlayer/formula"
)

// Tensor describes one input or output of a layer instance.
type Tensor struct {
	// Shape has rank 0 to 4; lower ranks are padded with trailing 1s.
	Shape []int
	// Type is the OpenCL C element type: float, half, char, uchar, short, ushort, int,
	// uint, long, ulong or double. Empty means float.
	Type string
	// Format is the layout of the buffer (the zero value is BFYX). ANY means "as the
	// layer declares for this port" (BFYX where it declares ANY or nothing). A concrete
	// format must match a concrete declaration: the host reorders a tensor before a
	// custom layer that declares another format, so a mismatch is a host bug.
	Format customlayer.Format
	// Lower and Upper are paddings in B, F, Y, X order; missing entries are 0.
	Lower, Upper []int
}

// Instance is one use of a custom layer in a model.
type Instance struct {
	Name    string // the layer instance name, for messages
	Inputs  []Tensor
	Outputs []Tensor
	Params  Params // may be nil
	// NonUniformWorkGroups allows a local size that does not divide the global one
	// (OpenCL 2.0 devices that support it); OpenCL 1.2 requires it to divide.
	NonUniformWorkGroups bool
}

// Program is what the host builds and enqueues for one instance.
type Program struct {
	Source  string // the complete program text
	Options string // build options: the CompilerOptions joined by spaces
	Entry   string // the kernel function
	Global  []int  // 1 to 3 global work sizes
	Local   []int  // empty (driver chooses) or as many as Global
	Inputs  []Layout
	Outputs []Layout
	// Warnings are the instance's problems that do not stop it, such as a Define whose
	// param the layer lacks while its default is used (often a misspelled param).
	Warnings []Warning
}

// Warning is a problem of one layer instance that does not stop it. Problem is the same
// text for every layer of a type that has it, so that a model with many such layers
// can be told once.
type Warning struct {
	Layer   string // the layer's name
	Problem string // `(Type): Define "X" (file.xml:4): ...`
}

func (w Warning) String() string { return fmt.Sprintf("layer %q %s", w.Layer, w.Problem) }

// GroupWarnings gives each problem once, in first-seen order, with the layers that have
// it: a config used by every ReLU of a network would otherwise repeat one line per layer.
func GroupWarnings(ws []Warning) []string {
	var problems []string
	layers := map[string][]string{}
	for _, w := range ws {
		if _, ok := layers[w.Problem]; !ok {
			problems = append(problems, w.Problem)
		}
		layers[w.Problem] = append(layers[w.Problem], w.Layer)
	}
	const shown = 4
	out := make([]string, 0, len(problems))
	for _, p := range problems {
		ls := layers[p]
		if len(ls) == 1 {
			out = append(out, Warning{Layer: ls[0], Problem: p}.String())
			continue
		}
		var names []string
		for _, l := range ls[:min(len(ls), shown)] {
			names = append(names, strconv.Quote(l))
		}
		list := strings.Join(names, ", ")
		if len(ls) > shown {
			list += fmt.Sprintf(" and %d more", len(ls)-shown)
		}
		out = append(out, fmt.Sprintf("layers %s %s", list, p))
	}
	return out
}

// Error lists every problem of one instance.
type Error struct {
	Instance string // the layer instance
	Type     string // its custom layer type
	Problems []string
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = fmt.Sprintf("layer %q (type %q): %s", e.Instance, e.Type, p)
	}
	return strings.Join(lines, "\n")
}

var clTypes = map[string]bool{
	"float": true, "half": true, "double": true,
	"char": true, "uchar": true, "short": true, "ushort": true,
	"int": true, "uint": true, "long": true, "ulong": true,
}

// ElementTypes lists the OpenCL C element types a Tensor may have.
const ElementTypes = "float, half, double, char, uchar, short, ushort, int, uint, long, ulong"

// IsElementType reports whether s is one of ElementTypes.
func IsElementType(s string) bool { return clTypes[s] }

// Generate assembles the program of one instance of layer l.
func Generate(l *customlayer.Layer, inst Instance) (*Program, error) {
	if l == nil {
		return nil, errors.New("jit: nil layer")
	}
	e := &Error{Instance: inst.Name, Type: l.Name}
	problem := func(format string, args ...any) { e.Problems = append(e.Problems, fmt.Sprintf(format, args...)) }

	prog := &Program{Entry: l.Entry, Options: l.Options()}

	// Bindings: every Tensor of the config must find its port in the instance.
	for i, t := range l.Tensors {
		n := len(inst.Inputs)
		if t.Kind == customlayer.Output {
			n = len(inst.Outputs)
		}
		if t.Port >= n {
			problem("Tensor #%d (arg-index %d) binds %s port %d, but the layer has %d %ss", i+1, t.ArgIndex, t.Kind, t.Port, n, t.Kind)
		}
	}

	types := make([][]string, 2)
	for k, list := range [][]Tensor{inst.Inputs, inst.Outputs} {
		kind := customlayer.TensorKind(k)
		for port, t := range list {
			name := tensorName(kind, port)
			f := t.Format
			declared, ok := l.FormatOf(kind, port)
			if ok && declared != customlayer.ANY {
				if f != customlayer.ANY && f != declared {
					problem("%s is in %v but the layer declares %v (the host must reorder it)", name, f, declared)
				}
				f = declared
			}
			lay, err := NewLayout(t.Shape, f, t.Lower, t.Upper)
			if err != nil {
				problem("%s: %v", name, err)
			}
			typ := t.Type
			if typ == "" {
				typ = "float"
			}
			if !clTypes[typ] {
				problem("%s: element type %q is not an OpenCL C scalar type", name, typ)
			}
			types[k] = append(types[k], typ)
			if kind == customlayer.Input {
				prog.Inputs = append(prog.Inputs, lay)
			} else {
				prog.Outputs = append(prog.Outputs, lay)
			}
		}
	}

	// Work sizes.
	ws := l.WorkSizes
	if len(ws.Global) == 0 { // a Layer built in Go rather than loaded
		ws.Global, _ = formula.ParseList(customlayer.DefaultGlobal)
	}
	var dimLayout *Layout
	switch {
	case ws.Dim.Input && ws.Dim.Index >= len(prog.Inputs):
		problem("WorkSizes dim=%q, but the layer has %d inputs", ws.Dim.String(), len(prog.Inputs))
	case ws.Dim.Input:
		dimLayout = &prog.Inputs[ws.Dim.Index]
	case len(prog.Outputs) == 0:
		problem("WorkSizes dim=\"output\", but the layer has no output")
	default:
		dimLayout = &prog.Outputs[0]
	}
	if dimLayout != nil && len(e.Problems) == 0 {
		d := dimLayout.Dims
		vars := formula.Vars{B: int64(d[0]), F: int64(d[1]), Y: int64(d[2]), X: int64(d[3])}
		// The formulas' own file and line, as a Define's problem gives its own: the
		// error comes at compile time, far from the XML.
		at := wsWhere(l)
		global, gerr := evalSizes("global", at, ws.Global, vars)
		local, lerr := evalSizes("local", at, ws.Local, vars)
		for _, err := range []error{gerr, lerr} {
			if err != nil {
				problem("%v", err)
			}
		}
		if gerr == nil && lerr == nil {
			if len(local) != 0 && len(local) != len(global) {
				problem("work sizes (%s): %d local sizes for %d global ones", at, len(local), len(global))
			} else if !inst.NonUniformWorkGroups {
				for i := range local {
					if global[i]%local[i] != 0 {
						problem("work sizes (%s): local size %d (formula %q) does not divide global size %d (formula %q) in dimension %d, with %v",
							at, local[i], ws.Local[i].String(), global[i], ws.Global[i].String(), i, vars)
					}
				}
			}
		}
		prog.Global, prog.Local = global, local
	}

	// User defines.
	var user strings.Builder
	for _, d := range l.Defines {
		v, err := defineValue(d, inst.Params)
		if err != nil {
			problem("Define %q (%s): %v", d.Name, defineWhere(l, d), err)
			continue
		}
		if w := defaultedParam(d, inst.Params); w != "" {
			prog.Warnings = append(prog.Warnings, Warning{Layer: inst.Name, Problem: fmt.Sprintf("(%s): Define %q (%s): %s", l.Name, d.Name, defineWhere(l, d), w)})
		}
		user.WriteString("#define ")
		user.WriteString(d.Name)
		if v != "" {
			user.WriteString(" ")
			user.WriteString(v)
		}
		user.WriteString("\n")
	}

	if len(e.Problems) > 0 {
		return nil, e
	}

	var b strings.Builder
	b.WriteString("// Custom Layer Built-ins\n")
	define(&b, "NUM_INPUTS", strconv.Itoa(len(inst.Inputs)))
	defineArray(&b, "GLOBAL_WORKSIZE", "size_t", prog.Global)
	defineArray(&b, "LOCAL_WORKSIZE", "size_t", prog.Local)
	for k, lays := range [][]Layout{prog.Inputs, prog.Outputs} {
		for port, lay := range lays {
			n := tensorName(customlayer.TensorKind(k), port)
			defineArray(&b, n+"_DIMS", "int", lay.Dims[:])
			define(&b, n+"_TYPE", types[k][port])
			b.WriteString("#define " + n + "_FORMAT_" + lay.Format.String() + "\n")
			defineArray(&b, n+"_LOWER_PADDING", "int", lay.Lower[:])
			defineArray(&b, n+"_UPPER_PADDING", "int", lay.Upper[:])
			defineArray(&b, n+"_PITCHES", "int", lay.Pitches[:])
			define(&b, n+"_OFFSET", strconv.Itoa(lay.Offset))
		}
	}
	b.WriteString("// Custom Layer User Defines\n")
	b.WriteString(user.String())
	for _, s := range l.Sources {
		b.WriteString("#line 1 ")
		b.WriteString(customlayer.QuoteLineFile(s.Path))
		b.WriteString("\n")
		b.WriteString(s.Text)
		if s.Text != "" && !strings.HasSuffix(s.Text, "\n") {
			b.WriteString("\n")
		}
	}
	prog.Source = b.String()
	return prog, nil
}

func tensorName(k customlayer.TensorKind, port int) string {
	if k == customlayer.Output {
		return "OUTPUT" + strconv.Itoa(port)
	}
	return "INPUT" + strconv.Itoa(port)
}

func evalSizes(which, at string, list []formula.Expr, v formula.Vars) ([]int, error) {
	out := make([]int, 0, len(list))
	for _, e := range list {
		n, err := e.EvalSize(v)
		if err != nil {
			return nil, fmt.Errorf("%s work size (%s): %w", which, at, err)
		}
		out = append(out, int(n))
	}
	return out, nil
}

func define(b *strings.Builder, name, value string) {
	b.WriteString("#define ")
	b.WriteString(name)
	b.WriteString(" ")
	b.WriteString(value)
	b.WriteString("\n")
}

// defineArray writes NAME_SIZE and then NAME as a compound literal.
func defineArray(b *strings.Builder, name, ctype string, v []int) {
	define(b, name+"_SIZE", strconv.Itoa(len(v)))
	elems := make([]string, len(v))
	for i, x := range v {
		elems[i] = strconv.Itoa(x)
	}
	define(b, name, arrayLiteral(ctype, elems))
}

// defaultedParam describes a Define whose param the instance lacks while its default is
// used, naming the nearest parameter the instance has; "" when the define takes its
// param. A misspelled param would otherwise silently run every model with the default.
func defaultedParam(d customlayer.Define, params Params) string {
	if d.Param == "" || !d.HasDefault || params == nil {
		return ""
	}
	if _, ok := params.Param(d.Param); ok {
		return ""
	}
	msg := fmt.Sprintf("param %q is not an attribute of the layer; the default %s is used", d.Param, d.Default)
	if pl, ok := params.(ParamLister); ok {
		if near, ok := customlayer.NearName(d.Param, pl.ParamNames()); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
	}
	return msg
}

// defineWhere is the XML file:line of a Define.
// wsWhere is the file:line of the layer's WorkSizes element, or of the layer when it
// has none (the default global size).
func wsWhere(l *customlayer.Layer) string {
	if l.WorkSizes.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Origin, l.WorkSizes.Line)
	}
	return l.Where()
}

func defineWhere(l *customlayer.Layer, d customlayer.Define) string {
	if d.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Origin, d.Line)
	}
	return l.Where()
}
