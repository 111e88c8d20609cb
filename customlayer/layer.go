// Package customlayer reads OpenVINO-style CustomLayer XML files into validated layer
// descriptions: which kernel to build from which sources, which defines to add, which
// kernel argument each tensor or constant blob binds to, and the work-size rules. The
// schema is documented for users in docs/custom-layers.md.
//
// It is pure: no OpenCL and no model. Loading reads the kernel sources, so a missing
// source file is a load-time error like any other, and every problem of a file is
// reported at once as an Errors value.
package customlayer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/clhost/clhost/customlayer/formula"
)

// Format is the memory layout a kernel expects for a tensor.
type Format uint8

// Formats. BFYX is the default when a Tensor gives none.
const (
	BFYX Format = iota
	BYXF
	YXFB
	FYXB
	ANY // take whatever the producer wrote
)

var formatNames = [...]string{"BFYX", "BYXF", "YXFB", "FYXB", "ANY"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat accepts a format name in either case.
func ParseFormat(s string) (Format, bool) {
	for i, n := range formatNames {
		if strings.EqualFold(s, n) {
			return Format(i), true
		}
	}
	return 0, false
}

// TensorKind says whether a Tensor binds a layer input or output.
type TensorKind uint8

const (
	Input TensorKind = iota
	Output
)

func (k TensorKind) String() string {
	if k == Output {
		return "output"
	}
	return "input"
}

// Tensor binds input or output port Port of the layer to kernel argument ArgIndex.
type Tensor struct {
	ArgIndex int
	Kind     TensorKind
	Port     int
	Format   Format
	Line     int // line of the element in the XML file, 0 if unknown
}

// Data binds the constant blob Name of the layer (weights, biases) to kernel argument
// ArgIndex.
type Data struct {
	Name     string
	ArgIndex int
	Line     int
}

// DefineType is the type attribute of a Define.
type DefineType string

// Define types; Untyped writes the value as it is.
const (
	Untyped    DefineType = ""
	Int        DefineType = "int"
	Float      DefineType = "float"
	IntArray   DefineType = "int[]"
	FloatArray DefineType = "float[]"
)

// IsArray reports whether values of t are written as compound-literal arrays.
func (t DefineType) IsArray() bool { return t == IntArray || t == FloatArray }

// Elem is the element type of an array type and t itself otherwise.
func (t DefineType) Elem() DefineType {
	switch t {
	case IntArray:
		return Int
	case FloatArray:
		return Float
	}
	return t
}

// Define is one user #define of the kernel.
type Define struct {
	// Name is the macro name; a static define may carry its value after a space
	// ("TILE 16").
	Name       string
	Param      string // layer parameter giving the value; "" if none
	Type       DefineType
	Default    string // used when the layer lacks Param; valid only if HasDefault
	HasDefault bool
	Line       int
}

// Source is one kernel source file, read at load time.
type Source struct {
	Filename string // as written in the XML
	// Path is where it was read: an OS path, or a path inside the fs.FS the
	// configuration came from. The JIT names it in the #line directive.
	Path string
	// Text is the file's text with each `#include "name"` found beside it replaced by
	// the header's text between #line directives (include.go); Includes are those
	// headers' paths, in order.
	Text     string
	Includes []string
	Line     int
}

// Dim names the tensor whose B, F, Y, X the work-size formulas see. The zero value is
// the output (the default).
type Dim struct {
	Input bool
	Index int // input port, when Input
}

func (d Dim) String() string {
	if d.Input {
		return fmt.Sprintf("input %d", d.Index)
	}
	return "output"
}

// WorkSizes are the work-size rules of a layer.
type WorkSizes struct {
	// Global always holds 1 to 3 formulas; without a global attribute it is B*F*Y*X.
	Global []formula.Expr
	// Local is empty when the driver chooses; otherwise as long as Global.
	Local []formula.Expr
	Dim   Dim
	Line  int
}

// DefaultGlobal is the global work size of a layer whose config gives none.
const DefaultGlobal = "B*F*Y*X"

// Layer is one validated CustomLayer.
type Layer struct {
	Name    string // the layer type it implements
	Type    string // always "SimpleGPU"
	Version string // always "1"
	Entry   string // the __kernel function

	Sources         []Source
	Defines         []Define
	Tensors         []Tensor // in file order
	Data            []Data   // in file order
	CompilerOptions []string // in file order
	WorkSizes       WorkSizes

	Origin string // the file it was read from
	Line   int
}

// NumBuffers is the number of kernel arguments the layer binds; validation guarantees
// they are exactly the indices 0..NumBuffers()-1.
func (l *Layer) NumBuffers() int { return len(l.Tensors) + len(l.Data) }

// Arg is what one kernel argument is bound to: exactly one of Tensor and Data is set.
type Arg struct {
	Index  int
	Tensor *Tensor
	Data   *Data
}

// Args returns the kernel arguments ordered by argument index.
func (l *Layer) Args() []Arg {
	args := make([]Arg, 0, l.NumBuffers())
	for i := range l.Tensors {
		args = append(args, Arg{Index: l.Tensors[i].ArgIndex, Tensor: &l.Tensors[i]})
	}
	for i := range l.Data {
		args = append(args, Arg{Index: l.Data[i].ArgIndex, Data: &l.Data[i]})
	}
	sort.SliceStable(args, func(i, j int) bool { return args[i].Index < args[j].Index })
	return args
}

// Inputs returns the input tensors in file order.
func (l *Layer) Inputs() []Tensor { return l.tensors(Input) }

// Outputs returns the output tensors in file order.
func (l *Layer) Outputs() []Tensor { return l.tensors(Output) }

func (l *Layer) tensors(k TensorKind) []Tensor {
	var out []Tensor
	for _, t := range l.Tensors {
		if t.Kind == k {
			out = append(out, t)
		}
	}
	return out
}

// FormatOf returns the format the layer declares for port p of kind k: that of the
// first Tensor bound to it, and ok false if no Tensor binds it.
func (l *Layer) FormatOf(k TensorKind, port int) (f Format, ok bool) {
	for _, t := range l.Tensors {
		if t.Kind == k && t.Port == port {
			return t.Format, true
		}
	}
	return ANY, false
}

// Options returns the compiler options joined by single spaces, in file order.
func (l *Layer) Options() string {
	var parts []string
	for _, o := range l.CompilerOptions {
		if o = strings.TrimSpace(o); o != "" {
			parts = append(parts, o)
		}
	}
	return strings.Join(parts, " ")
}

// Where returns "file:line" of the layer's definition.
func (l *Layer) Where() string {
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Origin, l.Line)
	}
	return l.Origin
}
