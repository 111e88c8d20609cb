package host

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// pb writes protobuf messages field by field: small hand-made ONNX models for tests whose
// nodes carry what the ONNX helpers would refuse to write (attributes of no operator).
type pb []byte

func (b pb) bytes(num protowire.Number, v []byte) pb {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func (b pb) str(num protowire.Number, s string) pb { return b.bytes(num, []byte(s)) }

func (b pb) varint(num protowire.Number, v uint64) pb {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (b pb) fixed32(num protowire.Number, v uint32) pb {
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// ONNX's element type and attribute type codes used here.
const (
	onnxFloat      = 1
	onnxInt64      = 7
	onnxAttrFloat  = 1
	onnxAttrInt    = 2
	onnxAttrString = 3
	onnxAttrInts   = 7
)

// onnxValue declares a float tensor of a fixed shape (a ValueInfoProto).
func onnxValue(name string, dims ...int) pb {
	shape := pb{}
	for _, d := range dims {
		shape = shape.bytes(1, pb{}.varint(1, uint64(d)))
	}
	tt := pb{}.varint(1, onnxFloat).bytes(2, shape)
	return pb{}.str(1, name).bytes(2, pb{}.bytes(1, tt))
}

// onnxConst is an initializer: float32 values, or int64 ones when ints is set.
func onnxConst(name string, dims []int, floats []float32, ints []int64) pb {
	t := pb{}
	for _, d := range dims {
		t = t.varint(1, uint64(d))
	}
	var raw []byte
	if ints != nil {
		t = t.varint(2, onnxInt64)
		for _, v := range ints {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
	} else {
		t = t.varint(2, onnxFloat)
		for _, v := range floats {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	return t.str(8, name).bytes(9, raw)
}

func onnxAttrF(name string, v float32) pb {
	return pb{}.str(1, name).varint(20, onnxAttrFloat).fixed32(2, math.Float32bits(v))
}

func onnxAttrI(name string, v int64) pb {
	return pb{}.str(1, name).varint(20, onnxAttrInt).varint(3, uint64(v))
}

func onnxAttrS(name, v string) pb {
	return pb{}.str(1, name).varint(20, onnxAttrString).str(4, v)
}

func onnxAttrIs(name string, vs ...int64) pb {
	b := pb{}.str(1, name).varint(20, onnxAttrInts)
	for _, v := range vs {
		b = b.varint(8, uint64(v))
	}
	return b
}

// onnxNode is a NodeProto of a domain ("" for the default one).
func onnxNode(op, domain, name string, ins, outs []string, attrs ...pb) pb {
	b := pb{}
	for _, in := range ins {
		b = b.str(1, in)
	}
	for _, o := range outs {
		b = b.str(2, o)
	}
	b = b.str(3, name).str(4, op)
	for _, a := range attrs {
		b = b.bytes(5, a)
	}
	if domain != "" {
		b = b.str(7, domain)
	}
	return b
}

// onnxGraphModel wraps a graph's fields into a ModelProto importing the default domain
// at opset 13, and domain at version 1 when it is not "".
func onnxGraphModel(graph pb, domain string) []byte {
	m := pb{}.varint(1, 7).bytes(7, graph).bytes(8, pb{}.str(1, "").varint(2, 13))
	if domain != "" {
		m = m.bytes(8, pb{}.str(1, domain).varint(2, 1))
	}
	return m
}
