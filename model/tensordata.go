package model

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Float32s returns the data of a float32 constant as values.
func (t *Tensor) Float32s() ([]float32, error) {
	if err := t.checkData(Float32); err != nil {
		return nil, err
	}
	out := make([]float32, len(t.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Int64s returns the data of an integer constant (int8, uint8, int32 or int64) as int64
// values: shape operands and indices come in any of these from exporters.
func (t *Tensor) Int64s() ([]int64, error) {
	if !t.IsConst() {
		return nil, fmt.Errorf("tensor %q has no data", t.Name)
	}
	size := t.Type.Size()
	if size == 0 || len(t.Data)%size != 0 {
		return nil, fmt.Errorf("tensor %q: %d bytes of data do not hold whole %s elements", t.Name, len(t.Data), t.Type)
	}
	out := make([]int64, len(t.Data)/size)
	for i := range out {
		switch t.Type {
		case Int8:
			out[i] = int64(int8(t.Data[i]))
		case Uint8:
			out[i] = int64(t.Data[i])
		case Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		case Int64:
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		default:
			return nil, fmt.Errorf("tensor %q holds %s, not integers", t.Name, t.Type)
		}
	}
	return out, nil
}

func (t *Tensor) checkData(want DataType) error {
	switch {
	case !t.IsConst():
		return fmt.Errorf("tensor %q has no data", t.Name)
	case t.Type != want:
		return fmt.Errorf("tensor %q holds %s, not %s", t.Name, t.Type, want)
	case len(t.Data)%want.Size() != 0:
		return fmt.Errorf("tensor %q: %d bytes of data do not hold whole %s elements", t.Name, len(t.Data), want)
	}
	return nil
}
