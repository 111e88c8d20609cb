package model

import (
	"encoding/binary"
	"math"
	"slices"
)

// Builder writes a model from Go, the counterpart of OCL-ENGINE's create_model_sample:
//
//	b := model.NewBuilder("convpool")
//	x := b.Input("data", model.Float32, 1, 3, 416, 416)
//	w := b.ConstFloat32("conv1.weight", []int{10, 3, 4, 4}, weights)
//	y := b.Layer("Conv", "conv1", []string{x, w}, model.IntsAttr("strides", 4, 4))
//	b.Output(y)
//	m, err := b.Build()
//
// Each method returns the name of the tensor it declared or produced, so calls chain.
// Mistakes (a duplicate name, data that does not fit the shape) surface from Build, which
// validates the whole model and reports every problem at once.
type Builder struct {
	m Model
}

// NewBuilder starts a model with the given name.
func NewBuilder(name string) *Builder {
	return &Builder{m: Model{Name: name}}
}

// Input declares a graph input.
func (b *Builder) Input(name string, t DataType, shape ...int) string {
	b.Tensor(name, t, shape...)
	b.m.Inputs = append(b.m.Inputs, name)
	return name
}

// Tensor declares the type and shape of a tensor without data: a layer output whose shape
// inference cannot compute, such as the output of a custom layer.
func (b *Builder) Tensor(name string, t DataType, shape ...int) string {
	b.m.Tensors = append(b.m.Tensors, Tensor{Name: name, Type: t, Shape: slices.Clone(shape)})
	return name
}

// Const declares a constant tensor from raw little-endian bytes in C order. The bytes are
// copied.
func (b *Builder) Const(name string, t DataType, shape []int, data []byte) string {
	d := make([]byte, len(data)) // never nil: an empty constant is still a constant
	copy(d, data)
	b.m.Tensors = append(b.m.Tensors, Tensor{Name: name, Type: t, Shape: slices.Clone(shape), Data: d})
	return name
}

// ConstFloat32 declares a float32 constant.
func (b *Builder) ConstFloat32(name string, shape []int, v []float32) string {
	return b.Const(name, Float32, shape, Float32Bytes(v))
}

// ConstInt64 declares an int64 constant, such as the shape operand of Reshape.
func (b *Builder) ConstInt64(name string, shape []int, v []int64) string {
	return b.Const(name, Int64, shape, Int64Bytes(v))
}

// ConstInt32 declares an int32 constant.
func (b *Builder) ConstInt32(name string, shape []int, v []int32) string {
	d := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(d[4*i:], uint32(x))
	}
	return b.Const(name, Int32, shape, d)
}

// Layer adds a layer with one output, named after the layer, and returns that name.
func (b *Builder) Layer(typ, name string, inputs []string, attrs ...Attr) string {
	return b.LayerOutputs(typ, name, inputs, []string{name}, attrs...)[0]
}

// LayerOutputs adds a layer whose outputs are named explicitly (layers with several
// outputs, or an output named unlike its layer) and returns the output names.
func (b *Builder) LayerOutputs(typ, name string, inputs, outputs []string, attrs ...Attr) []string {
	l := Layer{
		Name:    name,
		Type:    typ,
		Inputs:  slices.Clone(inputs),
		Outputs: slices.Clone(outputs),
		Attrs:   slices.Clone(attrs),
	}
	b.m.Layers = append(b.m.Layers, l)
	return slices.Clone(outputs)
}

// Output marks tensors as graph outputs, in order.
func (b *Builder) Output(names ...string) {
	b.m.Outputs = append(b.m.Outputs, names...)
}

// Build validates the model and returns it. The model is independent of the builder, which
// may go on to build more.
func (b *Builder) Build() (*Model, error) {
	m := b.m
	m.Tensors = slices.Clone(b.m.Tensors)
	m.Layers = slices.Clone(b.m.Layers)
	m.Inputs = slices.Clone(b.m.Inputs)
	m.Outputs = slices.Clone(b.m.Outputs)
	if err := Validate(&m); err != nil {
		return nil, err
	}
	return &m, nil
}

// IntAttr is an integer attribute.
func IntAttr(name string, v int64) Attr { return Attr{Name: name, Kind: AttrInt, Int: v} }

// FloatAttr is a float attribute.
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Kind: AttrFloat, Float: v} }

// IntsAttr is an integer-list attribute.
func IntsAttr(name string, v ...int64) Attr {
	return Attr{Name: name, Kind: AttrInts, Ints: append([]int64{}, v...)}
}

// FloatsAttr is a float-list attribute.
func FloatsAttr(name string, v ...float32) Attr {
	return Attr{Name: name, Kind: AttrFloats, Floats: append([]float32{}, v...)}
}

// StringAttr is a string attribute.
func StringAttr(name string, v string) Attr { return Attr{Name: name, Kind: AttrString, Str: v} }

// Float32Bytes encodes float32 values as tensor data.
func Float32Bytes(v []float32) []byte {
	d := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(x))
	}
	return d
}

// Int64Bytes encodes int64 values as tensor data.
func Int64Bytes(v []int64) []byte {
	d := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(d[8*i:], uint64(x))
	}
	return d
}
