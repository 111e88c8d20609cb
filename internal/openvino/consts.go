package openvino

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clhost/clhost/model"
)

// Constants: reading a Const from the .bin, and the small array type the load-time
// folding computes with.

// elemType is an IR element type: its size in bytes and the type clhost keeps it as.
// Floating-point constants are kept as float32 (every activation is float32, and f16 and
// bf16 weights are decompressed when read), boolean as uint8.
type elemType struct {
	size int
	keep model.DataType
}

var elemTypes = map[string]elemType{
	"f32": {4, model.Float32}, "f16": {2, model.Float32}, "bf16": {2, model.Float32},
	"f64": {8, model.Float32},
	"i64": {8, model.Int64}, "i32": {4, model.Int32}, "i8": {1, model.Int8},
	"u8": {1, model.Uint8}, "boolean": {1, model.Uint8},
	"u64": {8, model.Int64}, "u32": {4, model.Int64}, "i16": {2, model.Int32}, "u16": {2, model.Int32},
}

// precisions maps a port's precision attribute to the element type it names.
var precisions = map[string]string{
	"FP32": "f32", "FP16": "f16", "BF16": "bf16", "FP64": "f64", "I64": "i64", "I32": "i32",
	"I8": "i8", "U8": "u8", "BOOL": "boolean", "U64": "u64", "U32": "u32", "I16": "i16", "U16": "u16",
}

// checkPrecisions refuses a port precision clhost does not know.
func checkPrecisions(l *xmlLayer) error {
	for _, ports := range [][]xmlPort{l.Inputs, l.Outputs} {
		for _, p := range ports {
			if p.Precision == "" {
				continue
			}
			if _, ok := precisions[strings.ToUpper(p.Precision)]; !ok {
				return fmt.Errorf("port %d: unknown precision %q", p.id, p.Precision)
			}
		}
	}
	return nil
}

// parseList reads a list attribute, written "2,2" or "2, 2"; "" is the empty list.
func parseList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// readConst reads a Const layer's data from the .bin.
func (r *reader) readConst(l *xmlLayer, name string) (*model.Tensor, error) {
	et := l.data["element_type"]
	typ, ok := elemTypes[et]
	if !ok {
		return nil, fmt.Errorf("unknown element_type %q", et)
	}
	var shape []int
	for _, s := range parseList(l.data["shape"]) {
		d, err := strconv.Atoi(s)
		if err != nil || d < 0 || d > maxDim {
			return nil, fmt.Errorf("shape %q: %q is not a size", l.data["shape"], s)
		}
		shape = append(shape, d)
	}
	if shape == nil {
		shape = []int{}
	}
	if len(l.Outputs) == 1 && !dimsAgree(l.Outputs[0].dims, shape) {
		return nil, fmt.Errorf("shape %v differs from the dims %s of its output port", shape, dimsString(l.Outputs[0].dims))
	}
	off, err1 := strconv.ParseInt(strings.TrimSpace(l.data["offset"]), 10, 64)
	size, err2 := strconv.ParseInt(strings.TrimSpace(l.data["size"]), 10, 64)
	if err1 != nil || err2 != nil || off < 0 || size < 0 {
		return nil, fmt.Errorf("offset %q and size %q must be byte counts", l.data["offset"], l.data["size"])
	}
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
		if n > 1<<40 {
			return nil, fmt.Errorf("shape %v is too large", shape)
		}
	}
	if n*int64(typ.size) != size {
		return nil, fmt.Errorf("size %d does not hold %d elements of %s (%d bytes)", size, n, et, n*int64(typ.size))
	}
	// Compared without off+size, which a huge offset overflows.
	if size > int64(len(r.bin)) || off > int64(len(r.bin))-size {
		return nil, fmt.Errorf("the data (offset %d, size %d) lies past the end of the weights file (%d bytes): is the .bin the one written with this .xml?", off, size, len(r.bin))
	}
	raw := r.bin[off : off+size]
	t := model.Tensor{Name: name, Type: typ.keep, Shape: shape}
	le := binary.LittleEndian
	switch et {
	case "f32", "i64", "i32", "i8", "u8":
		// The tensor reads the .bin in place: weights are not copied.
		t.Data = raw[:len(raw):len(raw)]
	case "boolean":
		t.Data = make([]byte, len(raw))
		for i, b := range raw {
			if b != 0 {
				t.Data[i] = 1
			}
		}
	case "f16", "bf16":
		t.Data = make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			h := le.Uint16(raw[2*i:])
			var f float32
			if et == "f16" {
				f = model.HalfToFloat32(h)
			} else {
				f = math.Float32frombits(uint32(h) << 16)
			}
			le.PutUint32(t.Data[4*i:], math.Float32bits(f))
		}
	default:
		a := arr{shape: shape, v: make([]float64, n), isInt: typ.keep.IsInteger()}
		for i := int64(0); i < n; i++ {
			switch et {
			case "f64":
				a.v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
			case "u64":
				a.v[i] = float64(le.Uint64(raw[8*i:]))
			case "u32":
				a.v[i] = float64(le.Uint32(raw[4*i:]))
			case "i16":
				a.v[i] = float64(int16(le.Uint16(raw[2*i:])))
			case "u16":
				a.v[i] = float64(le.Uint16(raw[2*i:]))
			}
		}
		t = a.tensor(name, typ.keep)
	}
	return &t, nil
}

