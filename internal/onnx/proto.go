package onnx

// The ONNX messages are decoded by hand with protowire rather than through code generated
// from onnx.proto: we need a small part of a large schema, there is no generated code to
// keep in step with upstream, and every length, count and wire type is checked where it is
// read, so a damaged file becomes an error that says which message and field went wrong.
// Field numbers are those of onnx/onnx.proto (stable across ONNX releases).

import "fmt"

// The messages clhost reads, as Go types; proto_wire.go reads fields off the wire and
// proto_decode.go fills these types from them.

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
