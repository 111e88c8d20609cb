package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/model"
)

// cval is a constant's value while the importer folds layers at load time: integers keep
// int64 precision (Slice's ends are often INT64_MAX), floats are float64.
type cval struct {
	typ   model.DataType
	shape []int
	ints  []int64   // integer types (bool is uint8 0/1)
	fls   []float64 // float types
}

func (v *cval) isInt() bool { return v.typ != model.Float32 && v.typ != model.Float16 }

func (v *cval) n() int { return elementsOf(v.shape) }

// f returns element i as a float64, i an integer value.
func (v *cval) f(i int) float64 {
	if v.isInt() {
		return float64(v.ints[i])
	}
	return v.fls[i]
}

func (v *cval) i(i int) int64 {
	if v.isInt() {
		return v.ints[i]
	}
	return int64(v.fls[i])
}

func newVal(typ model.DataType, shape []int) *cval {
	v := &cval{typ: typ, shape: slices.Clone(shape)}
	if v.isInt() {
		v.ints = make([]int64, v.n())
	} else {
		v.fls = make([]float64, v.n())
	}
	return v
}

// set stores x at i, converting to the value's type.
func (v *cval) set(i int, x float64) {
	if v.isInt() {
		v.ints[i] = int64(x)
	} else {
		v.fls[i] = x
	}
}

// copyElem copies element j of src to element i of v (same type).
func (v *cval) copyElem(i int, src *cval, j int) {
	if v.isInt() {
		v.ints[i] = src.ints[j]
	} else {
		v.fls[i] = src.fls[j]
	}
}

func valOf(t *model.Tensor) (*cval, error) {
	v := &cval{typ: t.Type, shape: slices.Clone(t.Shape)}
	switch t.Type {
	case model.Float32, model.Float16:
		fs, _, err := tensorValues(t)
		if err != nil {
			return nil, err
		}
		v.fls = make([]float64, len(fs))
		for i, x := range fs {
			v.fls[i] = float64(x)
		}
		v.typ = model.Float32
	default:
		is, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		v.ints = is
	}
	if len(v.ints)+len(v.fls) != v.n() {
		return nil, fmt.Errorf("tensor %q has %d values for shape %v", t.Name, len(v.ints)+len(v.fls), t.Shape)
	}
	return v, nil
}

// tensor turns the value into a model constant: integers as int64 (uint8 for bool
// results), floats as float32.
func (v *cval) tensor(name string) model.Tensor {
	le := binary.LittleEndian
	t := model.Tensor{Name: name, Type: v.typ, Shape: slices.Clone(v.shape), Data: []byte{}}
	switch v.typ {
	case model.Float32, model.Float16:
		t.Type = model.Float32
		for _, x := range v.fls {
			t.Data = le.AppendUint32(t.Data, math.Float32bits(float32(x)))
		}
	case model.Uint8:
		for _, x := range v.ints {
			t.Data = append(t.Data, byte(x))
		}
	case model.Int8:
		for _, x := range v.ints {
			t.Data = append(t.Data, byte(int8(x)))
		}
	case model.Int32:
		for _, x := range v.ints {
			t.Data = le.AppendUint32(t.Data, uint32(int32(x)))
		}
	default:
		t.Type = model.Int64
		for _, x := range v.ints {
			t.Data = le.AppendUint64(t.Data, uint64(x))
		}
	}
	return t
}
