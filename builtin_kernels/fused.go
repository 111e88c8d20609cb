package builtinkernels

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/clhost/clhost/internal/opspec"
)

// Fused work as the kernels read and apply it: the activation a layer applies to its
// result (opspec.FusedActivationAttr and its parameters), the optional inputs a fused
// layer may leave out, and attributes carried under a prefix.

// prefixedParams reads the parameters under a prefix, as FusedMaxPoolPrefix carries a
// MaxPool's attributes on a Conv.
type prefixedParams struct {
	p      Params
	prefix string
}

func (q prefixedParams) Has(name string) bool { return q.p.Has(q.prefix + name) }
func (q prefixedParams) Int(name string, def int64) int64 {
	return q.p.Int(q.prefix+name, def)
}
func (q prefixedParams) Float(name string, def float32) float32 {
	return q.p.Float(q.prefix+name, def)
}
func (q prefixedParams) Ints(name string, def []int64) []int64 {
	return q.p.Ints(q.prefix+name, def)
}
func (q prefixedParams) Floats(name string, def []float32) []float32 {
	return q.p.Floats(q.prefix+name, def)
}
func (q prefixedParams) String(name string, def string) string {
	return q.p.String(q.prefix+name, def)
}

// fusedAct is the activation a layer applies to its result before writing it.
type fusedAct struct {
	kind   string
	alpha  float32 // LeakyRelu
	lo, hi float32 // Clip
}

// readFusedAct reads and checks the fused activation of a layer of type typ.
func readFusedAct(typ string, p Params) (fusedAct, error) {
	a := fusedAct{kind: p.String(opspec.FusedActivationAttr, opspec.ActNone)}
	if a.kind == opspec.ActNone {
		return a, nil
	}
	if f, ok := unaryRow(a.kind); !ok || !f.fusable {
		return a, fmt.Errorf("%s: %s %q: want one of %s, or empty for none", typ, opspec.FusedActivationAttr, a.kind, strings.Join(FusedActivations(), ", "))
	}
	switch a.kind {
	case opspec.ActLeakyRelu:
		a.alpha = p.Float(opspec.FusedAlphaAttr, 0.01)
		if !finite(a.alpha) {
			return a, fmt.Errorf("%s: %s %v: the LeakyRelu slope must be a finite number", typ, opspec.FusedAlphaAttr, a.alpha)
		}
	case opspec.ActClip:
		a.lo = p.Float(opspec.FusedMinAttr, float32(math.Inf(-1)))
		a.hi = p.Float(opspec.FusedMaxAttr, float32(math.Inf(1)))
		if math.IsNaN(float64(a.lo)) || math.IsNaN(float64(a.hi)) {
			return a, fmt.Errorf("%s: %s %v / %s %v: NaN bounds", typ, opspec.FusedMinAttr, a.lo, opspec.FusedMaxAttr, a.hi)
		}
	}
	return a, nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// define writes the activation's #defines: ACT_NONE, ACT_RELU, ACT_LEAKY, ACT_CLIP,
// ACT_SIGMOID or ACT_HARDSWISH as 1 (exactly one of them), the parameters (ACT_ALPHA;
// ACT_MIN and ACT_MAX), and the macro APPLY_ACT(v), which a kernel applies to each final
// value (after bias and residual). v must be an expression without side effects: the
// macro may evaluate it twice.
func (a fusedAct) define(d *defines) {
	switch a.kind {
	case opspec.ActRelu:
		d.int("ACT_RELU", 1)
	case opspec.ActLeakyRelu:
		d.int("ACT_LEAKY", 1)
		d.raw("ACT_ALPHA", clFloat(a.alpha))
	case opspec.ActClip:
		d.int("ACT_CLIP", 1)
		d.raw("ACT_MIN", clFloat(a.lo))
		d.raw("ACT_MAX", clFloat(a.hi))
	case opspec.ActSigmoid:
		d.int("ACT_SIGMOID", 1)
	case opspec.ActHardSwish:
		d.int("ACT_HARDSWISH", 1)
	default:
		d.int("ACT_NONE", 1)
	}
	d.raw("APPLY_ACT(v)", a.expr("v"))
}

// row is the activation's row of the element-wise table and its two parameters as the
// row's expression and reference read them; nil for none.
func (a fusedAct) row() (*unaryFn, float32, float32) {
	f, ok := unaryRow(a.kind)
	if !ok {
		return nil, 0, 0
	}
	switch a.kind {
	case opspec.ActLeakyRelu:
		return f, a.alpha, 0
	case opspec.ActClip:
		return f, a.lo, a.hi
	case opspec.ActHardSwish:
		x, y, _ := hardSwishAttrs(nil)
		return f, x, y
	}
	return f, 0, 0
}

// exprOperand is an operand name in an element-wise row's OpenCL expression.
var exprOperand = regexp.MustCompile(`\b[vab]\b`)

// expr is the activation applied to the OpenCL C expression v (evaluated up to three
// times): the row's expression with its parameters spelt as literals, for a second
// activation in one program, which APPLY_ACT's names would collide with.
func (a fusedAct) expr(v string) string {
	v = "(" + v + ")"
	f, pa, pb := a.row()
	if f == nil {
		return v
	}
	return "(" + exprOperand.ReplaceAllStringFunc(f.cl, func(name string) string {
		switch name {
		case "a":
			return clFloat(pa)
		case "b":
			return clFloat(pb)
		}
		return v
	}) + ")"
}

// apply computes the activation on the CPU, as the references do: the row's reference in
// float64, with the parameters as the kernels see them.
func (a fusedAct) apply(v float64) float64 {
	f, pa, pb := a.row()
	if f == nil {
		return v
	}
	return f.ref(v, float64(pa), float64(pb))
}

// raw writes "#define name text".
func (d *defines) raw(name, text string) {
	d.b.WriteString("#define ")
	d.b.WriteString(name)
	d.b.WriteByte(' ')
	d.b.WriteString(text)
	d.b.WriteByte('\n')
}

// clFloat spells a float32 as an OpenCL C literal that reads back as the same float:
// "0.01f", "2.0f", "3.4028235e+38f", "INFINITY".
func clFloat(f float32) string {
	switch {
	case math.IsInf(float64(f), 1):
		return "INFINITY"
	case math.IsInf(float64(f), -1):
		return "(-INFINITY)"
	case math.IsNaN(float64(f)):
		return "NAN"
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if f < 0 {
		return "(" + s + "f)"
	}
	return s + "f"
}

// optionalTensors is checkTensors for ops with optional inputs: a nil tensor at an index
// in optional stands for an omitted input (the runtime passes nil for an empty input
// name) and gets a nil shape; every other input must be present and hold as many values
// as its shape says.
func optionalTensors(typ string, in []*HostTensor, optional ...int) ([][]int, error) {
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t == nil {
			if slices.Contains(optional, i) {
				continue
			}
			return nil, fmt.Errorf("%s: input %d is nil", typ, i)
		}
		if err := checkShape(typ, fmt.Sprintf("input %d", i), t.Shape); err != nil {
			return nil, err
		}
		if len(t.Data) != numel(t.Shape) {
			return nil, fmt.Errorf("%s: input %d has %d values for shape %v (want %d)", typ, i, len(t.Data), t.Shape, numel(t.Shape))
		}
		shapes[i] = t.Shape
	}
	return shapes, nil
}