// arr is a constant's values as numbers, for the arithmetic done at load time (shapes,
// axes, small constant subgraphs). isInt keeps integer semantics (truncating division).
type arr struct {
	shape []int
	v     []float64
	isInt bool
}

func toArr(t *model.Tensor) arr {
	a := arr{shape: append([]int{}, t.Shape...), isInt: t.Type.IsInteger()}
	n := t.Elements()
	if len(t.Data) < n*t.Type.Size() {
		n = len(t.Data) / max(1, t.Type.Size())
	}
	a.v = make([]float64, n)
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		switch t.Type {
		case model.Float32:
			a.v[i] = float64(math.Float32frombits(le.Uint32(t.Data[4*i:])))
		case model.Float16:
			a.v[i] = float64(model.HalfToFloat32(le.Uint16(t.Data[2*i:])))
		case model.Int64:
			a.v[i] = float64(int64(le.Uint64(t.Data[8*i:])))
		case model.Int32:
			a.v[i] = float64(int32(le.Uint32(t.Data[4*i:])))
		case model.Int8:
			a.v[i] = float64(int8(t.Data[i]))
		case model.Uint8:
			a.v[i] = float64(t.Data[i])
		}
	}
	return a
}

// tensor writes the values as a tensor of type dt.
func (a arr) tensor(name string, dt model.DataType) model.Tensor {
	t := model.Tensor{Name: name, Type: dt, Shape: append([]int{}, a.shape...)}
	le := binary.LittleEndian
	t.Data = make([]byte, 0, len(a.v)*dt.Size())
	for _, v := range a.v {
		switch dt {
		case model.Float32:
			t.Data = le.AppendUint32(t.Data, math.Float32bits(float32(v)))
		case model.Int64:
			t.Data = le.AppendUint64(t.Data, uint64(int64(v)))
		case model.Int32:
			t.Data = le.AppendUint32(t.Data, uint32(int32(v)))
		case model.Int8, model.Uint8:
			t.Data = append(t.Data, byte(int64(v)))
		}
	}
	return t
}

func (a arr) ints() []int64 {
	out := make([]int64, len(a.v))
	for i, v := range a.v {
		out[i] = int64(v)
	}
	return out
}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func strides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// broadcast applies f element-wise with numpy broadcasting.
func broadcast(a, b arr, f func(x, y float64) float64) (arr, error) {
	rank := max(len(a.shape), len(b.shape))
	pad := func(s []int) []int {
		out := make([]int, rank)
		for i := range out {
			out[i] = 1
		}
		copy(out[rank-len(s):], s)
		return out
	}
	as, bs := pad(a.shape), pad(b.shape)
	shape := make([]int, rank)
	for i := range shape {
		switch {
		case as[i] == bs[i], bs[i] == 1:
			shape[i] = as[i]
		case as[i] == 1:
			shape[i] = bs[i]
		default:
			return arr{}, fmt.Errorf("shapes %v and %v do not broadcast", a.shape, b.shape)
		}
	}
	n := elements(shape)
	if n > maxFold {
		return arr{}, fmt.Errorf("a constant of %d elements is too large to compute at load", n)
	}
	out := arr{shape: shape, v: make([]float64, n), isInt: a.isInt && b.isInt}
	st, sa, sb := strides(shape), strides(as), strides(bs)
	for i := 0; i < n; i++ {
		ia, ib, rem := 0, 0, i
		for d := 0; d < rank; d++ {
			x := rem / st[d]
			rem %= st[d]
			if as[d] != 1 {
				ia += x * sa[d]
			}
			if bs[d] != 1 {
				ib += x * sb[d]
			}
		}
		out.v[i] = f(a.v[ia], b.v[ib])
	}
	return out, nil
}

