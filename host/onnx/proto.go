package onnx

// The ONNX messages are decoded by hand with protowire rather than through code generated
// from onnx.proto: we need a small part of a large schema, there is no generated code to
// keep in step with upstream, and every length, count and wire type is checked where it is
// read, so a damaged file becomes an error that says which message and field went wrong.
// Field numbers are those of onnx/onnx.proto (stable across ONNX releases).

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

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

// modelProto is ModelProto: the opset imports and the main graph. Functions and training
// information are not read.
type modelProto struct {
	irVersion int64
	opsets    []opsetID
	graph     *graphProto
}

type opsetID struct {
	domain  string
	version int64
}

type graphProto struct {
	name            string
	nodes           []nodeProto
	initializers    []tensorProto
	sparseInitCount int
	inputs          []valueInfo
	outputs         []valueInfo
	valueInfo       []valueInfo
}

type nodeProto struct {
	inputs  []string
	outputs []string
	name    string
	opType  string
	domain  string
	attrs   []attrProto
}

// ONNX AttributeProto.AttributeType values.
const (
	attrUndefined     = 0
	attrFloat         = 1
	attrInt           = 2
	attrString        = 3
	attrTensor        = 4
	attrGraph         = 5
	attrFloats        = 6
	attrInts          = 7
	attrStrings       = 8
	attrTensors       = 9
	attrGraphs        = 10
	attrSparseTensor  = 11
	attrSparseTensors = 12
	attrTypeProto     = 13
	attrTypeProtos    = 14
)

var attrTypeNames = map[int32]string{
	attrUndefined: "UNDEFINED", attrFloat: "FLOAT", attrInt: "INT", attrString: "STRING",
	attrTensor: "TENSOR", attrGraph: "GRAPH", attrFloats: "FLOATS", attrInts: "INTS",
	attrStrings: "STRINGS", attrTensors: "TENSORS", attrGraphs: "GRAPHS",
	attrSparseTensor: "SPARSE_TENSOR", attrSparseTensors: "SPARSE_TENSORS",
	attrTypeProto: "TYPE_PROTO", attrTypeProtos: "TYPE_PROTOS",
}

func attrTypeName(t int32) string {
	if s, ok := attrTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("attribute type %d", t)
}

// attrProto is AttributeProto. Kinds clhost cannot represent (graphs, sparse tensors, type
// protos, string and tensor lists) are only noted, so the importer can name them in an error.
type attrProto struct {
	name        string
	refAttrName string
	typ         int32
	f           float32
	i           int64
	s           []byte
	t           *tensorProto
	floats      []float32
	ints        []int64
	// present records, per AttributeType, that a field of that kind was seen; it lets the
	// importer infer the kind of attributes written by old exporters that left type unset.
	present map[int32]bool
}

// ONNX TensorProto.DataType values.
const (
	dtUndefined  = 0
	dtFloat      = 1
	dtUint8      = 2
	dtInt8       = 3
	dtUint16     = 4
	dtInt16      = 5
	dtInt32      = 6
	dtInt64      = 7
	dtString     = 8
	dtBool       = 9
	dtFloat16    = 10
	dtDouble     = 11
	dtUint32     = 12
	dtUint64     = 13
	dtComplex64  = 14
	dtComplex128 = 15
	dtBfloat16   = 16
)

var dataTypeNames = map[int32]string{
	dtUndefined: "UNDEFINED", dtFloat: "FLOAT", dtUint8: "UINT8", dtInt8: "INT8",
	dtUint16: "UINT16", dtInt16: "INT16", dtInt32: "INT32", dtInt64: "INT64",
	dtString: "STRING", dtBool: "BOOL", dtFloat16: "FLOAT16", dtDouble: "DOUBLE",
	dtUint32: "UINT32", dtUint64: "UINT64", dtComplex64: "COMPLEX64",
	dtComplex128: "COMPLEX128", dtBfloat16: "BFLOAT16", 17: "FLOAT8E4M3FN",
	18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4",
	23: "FLOAT4E2M1",
}

func dataTypeName(t int32) string {
	if s, ok := dataTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("data type %d", t)
}

// tensorProto is TensorProto with its data still in the form the file stores it.
type tensorProto struct {
	name        string
	dims        []int64
	dataType    int32
	floatData   []float32
	int32Data   []int32
	int64Data   []int64
	doubleData  []float64
	uint64Data  []uint64
	stringCount int
	rawData     []byte
	hasRaw      bool
	external    []stringPair
	location    int32 // 0 DEFAULT, 1 EXTERNAL
	segmented   bool
}

