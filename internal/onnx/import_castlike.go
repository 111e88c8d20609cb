package onnx

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

// castLike turns a CastLike node into the Cast it means: Cast to the element type of its
// second input. Only that input's ONNX type matters, not its values, and clhost's own
// types (model.DataType) merge several ONNX types (int16 into int32, double into float),
// so the type is read from the file: a graph input, an initializer, a value_info, a graph
// output, a Constant node or the `to` of a Cast node.
func (im *importer) castLike(desc string, l *model.Layer) error {
	if len(l.Inputs) != 2 {
		return fmt.Errorf("%s needs 2 inputs (input, like), has %d", desc, len(l.Inputs))
	}
	to, ok := im.onnxElemType(l.Inputs[1])
	if !ok {
		return fmt.Errorf("%s: the element type of %q (like) is not declared in the file; give it a value_info", desc, l.Inputs[1])
	}
	if _, err := modelType(to); err != nil {
		return fmt.Errorf("%s: like %q: %w", desc, l.Inputs[1], err)
	}
	l.Type = "Cast"
	l.Inputs = l.Inputs[:1]
	l.Attrs = append(l.Attrs, model.Attr{Name: "to", Kind: model.AttrInt, Int: int64(to)})
	return nil
}

// onnxElemType is the ONNX element type (TensorProto.DataType) the file gives tensor name.
func (im *importer) onnxElemType(name string) (int32, bool) {
	for _, vs := range [][]valueInfo{im.g.inputs, im.g.valueInfo, im.g.outputs} {
		for i := range vs {
			if vs[i].name == name && vs[i].isTensor && vs[i].elemType != 0 {
				return vs[i].elemType, true
			}
		}
	}
	for i := range im.g.initializers {
		if im.g.initializers[i].name == name {
			return im.g.initializers[i].dataType, true
		}
	}
	for i := range im.g.nodes {
		n := &im.g.nodes[i]
		if len(n.outputs) == 0 || n.outputs[0] != name || !defaultDomain(n.domain) {
			continue
		}
		for k := range n.attrs {
			a := &n.attrs[k]
			switch {
			case n.opType == "Cast" && a.name == "to":
				return int32(a.i), true
			case n.opType == "Constant" && a.name == "value" && a.t != nil:
				return a.t.dataType, true
			case n.opType == "Constant" && (a.name == "value_float" || a.name == "value_floats"):
				return dtFloat, true
			case n.opType == "Constant" && (a.name == "value_int" || a.name == "value_ints"):
				return dtInt64, true
			}
		}
	}
	return 0, false
}