// maxDim bounds every dim the reader takes, so that no product of dims overflows.
const maxDim = 1 << 31

// maxFold bounds the constants computed element by element at load time.
const maxFold = 1 << 24

// gather takes indices along axis.
func gather(a arr, idx arr, axis int) (arr, error) {
	if axis < 0 || axis >= len(a.shape) {
		return arr{}, fmt.Errorf("axis %d is outside the data's rank %d", axis, len(a.shape))
	}
	outer := elements(a.shape[:axis])
	inner := elements(a.shape[axis+1:])
	dim := a.shape[axis]
	shape := append(append(append([]int{}, a.shape[:axis]...), idx.shape...), a.shape[axis+1:]...)
	out := arr{shape: shape, isInt: a.isInt}
	if inner == 0 || len(idx.v) == 0 || outer == 0 {
		return out, nil
	}
	for o := 0; o < outer; o++ {
		for _, iv := range idx.v {
			k := int(iv)
			if k < 0 {
				k += dim
			}
			if k < 0 || k >= dim {
				return arr{}, fmt.Errorf("index %d is out of range for a dimension of %d", int(iv), dim)
			}
			base := (o*dim + k) * inner
			out.v = append(out.v, a.v[base:base+inner]...)
		}
	}
	return out, nil
}

// transpose permutes the axes.
func transpose(a arr, perm []int) arr {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = a.shape[p]
	}
	n := elements(shape)
	out := arr{shape: shape, v: make([]float64, n), isInt: a.isInt}
	src, dst := strides(a.shape), strides(shape)
	for i := 0; i < n; i++ {
		off, rem := 0, i
		for d := range shape {
			x := rem / dst[d]
			rem %= dst[d]
			off += x * src[perm[d]]
		}
		out.v[i] = a.v[off]
	}
	return out
}

// slice takes begin:end:step per axis (normalized, one entry per axis).
func slice(a arr, begin, end, step []int) arr {
	shape := make([]int, len(a.shape))
	for d := range shape {
		shape[d] = sliceLen(begin[d], end[d], step[d])
	}
	n := elements(shape)
	out := arr{shape: shape, v: make([]float64, n), isInt: a.isInt}
	src, dst := strides(a.shape), strides(shape)
	for i := 0; i < n; i++ {
		off, rem := 0, i
		for d := range shape {
			x := rem / dst[d]
			rem %= dst[d]
			off += (begin[d] + x*step[d]) * src[d]
		}
		out.v[i] = a.v[off]
	}
	return out
}

func sliceLen(b, e, s int) int {
	if s > 0 && e > b {
		return (e - b + s - 1) / s
	}
	if s < 0 && b > e {
		return (b - e - s - 1) / -s
	}
	return 0
}

func concatArrs(parts []arr, axis int) (arr, error) {
	first := parts[0].shape
	if axis < 0 || axis >= len(first) {
		return arr{}, fmt.Errorf("axis %d is outside rank %d", axis, len(first))
	}
	shape := append([]int{}, first...)
	shape[axis] = 0
	isInt := true
	for _, p := range parts {
		if len(p.shape) != len(first) {
			return arr{}, fmt.Errorf("inputs of ranks %d and %d", len(first), len(p.shape))
		}
		shape[axis] += p.shape[axis]
		isInt = isInt && p.isInt
	}
	out := arr{shape: shape, isInt: isInt}
	if elements(shape) == 0 {
		return out, nil
	}
	outer := elements(first[:axis])
	for o := 0; o < outer; o++ {
		for _, p := range parts {
			inner := elements(p.shape[axis:])
			out.v = append(out.v, p.v[o*inner:(o+1)*inner]...)
		}
	}
	return out, nil
}
