package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// jsonFormat names the JSON form in its "format" field, so a stray JSON file is told apart
// from a model.
const jsonFormat = "clhost-model"

// ToJSON returns the readable form of a valid model: the structure indented, each tensor's
// data inline as one array of numbers (floats printed so they read back to the same
// float32; NaN and infinities as the strings "NaN", "Infinity", "-Infinity", which JSON
// numbers cannot express).
func ToJSON(m *Model) ([]byte, error) {
	if err := Validate(m); err != nil {
		return nil, err
	}
	var data int
	for i := range m.Tensors {
		data += len(m.Tensors[i].Data)
	}
	w := &jsonWriter{buf: make([]byte, 0, 4*data+4096)}
	w.raw("{\n")
	w.raw(`  "format": `).str(jsonFormat).raw(",\n")
	w.raw(`  "version": `).int(FormatVersion).raw(",\n")
	w.raw(`  "name": `).str(m.Name).raw(",\n")
	w.raw(`  "inputs": `).strs(m.Inputs).raw(",\n")
	w.raw(`  "outputs": `).strs(m.Outputs).raw(",\n")
	w.raw(`  "tensors": [`)
	for i := range m.Tensors {
		t := &m.Tensors[i]
		w.sep(i, "\n    ")
		w.raw(`{"name": `).str(t.Name).raw(`, "type": `).str(t.Type.String()).raw(`, "shape": [`)
		for k, d := range t.Shape {
			w.sep(k, " ").int(int64(d))
		}
		w.raw("]")
		if t.IsConst() {
			w.raw(`, "data": `)
			w.data(t)
		}
		w.raw("}")
	}
	w.end(len(m.Tensors), "\n  ").raw(",\n")
	w.raw(`  "layers": [`)
	for i := range m.Layers {
		l := &m.Layers[i]
		w.sep(i, "\n    ")
		w.raw(`{"name": `).str(l.Name).raw(`, "type": `).str(l.Type)
		w.raw(`, "inputs": `).strs(l.Inputs).raw(`, "outputs": `).strs(l.Outputs)
		w.raw(`, "attrs": [`)
		for k := range l.Attrs {
			w.sep(k, "\n      ")
			w.attr(&l.Attrs[k])
		}
		w.end(len(l.Attrs), "\n    ").raw("}")
	}
	w.end(len(m.Layers), "\n  ").raw("\n}\n")
	return w.buf, nil
}

type jsonWriter struct{ buf []byte }

func (w *jsonWriter) raw(s string) *jsonWriter { w.buf = append(w.buf, s...); return w }

func (w *jsonWriter) int(v int64) *jsonWriter { w.buf = strconv.AppendInt(w.buf, v, 10); return w }

func (w *jsonWriter) str(s string) *jsonWriter {
	q, _ := json.Marshal(s) // a string always marshals
	w.buf = append(w.buf, q...)
	return w
}

func (w *jsonWriter) float(v float32) *jsonWriter {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return w.raw(`"NaN"`)
	case math.IsInf(f, 1):
		return w.raw(`"Infinity"`)
	case math.IsInf(f, -1):
		return w.raw(`"-Infinity"`)
	}
	w.buf = strconv.AppendFloat(w.buf, f, 'g', -1, 32)
	return w
}

// sep writes the separator before element i of a list: none before the first in an
// inline list, the indent before each in a broken one.
func (w *jsonWriter) sep(i int, indent string) *jsonWriter {
	if i > 0 {
		w.raw(",")
		if indent == " " {
			return w.raw(" ")
		}
	}
	if indent != " " {
		w.raw(indent)
	}
	return w
}

// end closes a list broken over lines; an empty one stays "[]".
func (w *jsonWriter) end(n int, indent string) *jsonWriter {
	if n > 0 {
		w.raw(indent)
	}
	return w.raw("]")
}

func (w *jsonWriter) strs(l []string) *jsonWriter {
	w.raw("[")
	for i, s := range l {
		w.sep(i, " ").str(s)
	}
	return w.raw("]")
}

func (w *jsonWriter) attr(a *Attr) {
	w.raw(`{"name": `).str(a.Name)
	switch a.Kind {
	case AttrInt:
		w.raw(`, "int": `).int(a.Int)
	case AttrFloat:
		w.raw(`, "float": `).float(a.Float)
	case AttrInts:
		w.raw(`, "ints": [`)
		for i, v := range a.Ints {
			w.sep(i, " ").int(v)
		}
		w.raw("]")
	case AttrFloats:
		w.raw(`, "floats": [`)
		for i, v := range a.Floats {
			w.sep(i, " ").float(v)
		}
		w.raw("]")
	case AttrString:
		w.raw(`, "string": `).str(a.Str)
	}
	w.raw("}")
}

