package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/clhost/clhost/model"
)

// maxDim bounds one dimension: OpenCL kernels index with int, and a bound keeps the
// element-count product from overflowing on hostile files.
const maxDim = math.MaxInt32

// elemSize is the size in bytes of one element of an ONNX data type as raw_data and
// external files store it, or 0 for types clhost does not read.
func elemSize(t int32) int {
	switch t {
	case dtUint8, dtInt8, dtBool:
		return 1
	case dtUint16, dtInt16, dtFloat16, dtBfloat16:
		return 2
	case dtFloat, dtInt32, dtUint32:
		return 4
	case dtInt64, dtDouble, dtUint64:
		return 8
	}
	return 0
}

// modelType maps an ONNX element type to the type clhost computes in. Types without an
// exact counterpart widen (INT16, UINT16 → int32; UINT32, UINT64 → int64), BOOL becomes
// uint8 0/1, and DOUBLE and BFLOAT16 become float32, the precision clhost's kernels use.
func modelType(t int32) (model.DataType, error) {
	switch t {
	case dtFloat, dtDouble, dtBfloat16:
		return model.Float32, nil
	case dtFloat16:
		return model.Float16, nil
	case dtInt8:
		return model.Int8, nil
	case dtUint8, dtBool:
		return model.Uint8, nil
	case dtInt32, dtInt16, dtUint16:
		return model.Int32, nil
	case dtInt64, dtUint32, dtUint64:
		return model.Int64, nil
	}
	return 0, fmt.Errorf("element type %s is not supported (clhost reads float32, float16, double, bfloat16 and 8- to 64-bit integer and bool tensors)", dataTypeName(t))
}

// shapeOf checks ONNX dims and returns them as a shape with its element count.
func shapeOf(dims []int64) ([]int, int, error) {
	shape := make([]int, len(dims))
	n := 1
	zero := false
	for i, d := range dims {
		if d < 0 || d > maxDim {
			return nil, 0, fmt.Errorf("dimension %d is %d", i, d)
		}
		shape[i] = int(d)
		if d == 0 {
			zero = true
			continue
		}
		if n > math.MaxInt/int(d) {
			return nil, 0, fmt.Errorf("shape %v has too many elements", dims)
		}
		n *= int(d)
	}
	if zero {
		n = 0
	}
	return shape, n, nil
}

// loadExternal returns the bytes of an externally stored tensor; it is supplied by the
// importer, which knows the model's folder.
type loadExternal func(t *tensorProto, size int) ([]byte, error)

// convertTensor turns a TensorProto into a constant model tensor, converting the element
// type as modelType describes. ext reads external data; it may be nil when none is allowed.
func convertTensor(t *tensorProto, ext loadExternal) (model.Tensor, error) {
	out := model.Tensor{Name: t.name}
	if t.segmented {
		return out, fmt.Errorf("segmented tensors are not supported")
	}
	typ, err := modelType(t.dataType)
	if err != nil {
		return out, err
	}
	out.Type = typ
	shape, n, err := shapeOf(t.dims)
	if err != nil {
		return out, err
	}
	out.Shape = shape
	size := elemSize(t.dataType)
	if n > math.MaxInt/8 {
		return out, fmt.Errorf("shape %v has too many elements", shape)
	}
	raw := t.rawData
	hasRaw := t.hasRaw
	switch t.location {
	case 0:
	case 1:
		if ext == nil {
			return out, fmt.Errorf("data is stored in an external file, which is not allowed here")
		}
		if raw, err = ext(t, n*size); err != nil {
			return out, err
		}
		hasRaw = true
	default:
		return out, fmt.Errorf("unknown data_location %d", t.location)
	}

	counts := []struct {
		n    int
		name string
	}{
		{len(t.floatData), "float_data"}, {len(t.int32Data), "int32_data"},
		{len(t.int64Data), "int64_data"}, {len(t.doubleData), "double_data"},
		{len(t.uint64Data), "uint64_data"},
	}
	if hasRaw {
		for _, c := range counts {
			if c.n > 0 {
				return out, fmt.Errorf("has both raw_data and %s", c.name)
			}
		}
		if len(raw) != n*size {
			return out, fmt.Errorf("raw data holds %d bytes, shape %v of %s needs %d", len(raw), shape, dataTypeName(t.dataType), n*size)
		}
		out.Data, err = fromRaw(t.dataType, raw, n)
		return out, err
	}

	// Typed fields: which one holds the values depends on the element type.
	var have int
	var from string
	switch t.dataType {
	case dtFloat:
		have, from = len(t.floatData), "float_data"
	case dtInt64:
		have, from = len(t.int64Data), "int64_data"
	case dtDouble:
		have, from = len(t.doubleData), "double_data"
	case dtUint32, dtUint64:
		have, from = len(t.uint64Data), "uint64_data"
	default:
		have, from = len(t.int32Data), "int32_data"
	}
	for _, c := range counts {
		if c.n > 0 && c.name != from {
			return out, fmt.Errorf("%s tensor has values in %s, expected %s", dataTypeName(t.dataType), c.name, from)
		}
	}
	if have != n {
		return out, fmt.Errorf("%s holds %d values, shape %v needs %d", from, have, shape, n)
	}
	out.Data, err = fromTyped(t, n)
	return out, err
}

