package onnx

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Decoding each ONNX message field by field into the types of proto.go.

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