// data writes a valid constant's elements; Validate has checked its length and type.
func (w *jsonWriter) data(t *Tensor) {
	w.raw("[")
	size := t.Type.Size()
	for i := 0; i < len(t.Data)/size; i++ {
		w.sep(i, " ")
		d := t.Data[i*size:]
		switch t.Type {
		case Float32:
			w.float(math.Float32frombits(binary.LittleEndian.Uint32(d)))
		case Float16:
			w.float(HalfToFloat32(binary.LittleEndian.Uint16(d)))
		case Int8:
			w.int(int64(int8(d[0])))
		case Uint8:
			w.int(int64(d[0]))
		case Int32:
			w.int(int64(int32(binary.LittleEndian.Uint32(d))))
		case Int64:
			w.int(int64(binary.LittleEndian.Uint64(d)))
		}
	}
	w.raw("]")
}

type jsonModel struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	Name    string       `json:"name"`
	Inputs  []string     `json:"inputs"`
	Outputs []string     `json:"outputs"`
	Tensors []jsonTensor `json:"tensors"`
	Layers  []jsonLayer  `json:"layers"`
}

type jsonTensor struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Shape []int           `json:"shape"`
	Data  json.RawMessage `json:"data"`
}

type jsonLayer struct {
	Name    string     `json:"name"`
	Type    string     `json:"type"`
	Inputs  []string   `json:"inputs"`
	Outputs []string   `json:"outputs"`
	Attrs   []jsonAttr `json:"attrs"`
}

// jsonAttr holds exactly one of its value fields; pointers tell a present empty list from
// an absent one.
type jsonAttr struct {
	Name   string       `json:"name"`
	Int    *int64       `json:"int"`
	Float  *jsonFloat   `json:"float"`
	Ints   *[]int64     `json:"ints"`
	Floats *[]jsonFloat `json:"floats"`
	String *string      `json:"string"`
}

// jsonFloat is a float32 written as a JSON number or as "NaN", "Infinity" or "-Infinity".
type jsonFloat float32

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	v, err := parseFloat32(string(b))
	if err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

func parseFloat32(tok string) (float32, error) {
	switch tok {
	case `"NaN"`:
		return float32(math.NaN()), nil
	case `"Infinity"`:
		return float32(math.Inf(1)), nil
	case `"-Infinity"`:
		return float32(math.Inf(-1)), nil
	}
	if tok == "" || tok[0] == '"' {
		return 0, fmt.Errorf("%s is not a number (strings allowed: \"NaN\", \"Infinity\", \"-Infinity\")", tok)
	}
	v, err := strconv.ParseFloat(tok, 32)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s is out of the float32 range", tok)
		}
		return 0, fmt.Errorf("%s is not a number", tok)
	}
	return float32(v), nil
}

// LoadJSON reads a model in its JSON form from a file.
func LoadJSON(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return FromJSON(data, path)
}

