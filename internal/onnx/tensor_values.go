package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/clhost/clhost/model"
)

// Reading a constant model tensor's elements back as numbers.

// tensorValues returns a constant's elements as floats (for float types) or integers.
func tensorValues(t *model.Tensor) ([]float32, []int64, error) {
	le := binary.LittleEndian
	n := t.Elements()
	if t.Type.Size() == 0 || len(t.Data) != n*t.Type.Size() {
		return nil, nil, fmt.Errorf("tensor %q has %d bytes for %d elements of %s", t.Name, len(t.Data), n, t.Type)
	}
	switch t.Type {
	case model.Float32:
		fs := make([]float32, n)
		for i := range fs {
			fs[i] = math.Float32frombits(le.Uint32(t.Data[4*i:]))
		}
		return fs, nil, nil
	case model.Float16:
		fs := make([]float32, n)
		for i := range fs {
			fs[i] = halfToFloat(le.Uint16(t.Data[2*i:]))
		}
		return fs, nil, nil
	}
	is := make([]int64, n)
	for i := range is {
		switch t.Type {
		case model.Int8:
			is[i] = int64(int8(t.Data[i]))
		case model.Uint8:
			is[i] = int64(t.Data[i])
		case model.Int32:
			is[i] = int64(int32(le.Uint32(t.Data[4*i:])))
		case model.Int64:
			is[i] = int64(le.Uint64(t.Data[8*i:]))
		}
	}
	return nil, is, nil
}

// halfToFloat converts IEEE 754 binary16 bits to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0:
		// Zero or subnormal: the value is frac × 2^-24, exact in float32.
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}