type stringPair struct{ key, value string }

// valueInfo is ValueInfoProto reduced to what shapes need. Only tensor types are read.
type valueInfo struct {
	name     string
	isTensor bool // a TypeProto.tensor_type was present
	elemType int32
	hasShape bool
	dims     []dim
}

// dim is TensorShapeProto.Dimension: a value, a symbolic name, or neither.
type dim struct {
	value    int64
	hasValue bool
	param    string
}

func decodeModel(b []byte) (*modelProto, error) {
	m := &modelProto{}
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			m.irVersion, err = f.int64("ir_version")
		case 8:
			var raw []byte
			if raw, err = f.bytes("opset_import"); err != nil {
				return err
			}
			var o opsetID
			if o, err = decodeOpset(raw); err != nil {
				return fmt.Errorf("opset_import %d: %w", len(m.opsets), err)
			}
			m.opsets = append(m.opsets, o)
		case 7:
			var raw []byte
			if raw, err = f.bytes("graph"); err != nil {
				return err
			}
			if m.graph != nil {
				// Protobuf merges repeated occurrences of a message field; a second
				// graph in one model is not something any exporter writes.
				return fmt.Errorf("more than one graph")
			}
			if m.graph, err = decodeGraph(raw); err != nil {
				return fmt.Errorf("graph: %w", err)
			}
		}
		return err
	})
	return m, err
}

func decodeOpset(b []byte) (opsetID, error) {
	var o opsetID
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			o.domain, err = f.str("domain")
		case 2:
			o.version, err = f.int64("version")
		}
		return err
	})
	return o, err
}

func decodeGraph(b []byte) (*graphProto, error) {
	g := &graphProto{}
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			var raw []byte
			if raw, err = f.bytes("node"); err != nil {
				return err
			}
			var n nodeProto
			if n, err = decodeNode(raw); err != nil {
				return fmt.Errorf("node %d: %w", len(g.nodes), err)
			}
			g.nodes = append(g.nodes, n)
		case 2:
			g.name, err = f.str("name")
		case 5:
			var raw []byte
			if raw, err = f.bytes("initializer"); err != nil {
				return err
			}
			var t tensorProto
			if t, err = decodeTensor(raw); err != nil {
				return fmt.Errorf("initializer %d: %w", len(g.initializers), err)
			}
			g.initializers = append(g.initializers, t)
		case 15:
			if err = f.want(protowire.BytesType, "sparse_initializer"); err == nil {
				g.sparseInitCount++
			}
		case 11, 12, 13:
			what := map[protowire.Number]string{11: "input", 12: "output", 13: "value_info"}[f.num]
			var raw []byte
			if raw, err = f.bytes(what); err != nil {
				return err
			}
			dst := map[protowire.Number]*[]valueInfo{11: &g.inputs, 12: &g.outputs, 13: &g.valueInfo}[f.num]
			var v valueInfo
			if v, err = decodeValueInfo(raw); err != nil {
				return fmt.Errorf("%s %d: %w", what, len(*dst), err)
			}
			*dst = append(*dst, v)
		}
		return err
	})
	return g, err
}

func decodeNode(b []byte) (nodeProto, error) {
	var n nodeProto
	err := walk(b, func(f field) error {
		var err error
		var s string
		switch f.num {
		case 1:
			if s, err = f.str("input"); err == nil {
				n.inputs = append(n.inputs, s)
			}
		case 2:
			if s, err = f.str("output"); err == nil {
				n.outputs = append(n.outputs, s)
			}
		case 3:
			n.name, err = f.str("name")
		case 4:
			n.opType, err = f.str("op_type")
		case 7:
			n.domain, err = f.str("domain")
		case 5:
			var raw []byte
			if raw, err = f.bytes("attribute"); err != nil {
				return err
			}
			var a attrProto
			if a, err = decodeAttr(raw); err != nil {
				return fmt.Errorf("attribute %d: %w", len(n.attrs), err)
			}
			n.attrs = append(n.attrs, a)
		}
		return err
	})
	return n, err
}