// SaveJSON writes a model in its JSON form, replacing path only once the whole file is
// written.
func SaveJSON(m *Model, path string) error {
	data, err := ToJSON(m)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// FromJSON reads the JSON form of a model; name says where it came from in errors. Unknown
// fields are refused, so that a misspelt key is not silently dropped. The model is
// validated like a loaded file.
func FromJSON(data []byte, name string) (*Model, error) {
	if name == "" {
		name = "model JSON"
	}
	fail := func(format string, args ...any) error {
		return &Error{Source: name, Problems: []string{fmt.Sprintf(format, args...)}}
	}
	var jm jsonModel
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jm); err != nil {
		return nil, fail("%s", describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fail("unexpected data after the model object")
	}
	if jm.Format != jsonFormat {
		return nil, fail("\"format\" is %q, want %q", jm.Format, jsonFormat)
	}
	if jm.Version != FormatVersion {
		return nil, fail("\"version\" is %d, this clhost reads %d", jm.Version, FormatVersion)
	}
	var p problems
	m := &Model{Name: jm.Name, Inputs: jm.Inputs, Outputs: jm.Outputs}
	if len(jm.Tensors) > 0 {
		m.Tensors = make([]Tensor, len(jm.Tensors))
	}
	for i := range jm.Tensors {
		jt := &jm.Tensors[i]
		t := Tensor{Name: jt.Name, Shape: jt.Shape}
		typ, ok := parseDataType(jt.Type)
		if !ok {
			p.add("tensor %q: unknown type %q", jt.Name, jt.Type)
			continue
		}
		t.Type = typ
		if len(jt.Data) > 0 && string(jt.Data) != "null" {
			d, err := parseData(jt.Data, typ)
			if err != nil {
				p.add("tensor %q: data: %v", jt.Name, err)
				continue
			}
			if n, ok := checkedElements(t.Shape); ok && int64(len(d)) != n*int64(typ.Size()) {
				p.add("tensor %q: data has %d values, shape %v needs %d", jt.Name, len(d)/typ.Size(), t.Shape, n)
				continue
			}
			t.Data = d
		}
		m.Tensors[i] = t
	}
	if len(jm.Layers) > 0 {
		m.Layers = make([]Layer, len(jm.Layers))
	}
	for i := range jm.Layers {
		jl := &jm.Layers[i]
		l := Layer{Name: jl.Name, Type: jl.Type, Inputs: jl.Inputs, Outputs: jl.Outputs}
		if len(jl.Attrs) > 0 {
			l.Attrs = make([]Attr, len(jl.Attrs))
		}
		for k := range jl.Attrs {
			a, err := jl.Attrs[k].attr()
			if err != nil {
				p.add("layer %q: attribute %q: %v", jl.Name, jl.Attrs[k].Name, err)
			}
			l.Attrs[k] = a
		}
		m.Layers[i] = l
	}
	if err := p.err(name); err != nil {
		return nil, err
	}
	if err := validate(m, name); err != nil {
		return nil, err
	}
	return m, nil
}

func (ja *jsonAttr) attr() (Attr, error) {
	a := Attr{Name: ja.Name}
	set := 0
	if ja.Int != nil {
		a.Kind, a.Int = AttrInt, *ja.Int
		set++
	}
	if ja.Float != nil {
		a.Kind, a.Float = AttrFloat, float32(*ja.Float)
		set++
	}
	if ja.Ints != nil {
		a.Kind, a.Ints = AttrInts, append([]int64{}, *ja.Ints...)
		set++
	}
	if ja.Floats != nil {
		a.Kind, a.Floats = AttrFloats, make([]float32, len(*ja.Floats))
		for i, f := range *ja.Floats {
			a.Floats[i] = float32(f)
		}
		set++
	}
	if ja.String != nil {
		a.Kind, a.Str = AttrString, *ja.String
		set++
	}
	if set != 1 {
		return a, fmt.Errorf("needs exactly one of \"int\", \"float\", \"ints\", \"floats\", \"string\" (has %d)", set)
	}
	return a, nil
}

func parseDataType(s string) (DataType, bool) {
	for t := Float32; t <= Int64; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// parseData reads a JSON array (already syntax-checked by the decoder) of numbers or the
// strings parseFloat32 accepts, without building a generic value per element: weight
// arrays hold millions of them.
func parseData(raw []byte, t DataType) ([]byte, error) {
	s := bytes.TrimSpace(raw)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, fmt.Errorf("not an array")
	}
	size := t.Size()
	out := make([]byte, 0, len(s)/2)
	body := s[1 : len(s)-1]
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte{}, nil
	}
	var e [8]byte
	for i := 0; len(body) > 0 || i == 0; i++ {
		tok := body
		if c := bytes.IndexByte(body, ','); c >= 0 {
			tok, body = body[:c], body[c+1:]
		} else {
			body = nil
		}
		tok = bytes.TrimSpace(tok)
		if err := encodeElement(e[:size], string(tok), t); err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		out = append(out, e[:size]...)
	}
	return out, nil
}

func encodeElement(dst []byte, tok string, t DataType) error {
	switch t {
	case Float32, Float16:
		v, err := parseFloat32(tok)
		if err != nil {
			return err
		}
		if t == Float32 {
			binary.LittleEndian.PutUint32(dst, math.Float32bits(v))
			return nil
		}
		h := Float32ToHalf(v)
		if h&0x7fff == 0x7c00 && !math.IsInf(float64(v), 0) {
			return fmt.Errorf("%s is out of the float16 range", tok)
		}
		binary.LittleEndian.PutUint16(dst, h)
		return nil
	case Uint8:
		v, err := strconv.ParseUint(tok, 10, 8)
		if err != nil {
			return fmt.Errorf("%s is not a uint8", tok)
		}
		dst[0] = byte(v)
		return nil
	}
	bits := 8 * t.Size()
	v, err := strconv.ParseInt(tok, 10, bits)
	if err != nil {
		return fmt.Errorf("%s is not an %s", tok, t)
	}
	switch t {
	case Int8:
		dst[0] = byte(v)
	case Int32:
		binary.LittleEndian.PutUint32(dst, uint32(v))
	case Int64:
		binary.LittleEndian.PutUint64(dst, uint64(v))
	}
	return nil
}

// describeJSONError turns a decoder error into a message with the line and column.
func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON at %s: %v", lineCol(data, syn.Offset), err)
	case errors.As(err, &typ):
		return fmt.Sprintf("at %s: field %q: expected %s, got %s", lineCol(data, typ.Offset), typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends before the model does (truncated file?)"
	}
	return err.Error()
}

// lineCol places the byte before off: the decoder reports offsets just past the byte or
// value at fault.
func lineCol(data []byte, off int64) string {
	off = min(max(off-1, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}