// fromRaw converts n little-endian elements of ONNX type t to the model type's bytes.
func fromRaw(t int32, raw []byte, n int) ([]byte, error) {
	le := binary.LittleEndian
	switch t {
	case dtFloat, dtFloat16, dtInt8, dtUint8, dtInt32, dtInt64:
		return append(make([]byte, 0, len(raw)), raw...), nil
	case dtBool:
		out := make([]byte, n)
		for i, v := range raw {
			if v != 0 {
				out[i] = 1
			}
		}
		return out, nil
	case dtInt16:
		out := make([]byte, 0, 4*n)
		for i := 0; i < n; i++ {
			out = le.AppendUint32(out, uint32(int32(int16(le.Uint16(raw[2*i:])))))
		}
		return out, nil
	case dtUint16:
		out := make([]byte, 0, 4*n)
		for i := 0; i < n; i++ {
			out = le.AppendUint32(out, uint32(le.Uint16(raw[2*i:])))
		}
		return out, nil
	case dtUint32:
		out := make([]byte, 0, 8*n)
		for i := 0; i < n; i++ {
			out = le.AppendUint64(out, uint64(le.Uint32(raw[4*i:])))
		}
		return out, nil
	case dtUint64:
		out := make([]byte, 0, 8*n)
		for i := 0; i < n; i++ {
			v := le.Uint64(raw[8*i:])
			if v > math.MaxInt64 {
				return nil, fmt.Errorf("uint64 value %d at index %d does not fit in int64", v, i)
			}
			out = le.AppendUint64(out, v)
		}
		return out, nil
	case dtDouble:
		out := make([]byte, 0, 4*n)
		for i := 0; i < n; i++ {
			out = le.AppendUint32(out, math.Float32bits(float32(math.Float64frombits(le.Uint64(raw[8*i:])))))
		}
		return out, nil
	case dtBfloat16:
		out := make([]byte, 0, 4*n)
		for i := 0; i < n; i++ {
			out = le.AppendUint32(out, uint32(le.Uint16(raw[2*i:]))<<16)
		}
		return out, nil
	}
	return nil, fmt.Errorf("element type %s is not supported", dataTypeName(t))
}

// fromTyped converts the values of the typed field that holds type t's data.
func fromTyped(t *tensorProto, n int) ([]byte, error) {
	le := binary.LittleEndian
	out := make([]byte, 0, n*8)
	inRange := func(i int, v int32, lo, hi int64) error {
		if int64(v) < lo || int64(v) > hi {
			return fmt.Errorf("int32_data value %d at index %d is out of range for %s", v, i, dataTypeName(t.dataType))
		}
		return nil
	}
	switch t.dataType {
	case dtFloat:
		for _, v := range t.floatData {
			out = le.AppendUint32(out, math.Float32bits(v))
		}
	case dtDouble:
		for _, v := range t.doubleData {
			out = le.AppendUint32(out, math.Float32bits(float32(v)))
		}
	case dtInt64:
		for _, v := range t.int64Data {
			out = le.AppendUint64(out, uint64(v))
		}
	case dtUint32, dtUint64:
		limit := uint64(math.MaxInt64)
		if t.dataType == dtUint32 {
			limit = math.MaxUint32
		}
		for i, v := range t.uint64Data {
			if v > limit {
				return nil, fmt.Errorf("uint64_data value %d at index %d is out of range for %s", v, i, dataTypeName(t.dataType))
			}
			out = le.AppendUint64(out, v)
		}
	case dtInt32:
		for _, v := range t.int32Data {
			out = le.AppendUint32(out, uint32(v))
		}
	case dtInt16, dtUint16:
		lo, hi := int64(math.MinInt16), int64(math.MaxInt16)
		if t.dataType == dtUint16 {
			lo, hi = 0, math.MaxUint16
		}
		for i, v := range t.int32Data {
			if err := inRange(i, v, lo, hi); err != nil {
				return nil, err
			}
			out = le.AppendUint32(out, uint32(v))
		}
	case dtInt8, dtUint8, dtBool:
		lo, hi := int64(math.MinInt8), int64(math.MaxInt8)
		if t.dataType != dtInt8 {
			lo, hi = 0, math.MaxUint8
		}
		for i, v := range t.int32Data {
			if err := inRange(i, v, lo, hi); err != nil {
				return nil, err
			}
			b := byte(v)
			if t.dataType == dtBool && v != 0 {
				b = 1
			}
			out = append(out, b)
		}
	case dtFloat16, dtBfloat16:
		// Half-width floats travel as their bit patterns in int32_data.
		for i, v := range t.int32Data {
			if err := inRange(i, v, 0, math.MaxUint16); err != nil {
				return nil, err
			}
			if t.dataType == dtFloat16 {
				out = le.AppendUint16(out, uint16(v))
			} else {
				out = le.AppendUint32(out, uint32(v)<<16)
			}
		}
	default:
		return nil, fmt.Errorf("element type %s is not supported", dataTypeName(t.dataType))
	}
	return out, nil
}
