// Package model is clhost's native model format: an in-memory graph description
// (tensors, layers with typed attributes, graph inputs and outputs), and its FlatBuffers
// file form with verified loading, saving and a builder.
package model

import "fmt"

// DataType is the element type of a tensor.
type DataType int8

// Element types. The numbering is part of the file format: append only.
const (
	Float32 DataType = 0
	Float16 DataType = 1
	Int8    DataType = 2
	Uint8   DataType = 3
	Int32   DataType = 4
	Int64   DataType = 5
)

// Size is the size of one element in bytes, or 0 for an unknown type.
func (t DataType) Size() int {
	switch t {
	case Float32, Int32:
		return 4
	case Float16:
		return 2
	case Int8, Uint8:
		return 1
	case Int64:
		return 8
	}
	return 0
}

// IsInteger says whether the type is one of the integer types.
func (t DataType) IsInteger() bool {
	switch t {
	case Int8, Uint8, Int32, Int64:
		return true
	}
	return false
}

// CLName is the OpenCL C spelling of the type (INPUT0_TYPE and friends).
func (t DataType) CLName() string {
	switch t {
	case Float32:
		return "float"
	case Float16:
		return "half"
	case Int8:
		return "char"
	case Uint8:
		return "uchar"
	case Int32:
		return "int"
	case Int64:
		return "long"
	}
	return ""
}

func (t DataType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case Int8:
		return "int8"
	case Uint8:
		return "uint8"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	}
	return fmt.Sprintf("DataType(%d)", int8(t))
}

// Tensor is a named tensor of the graph. Constant tensors (weights) carry Data in
// little-endian element order (C order); activations carry only their shape.
type Tensor struct {
	Name  string
	Type  DataType
	Shape []int
	Data  []byte
}

// IsConst reports whether the tensor holds constant data.
func (t *Tensor) IsConst() bool { return t.Data != nil }

// Elements is the product of the shape (1 for a scalar).
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// AttrKind tells which field of an Attr holds its value.
type AttrKind int8

// Attribute kinds. The numbering is part of the file format: append only.
const (
	AttrInt    AttrKind = 0
	AttrFloat  AttrKind = 1
	AttrInts   AttrKind = 2
	AttrFloats AttrKind = 3
	AttrString AttrKind = 4
)

// Attr is one typed layer attribute.
type Attr struct {
	Name   string
	Kind   AttrKind
	Int    int64
	Float  float32
	Ints   []int64
	Floats []float32
	Str    string
}

// Layer is one node of the graph: its type names the operation (ONNX operator names for
// built-ins, or a custom layer type), its inputs and outputs name tensors.
type Layer struct {
	Name    string
	Type    string
	Inputs  []string
	Outputs []string
	Attrs   []Attr
}

// Model is a whole graph.
type Model struct {
	Name    string
	Tensors []Tensor // every tensor with a known shape: inputs, constants, intermediates, outputs
	Layers  []Layer
	Inputs  []string
	Outputs []string
}

// Attr returns the attribute with that name, or nil.
func (l *Layer) Attr(name string) *Attr {
	for i := range l.Attrs {
		if l.Attrs[i].Name == name {
			return &l.Attrs[i]
		}
	}
	return nil
}

// Has reports whether the layer has the attribute.
func (l *Layer) Has(name string) bool { return l.Attr(name) != nil }

// Int returns an integer attribute, or def when absent. A float attribute is truncated.
func (l *Layer) Int(name string, def int64) int64 {
	a := l.Attr(name)
	if a == nil {
		return def
	}
	switch a.Kind {
	case AttrInt:
		return a.Int
	case AttrFloat:
		return int64(a.Float)
	}
	return def
}

// Float returns a float attribute, or def when absent. An integer attribute converts.
func (l *Layer) Float(name string, def float32) float32 {
	a := l.Attr(name)
	if a == nil {
		return def
	}
	switch a.Kind {
	case AttrFloat:
		return a.Float
	case AttrInt:
		return float32(a.Int)
	}
	return def
}

// Ints returns an integer-list attribute, or def when absent.
func (l *Layer) Ints(name string, def []int64) []int64 {
	a := l.Attr(name)
	if a == nil {
		return def
	}
	switch a.Kind {
	case AttrInts:
		return a.Ints
	case AttrInt:
		return []int64{a.Int}
	}
	return def
}

// Floats returns a float-list attribute, or def when absent.
func (l *Layer) Floats(name string, def []float32) []float32 {
	a := l.Attr(name)
	if a == nil {
		return def
	}
	switch a.Kind {
	case AttrFloats:
		return a.Floats
	case AttrFloat:
		return []float32{a.Float}
	case AttrInts:
		out := make([]float32, len(a.Ints))
		for i, v := range a.Ints {
			out[i] = float32(v)
		}
		return out
	}
	return def
}

// String returns a string attribute, or def when absent.
func (l *Layer) String(name string, def string) string {
	a := l.Attr(name)
	if a == nil || a.Kind != AttrString {
		return def
	}
	return a.Str
}

// Tensor returns the tensor with that name, or nil.
func (m *Model) Tensor(name string) *Tensor {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i]
		}
	}
	return nil
}
