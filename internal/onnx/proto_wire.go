package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf wire format: walking a message's fields and reading scalars, packed or not.

// field is one decoded field of a message: u holds varint and fixed-width values, b the
// payload of length-delimited ones.
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

var wireNames = map[protowire.Type]string{
	protowire.VarintType:     "varint",
	protowire.Fixed32Type:    "fixed32",
	protowire.Fixed64Type:    "fixed64",
	protowire.BytesType:      "bytes",
	protowire.StartGroupType: "group",
	protowire.EndGroupType:   "end-group",
}

func wireName(t protowire.Type) string {
	if s, ok := wireNames[t]; ok {
		return s
	}
	return fmt.Sprintf("wire type %d", t)
}

// walk calls fn for every field of the message in b, in file order. Fields of kinds we do
// not read (groups) are skipped by protowire, which bounds its own recursion.
func walk(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.u = uint64(v)
		case protowire.Fixed64Type:
			f.u, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (f field) want(t protowire.Type, name string) error {
	if f.typ != t {
		return fmt.Errorf("field %d (%s) has %s encoding, want %s", f.num, name, wireName(f.typ), wireName(t))
	}
	return nil
}

func (f field) str(name string) (string, error) {
	if err := f.want(protowire.BytesType, name); err != nil {
		return "", err
	}
	return string(f.b), nil
}

func (f field) bytes(name string) ([]byte, error) {
	if err := f.want(protowire.BytesType, name); err != nil {
		return nil, err
	}
	return f.b, nil
}

func (f field) int64(name string) (int64, error) {
	if err := f.want(protowire.VarintType, name); err != nil {
		return 0, err
	}
	return int64(f.u), nil
}

// int32 reads an int32 or enum field. Protobuf writes negative int32 values as 64-bit
// varints, so a value outside the int32 range means a damaged file.
func (f field) int32(name string) (int32, error) {
	v, err := f.int64(name)
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("field %d (%s): %d does not fit in int32", f.num, name, v)
	}
	return int32(v), nil
}

func (f field) float32(name string) (float32, error) {
	if err := f.want(protowire.Fixed32Type, name); err != nil {
		return 0, err
	}
	return math.Float32frombits(uint32(f.u)), nil
}

// Repeated scalars may arrive packed (one length-delimited field) or unpacked (one field
// per value): onnx.proto is proto2 and marks only some of its lists packed, and writers
// differ, so both forms are accepted everywhere.

func (f field) appendVarints(dst []uint64, name string) ([]uint64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, f.u), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("field %d (%s): packed value: %w", f.num, name, protowire.ParseError(n))
			}
			dst = append(dst, v)
			b = b[n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("field %d (%s) has %s encoding, want varint or packed", f.num, name, wireName(f.typ))
}

func (f field) appendInt64s(dst []int64, name string) ([]int64, error) {
	vs, err := f.appendVarints(nil, name)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		dst = append(dst, int64(v))
	}
	return dst, nil
}

func (f field) appendInt32s(dst []int32, name string) ([]int32, error) {
	vs, err := f.appendVarints(nil, name)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		s := int64(v)
		if s < math.MinInt32 || s > math.MaxInt32 {
			return nil, fmt.Errorf("field %d (%s): %d does not fit in int32", f.num, name, s)
		}
		dst = append(dst, int32(s))
	}
	return dst, nil
}

func (f field) appendFixed(size int, name string, add func(b []byte)) error {
	switch {
	case f.typ == protowire.BytesType:
		if len(f.b)%size != 0 {
			return fmt.Errorf("field %d (%s): packed length %d is not a multiple of %d", f.num, name, len(f.b), size)
		}
		for i := 0; i < len(f.b); i += size {
			add(f.b[i : i+size])
		}
		return nil
	case size == 4 && f.typ == protowire.Fixed32Type:
		add(binary.LittleEndian.AppendUint32(nil, uint32(f.u)))
		return nil
	case size == 8 && f.typ == protowire.Fixed64Type:
		add(binary.LittleEndian.AppendUint64(nil, f.u))
		return nil
	}
	return fmt.Errorf("field %d (%s) has %s encoding, want fixed%d or packed", f.num, name, wireName(f.typ), size*8)
}

func (f field) appendFloat32s(dst []float32, name string) ([]float32, error) {
	err := f.appendFixed(4, name, func(b []byte) {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b)))
	})
	return dst, err
}

func (f field) appendFloat64s(dst []float64, name string) ([]float64, error) {
	err := f.appendFixed(8, name, func(b []byte) {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)))
	})
	return dst, err
}
