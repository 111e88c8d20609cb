package serve

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/clhost/clhost/model"
)

// Networks compute in float32 whatever a model declares, so a tensor crosses the
// protocol as the datatype the model declares (metadata shows it) and is converted on
// the way in and out. Integer inputs must be exact in float32 (|v| ≤ 2^24).

// protocolType is the protocol's datatype for a model tensor type. Float16 tensors
// are float32 at the network's boundary.
func protocolType(t model.DataType) string {
	switch t {
	case model.Int8:
		return "INT8"
	case model.Uint8:
		return "UINT8"
	case model.Int32:
		return "INT32"
	case model.Int64:
		return "INT64"
	}
	return "FP32"
}

// typeSize is the size of one element of a protocol datatype in bytes, 0 for the
// datatypes the server does not take (BYTES, and unknown names).
func typeSize(dt string) int {
	switch dt {
	case "BOOL", "INT8", "UINT8":
		return 1
	case "INT16", "UINT16", "FP16", "BF16":
		return 2
	case "INT32", "UINT32", "FP32":
		return 4
	case "INT64", "UINT64", "FP64":
		return 8
	}
	return 0
}

// littleEndian says the machine's float32 bytes are the protocol's, so FP32 data is
// copied as it is (an image of a few hundred kilobytes per request adds up).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// floatBytes is the memory of v as bytes.
func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// maxExactInt is the largest integer every smaller one of which float32 holds exactly.
const maxExactInt = 1 << 24

// decodeRaw converts little-endian elements of datatype dt (one the model declares)
// into dst; len(b) is len(dst) × the element size. It returns the index of an integer
// that float32 cannot hold exactly, or -1.
func decodeRaw(dt string, b []byte, dst []float32) int {
	switch dt {
	case "FP32":
		if littleEndian {
			copy(floatBytes(dst), b)
			break
		}
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case "INT8":
		for i := range dst {
			dst[i] = float32(int8(b[i]))
		}
	case "UINT8":
		for i := range dst {
			dst[i] = float32(b[i])
		}
	case "INT32":
		for i := range dst {
			v := int32(binary.LittleEndian.Uint32(b[4*i:]))
			if v > maxExactInt || v < -maxExactInt {
				return i
			}
			dst[i] = float32(v)
		}
	case "INT64":
		for i := range dst {
			v := int64(binary.LittleEndian.Uint64(b[8*i:]))
			if v > maxExactInt || v < -maxExactInt {
				return i
			}
			dst[i] = float32(v)
		}
	}
	return -1
}

// encodeRaw appends the elements of src as little-endian values of datatype dt.
func encodeRaw(dst []byte, dt string, src []float32) []byte {
	switch dt {
	case "FP32":
		if littleEndian {
			return append(dst, floatBytes(src)...)
		}
		dst = grow(dst, 4*len(src))
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case "INT8":
		for _, v := range src {
			dst = append(dst, byte(int8(clampInt(v, math.MinInt8, math.MaxInt8))))
		}
	case "UINT8":
		for _, v := range src {
			dst = append(dst, byte(clampInt(v, 0, math.MaxUint8)))
		}
	case "INT32":
		dst = grow(dst, 4*len(src))
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(clampInt(v, math.MinInt32, math.MaxInt32))))
		}
	case "INT64":
		dst = grow(dst, 8*len(src))
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(clampInt(v, math.MinInt64, math.MaxInt64)))
		}
	}
	return dst
}

// rawBytes is src as little-endian values of datatype dt: FP32 values on a
// little-endian machine are their own memory, not a copy.
func rawBytes(dt string, src []float32) []byte {
	if dt == "FP32" && littleEndian {
		return floatBytes(src)
	}
	return encodeRaw(nil, dt, src)
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}

// clampInt rounds v to the nearest integer within [lo, hi]; NaN becomes 0.
func clampInt(v float32, lo, hi float64) int64 {
	f := math.Round(float64(v))
	switch {
	case f != f:
		return 0
	case f <= lo:
		return int64(lo)
	case f >= hi:
		if hi >= math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(hi)
	}
	return int64(f)
}

// appendJSONValues appends src as JSON numbers of datatype dt, comma-separated. JSON has
// no NaN or infinity: those are written as null (binary outputs carry them exactly).
func appendJSONValues(dst []byte, dt string, src []float32) []byte {
	for i, v := range src {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dt != "FP32" {
			dst = strconv.AppendInt(dst, clampInt(v, math.MinInt64, math.MaxInt64), 10)
			continue
		}
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, "null"...)
			continue
		}
		dst = strconv.AppendFloat(dst, f, 'g', -1, 32)
	}
	return dst
}
