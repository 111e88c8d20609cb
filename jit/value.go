package jit

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/clhost/clhost/customlayer"
)

// Kind is the type of a layer parameter value.
type Kind uint8

const (
	KindInt Kind = iota + 1
	KindFloat
	KindIntList
	KindFloatList
	KindString
)

// Value is one layer parameter. Scalars hold their one element in Ints or Floats.
type Value struct {
	Kind   Kind
	Ints   []int64
	Floats []float64
	Str    string
}

// Int, Float, Ints, Floats and String make Values.
func Int(v int64) Value         { return Value{Kind: KindInt, Ints: []int64{v}} }
func Float(v float64) Value     { return Value{Kind: KindFloat, Floats: []float64{v}} }
func Ints(v ...int64) Value     { return Value{Kind: KindIntList, Ints: v} }
func Floats(v ...float64) Value { return Value{Kind: KindFloatList, Floats: v} }
func String(s string) Value     { return Value{Kind: KindString, Str: s} }

func (v Value) String() string { return v.text() }

func (v Value) isList() bool { return v.Kind == KindIntList || v.Kind == KindFloatList }

// num is one numeric element of a Value.
type num struct {
	isFloat bool
	i       int64
	f       float64
}

// nums returns the elements of a numeric value, checking that a scalar has exactly one.
func (v Value) nums() ([]num, error) {
	var out []num
	switch v.Kind {
	case KindInt, KindIntList:
		for _, x := range v.Ints {
			out = append(out, num{i: x})
		}
	case KindFloat, KindFloatList:
		for _, x := range v.Floats {
			out = append(out, num{isFloat: true, f: x})
		}
	default:
		return nil, fmt.Errorf("invalid value")
	}
	if !v.isList() && len(out) != 1 {
		return nil, fmt.Errorf("a scalar value holds %d elements", len(out))
	}
	return out, nil
}

// text renders v as a user would write it (for messages).
func (v Value) text() string {
	switch v.Kind {
	case KindString:
		return strconv.Quote(v.Str)
	case KindInt, KindIntList:
		s := make([]string, len(v.Ints))
		for i, x := range v.Ints {
			s[i] = strconv.FormatInt(x, 10)
		}
		return strings.Join(s, ",")
	case KindFloat, KindFloatList:
		s := make([]string, len(v.Floats))
		for i, x := range v.Floats {
			s[i] = strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strings.Join(s, ",")
	}
	return "<invalid value>"
}

// Params gives the parameters of one layer instance.
type Params interface {
	Param(name string) (Value, bool)
}

// ParamLister is a Params that can list its parameters' names, so that an error about
// a missing one can show those the layer has.
type ParamLister interface {
	Params
	ParamNames() []string
}

// ParamMap is a Params held in a map.
type ParamMap map[string]Value

// Param implements Params.
func (m ParamMap) Param(name string) (Value, bool) {
	v, ok := m[name]
	return v, ok
}

// ParamNames implements ParamLister, in sorted order.
func (m ParamMap) ParamNames() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String names a value's type as a Define's type attribute would: int, float, int[],
// float[], or string.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindIntList:
		return "int[]"
	case KindFloatList:
		return "float[]"
	case KindString:
		return "string"
	}
	return "invalid"
}

// describeParams lists the parameters a Params has, with their types, for messages:
// `alpha (float), pads (int[])`; "" when it cannot list them.
func describeParams(p Params) string {
	pl, ok := p.(ParamLister)
	if !ok {
		return ""
	}
	var s []string
	for _, n := range pl.ParamNames() {
		if v, ok := p.Param(n); ok {
			s = append(s, fmt.Sprintf("%s (%s)", n, v.Kind))
		}
	}
	if len(s) == 0 {
		return "the layer has no parameters"
	}
	return "the layer's parameters: " + strings.Join(s, ", ")
}

// ParseValue reads a parameter value as written on a command line: a comma-separated
// list is a list ("2,3,4"), a number with '.', 'e' or inf/nan is a float ("0.5"), any
// other number an int, and anything else a string.
func ParseValue(s string) Value {
	parts := strings.Split(s, ",")
	list := len(parts) > 1
	ints := make([]int64, 0, len(parts))
	isInt := true
	for _, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			isInt = false
			break
		}
		ints = append(ints, n)
	}
	if isInt {
		if list {
			return Ints(ints...)
		}
		return Int(ints[0])
	}
	floats := make([]float64, 0, len(parts))
	for _, p := range parts {
		f, err := customlayer.ParseFloat(p)
		if err != nil {
			return String(s)
		}
		floats = append(floats, f)
	}
	if list {
		return Floats(floats...)
	}
	return Float(floats[0])
}