func decodeAttr(b []byte) (attrProto, error) {
	a := attrProto{present: map[int32]bool{}}
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			a.name, err = f.str("name")
		case 21:
			a.refAttrName, err = f.str("ref_attr_name")
		case 20:
			a.typ, err = f.int32("type")
		case 2:
			a.f, err = f.float32("f")
			a.present[attrFloat] = true
		case 3:
			a.i, err = f.int64("i")
			a.present[attrInt] = true
		case 4:
			a.s, err = f.bytes("s")
			a.present[attrString] = true
		case 5:
			var raw []byte
			if raw, err = f.bytes("t"); err != nil {
				return err
			}
			var t tensorProto
			if t, err = decodeTensor(raw); err != nil {
				return fmt.Errorf("t: %w", err)
			}
			a.t = &t
			a.present[attrTensor] = true
		case 7:
			a.floats, err = f.appendFloat32s(a.floats, "floats")
			a.present[attrFloats] = true
		case 8:
			a.ints, err = f.appendInt64s(a.ints, "ints")
			a.present[attrInts] = true
		default:
			// Kinds clhost has no attribute form for: decoded no further, only noted.
			kinds := map[protowire.Number]int32{
				6: attrGraph, 22: attrSparseTensor, 14: attrTypeProto, 9: attrStrings,
				10: attrTensors, 11: attrGraphs, 23: attrSparseTensors, 15: attrTypeProtos,
			}
			if k, ok := kinds[f.num]; ok {
				a.present[k] = true
			}
		}
		return err
	})
	return a, err
}

func decodeTensor(b []byte) (tensorProto, error) {
	var t tensorProto
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			t.dims, err = f.appendInt64s(t.dims, "dims")
		case 2:
			t.dataType, err = f.int32("data_type")
		case 3:
			t.segmented = true
		case 4:
			t.floatData, err = f.appendFloat32s(t.floatData, "float_data")
		case 5:
			t.int32Data, err = f.appendInt32s(t.int32Data, "int32_data")
		case 6:
			if err = f.want(protowire.BytesType, "string_data"); err == nil {
				t.stringCount++
			}
		case 7:
			t.int64Data, err = f.appendInt64s(t.int64Data, "int64_data")
		case 8:
			t.name, err = f.str("name")
		case 9:
			t.rawData, err = f.bytes("raw_data")
			t.hasRaw = true
		case 10:
			t.doubleData, err = f.appendFloat64s(t.doubleData, "double_data")
		case 11:
			var vs []uint64
			if vs, err = f.appendVarints(nil, "uint64_data"); err == nil {
				t.uint64Data = append(t.uint64Data, vs...)
			}
		case 13:
			var raw []byte
			if raw, err = f.bytes("external_data"); err != nil {
				return err
			}
			var p stringPair
			if p, err = decodeStringPair(raw); err != nil {
				return fmt.Errorf("external_data %d: %w", len(t.external), err)
			}
			t.external = append(t.external, p)
		case 14:
			t.location, err = f.int32("data_location")
		}
		return err
	})
	return t, err
}

func decodeStringPair(b []byte) (stringPair, error) {
	var p stringPair
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			p.key, err = f.str("key")
		case 2:
			p.value, err = f.str("value")
		}
		return err
	})
	return p, err
}

func decodeValueInfo(b []byte) (valueInfo, error) {
	var v valueInfo
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			v.name, err = f.str("name")
		case 2:
			var raw []byte
			if raw, err = f.bytes("type"); err != nil {
				return err
			}
			if err = decodeType(raw, &v); err != nil {
				return fmt.Errorf("type: %w", err)
			}
		}
		return err
	})
	return v, err
}

// decodeType reads TypeProto's tensor_type; sequences, maps and optionals are left
// undecoded, and the importer refuses them because isTensor stays false.
func decodeType(b []byte, v *valueInfo) error {
	return walk(b, func(f field) error {
		if f.num != 1 {
			return nil
		}
		raw, err := f.bytes("tensor_type")
		if err != nil {
			return err
		}
		v.isTensor = true
		return walk(raw, func(f field) error {
			var err error
			switch f.num {
			case 1:
				v.elemType, err = f.int32("elem_type")
			case 2:
				var raw []byte
				if raw, err = f.bytes("shape"); err != nil {
					return err
				}
				v.hasShape = true
				v.dims = v.dims[:0]
				err = walk(raw, func(f field) error {
					if f.num != 1 {
						return nil
					}
					raw, err := f.bytes("dim")
					if err != nil {
						return err
					}
					d, err := decodeDim(raw)
					if err != nil {
						return fmt.Errorf("dim %d: %w", len(v.dims), err)
					}
					v.dims = append(v.dims, d)
					return nil
				})
				if err != nil {
					err = fmt.Errorf("shape: %w", err)
				}
			}
			return err
		})
	})
}

func decodeDim(b []byte) (dim, error) {
	var d dim
	err := walk(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			d.value, err = f.int64("dim_value")
			d.hasValue = true
		case 2:
			d.param, err = f.str("dim_param")
		}
		return err
	})
	return d, err
}
