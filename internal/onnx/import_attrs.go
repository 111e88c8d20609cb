package onnx

import (
	"errors"
	"fmt"

	"github.com/clhost/clhost/model"
)

// convertAttr maps an ONNX attribute onto a typed layer attribute.
func convertAttr(a *attrProto) (model.Attr, error) {
	out := model.Attr{Name: a.name}
	if a.name == "" {
		return out, errors.New("attribute has no name")
	}
	if a.refAttrName != "" {
		return out, fmt.Errorf("refers to function attribute %q, which only function bodies may", a.refAttrName)
	}
	typ := a.typ
	if typ == attrUndefined {
		// Old exporters left the type out; the one field that is set tells it.
		if len(a.present) != 1 {
			return out, errors.New("attribute has no type")
		}
		for k := range a.present {
			typ = k
		}
	}
	switch typ {
	case attrFloat:
		out.Kind, out.Float = model.AttrFloat, a.f
	case attrInt:
		out.Kind, out.Int = model.AttrInt, a.i
	case attrString:
		out.Kind, out.Str = model.AttrString, string(a.s)
	case attrFloats:
		out.Kind, out.Floats = model.AttrFloats, append([]float32{}, a.floats...)
	case attrInts:
		out.Kind, out.Ints = model.AttrInts, append([]int64{}, a.ints...)
	case attrTensor:
		// Outside Constant a tensor attribute (ConstantOfShape's value, for one) is
		// kept as a flat list of its values; the operator knows its shape.
		if a.t == nil {
			return out, errors.New("TENSOR attribute holds no tensor")
		}
		t, err := convertTensor(a.t, nil)
		if err != nil {
			return out, err
		}
		if out.Floats, out.Ints, err = tensorValues(&t); err != nil {
			return out, err
		}
		out.Kind = model.AttrInts
		if out.Floats != nil {
			out.Kind = model.AttrFloats
		}
	default:
		return out, fmt.Errorf("type %s cannot be a clhost layer attribute (int, float, string, their lists and tensors can)", attrTypeName(typ))
	}
	return out, nil
}