// FormatFloat writes v as an OpenCL C float literal that reads back to the same float32:
// 0.1 → "0.1f", 2 → "2.0f", 1e-07 → "1e-07f"; infinities and NaN become the OpenCL
// macros INFINITY and NAN.
func FormatFloat(v float64) string {
	f := float32(v)
	switch {
	case math.IsNaN(v):
		return "NAN"
	case math.IsInf(float64(f), 1):
		return "INFINITY"
	case math.IsInf(float64(f), -1):
		return "(-INFINITY)"
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

// arrayLiteral writes a compound literal usable with sizeof: (int []){ 1,2,3, }.
func arrayLiteral(ctype string, elems []string) string {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(ctype)
	b.WriteString(" []){ ")
	for _, e := range elems {
		b.WriteString(e)
		b.WriteString(",")
	}
	b.WriteString(" }")
	return b.String()
}

// defineValue returns the text after "#define NAME " for d in this instance, or "" for
// a bare define. Errors do not name the define; the caller does.
func defineValue(d customlayer.Define, params Params) (string, error) {
	if d.Param != "" && params != nil {
		if v, ok := params.Param(d.Param); ok {
			s, err := renderValue(d.Type, v)
			if err != nil {
				return "", fmt.Errorf("parameter %q = %s: %v", d.Param, v.text(), err)
			}
			return s, nil
		}
	}
	if !d.HasDefault {
		if d.Param != "" {
			msg := fmt.Sprintf("the layer has no parameter %q and the define has no default", d.Param)
			if have := describeParams(params); have != "" {
				msg += "; " + have
			}
			return "", errors.New(msg)
		}
		return "", nil
	}
	if d.Type == customlayer.Untyped {
		return d.Default, nil
	}
	parts, err := customlayer.ParseDefineValue(d.Type, d.Default)
	if err != nil {
		return "", fmt.Errorf("default %q: %v", d.Default, err)
	}
	var v Value
	if d.Type.Elem() == customlayer.Int {
		v = Value{Kind: KindIntList}
		for _, p := range parts {
			n, _ := strconv.ParseInt(p, 10, 64)
			v.Ints = append(v.Ints, n)
		}
	} else {
		v = Value{Kind: KindFloatList}
		for _, p := range parts {
			f, _ := customlayer.ParseFloat(p)
			v.Floats = append(v.Floats, f)
		}
	}
	if !d.Type.IsArray() {
		if len(parts) != 1 {
			return "", fmt.Errorf("default %q is not a single value", d.Default)
		}
		v.Kind = map[customlayer.DefineType]Kind{customlayer.Int: KindInt, customlayer.Float: KindFloat}[d.Type]
	}
	return renderValue(d.Type, v)
}

// renderValue writes v for a define of type t.
func renderValue(t customlayer.DefineType, v Value) (string, error) {
	if v.Kind == KindString {
		if strings.ContainsAny(v.Str, "\r\n") {
			return "", fmt.Errorf("a value with a line break cannot be a define")
		}
		if t == customlayer.Untyped {
			return v.Str, nil
		}
		// A string parameter (an attribute the model kept as text) is read as the
		// define's type expects.
		pv := ParseValue(v.Str)
		if pv.Kind == KindString {
			return "", fmt.Errorf("not a number")
		}
		v = pv
	}
	nums, err := v.nums()
	if err != nil {
		return "", err
	}
	if v.isList() && !t.IsArray() && t != customlayer.Untyped {
		return "", fmt.Errorf("a list cannot be given to the scalar %s define", t)
	}
	elems := make([]string, len(nums))
	for i, n := range nums {
		switch {
		case t.Elem() == customlayer.Int && n.isFloat:
			if n.f != math.Trunc(n.f) || math.Abs(n.f) > 1<<53 {
				return "", fmt.Errorf("%v is not an integer", n.f)
			}
			elems[i] = strconv.FormatInt(int64(n.f), 10)
		case t.Elem() == customlayer.Float && !n.isFloat:
			elems[i] = FormatFloat(float64(n.i))
		case n.isFloat: // float, or untyped: as the value is
			elems[i] = FormatFloat(n.f)
		default:
			elems[i] = strconv.FormatInt(n.i, 10)
		}
	}
	switch t {
	case customlayer.IntArray:
		return arrayLiteral("int", elems), nil
	case customlayer.FloatArray:
		return arrayLiteral("float", elems), nil
	}
	if len(elems) == 0 {
		return "", nil
	}
	return strings.Join(elems, ","), nil
}
