package onnx

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// pb builds protobuf messages field by field, for hand-made ONNX files in tests: cases
// onnx.helper would refuse to write (wrong wire types, bad sizes) and small edge cases.
type pb []byte

func (b pb) bytes(num protowire.Number, v []byte) pb {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func (b pb) str(num protowire.Number, s string) pb { return b.bytes(num, []byte(s)) }

func (b pb) msg(num protowire.Number, m pb) pb { return b.bytes(num, m) }

func (b pb) varint(num protowire.Number, v uint64) pb {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (b pb) fixed32(num protowire.Number, v uint32) pb {
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// onnxModel wraps a graph into a ModelProto importing the default domain at opset.
func onnxModel(opset int64, graph pb) pb {
	return pb{}.varint(1, 7).msg(7, graph).msg(8, pb{}.str(1, "").varint(2, uint64(opset)))
}

// vinfo is a tensor ValueInfoProto; dims are int (dim_value) or string (dim_param). With
// no dims it declares no shape at all (see vscalar for a rank-0 shape).
func vinfo(name string, elem int, dims ...any) pb {
	if len(dims) == 0 {
		return pb{}.str(1, name).msg(2, pb{}.msg(1, pb{}.varint(1, uint64(elem))))
	}
	return vshape(name, elem, dims)
}

// vscalar declares a rank-0 tensor.
func vscalar(name string, elem int) pb { return vshape(name, elem, nil) }

func vshape(name string, elem int, dims []any) pb {
	shape := pb{}
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			shape = shape.msg(1, pb{}.varint(1, uint64(int64(d))))
		case string:
			shape = shape.msg(1, pb{}.str(2, d))
		}
	}
	tt := pb{}.varint(1, uint64(elem)).msg(2, shape)
	return pb{}.str(1, name).msg(2, pb{}.msg(1, tt))
}

// node is a NodeProto; attrs are ready-made AttributeProto messages.
func node(op, name string, ins, outs []string, attrs ...pb) pb {
	b := pb{}
	for _, in := range ins {
		b = b.str(1, in)
	}
	for _, o := range outs {
		b = b.str(2, o)
	}
	b = b.str(3, name).str(4, op)
	for _, a := range attrs {
		b = b.msg(5, a)
	}
	return b
}

func intAttr(name string, v int64) pb {
	return pb{}.str(1, name).varint(20, attrInt).varint(3, uint64(v))
}

// relu1 is a graph x[1,2] → Relu → y, the smallest valid model, to vary in tests.
func relu1(extra ...func(g pb) pb) pb {
	g := pb{}.msg(1, node("Relu", "relu", []string{"x"}, []string{"y"})).
		str(2, "g").
		msg(11, vinfo("x", dtFloat, 1, 2)).
		msg(12, vinfo("y", dtFloat, 1, 2))
	for _, f := range extra {
		g = f(g)
	}
	return g
}
