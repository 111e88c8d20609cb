package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/clhost/clhost/model"
)

// One NodeProto at a time: a Constant becomes a constant, an Identity or Dropout an alias
// of its input, every other node a layer.

// node imports one NodeProto: a constant, an alias, or a layer.
func (im *importer) node(i int, n *nodeProto) error {
	desc := nodeDesc(i, n)
	if n.opType == "" {
		return fmt.Errorf("%s has no op_type", desc)
	}
	if defaultDomain(n.domain) && !im.isCustomType(n.opType) {
		switch n.opType {
		case "Constant":
			return im.constantNode(desc, n)
		case "Identity", "Dropout":
			if len(n.inputs) < 1 || n.inputs[0] == "" || len(n.outputs) < 1 || n.outputs[0] == "" {
				return fmt.Errorf("%s needs an input and an output", desc)
			}
			// The mask of a Dropout is all true at inference; a graph that reads it
			// gets it computed from the input's shape.
			maskRead := n.opType == "Dropout" && len(n.outputs) > 1 && n.outputs[1] != "" && im.read[n.outputs[1]]
			if len(n.outputs) > 2 || (n.opType == "Identity" && len(n.outputs) > 1) {
				return fmt.Errorf("%s has %d outputs", desc, len(n.outputs))
			}
			if n.opType == "Dropout" && len(n.inputs) > 2 && n.inputs[2] != "" {
				if err := im.dropoutInference(n.inputs[1], n.inputs[2]); err != nil {
					return fmt.Errorf("%s: %w", desc, err)
				}
			}
			if maskRead {
				return im.dropoutMask(desc, n)
			}
			if err := im.produce(n.outputs[0], desc); err != nil {
				return err
			}
			im.alias[n.outputs[0]] = n.inputs[0]
			im.aliasNode[n.outputs[0]] = n.name
			return nil
		}
	}
	name := n.name
	if name == "" {
		name = n.opType + "_" + strconv.Itoa(i)
	}
	base := name
	for k := 2; im.names[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	im.names[name] = true
	l := model.Layer{Name: name, Type: n.opType}
	l.Inputs = append([]string{}, trimEmpty(n.inputs)...)
	l.Outputs = append([]string{}, trimEmpty(n.outputs)...)
	if len(l.Outputs) == 0 {
		return fmt.Errorf("%s has no outputs", desc)
	}
	for k, o := range l.Outputs {
		if o == "" {
			return fmt.Errorf("%s: output %d has no name but a later output has; clhost layers cannot skip outputs", desc, k)
		}
		if err := im.produce(o, desc); err != nil {
			return err
		}
		im.layerOf[o] = len(im.layers)
	}
	seen := map[string]bool{}
	for k := range n.attrs {
		a := &n.attrs[k]
		if seen[a.name] {
			return fmt.Errorf("%s: attribute %q appears twice", desc, a.name)
		}
		seen[a.name] = true
		attr, err := convertAttr(a)
		if err != nil {
			return fmt.Errorf("%s: attribute %q: %w", desc, a.name, err)
		}
		l.Attrs = append(l.Attrs, attr)
	}
	if !defaultDomain(n.domain) {
		if seen["domain"] {
			return fmt.Errorf("%s: has an attribute named \"domain\", which clhost uses for the operator's domain %q", desc, n.domain)
		}
		l.Attrs = append(l.Attrs, model.Attr{Name: "domain", Kind: model.AttrString, Str: n.domain})
	}
	if defaultDomain(n.domain) && n.opType == "CastLike" && !im.isCustomType(n.opType) {
		if err := im.castLike(desc, &l); err != nil {
			return err
		}
	}
	im.layers = append(im.layers, l)
	return nil
}

// trimEmpty drops trailing empty names, which ONNX uses for omitted optional inputs and
// outputs at the end of a list.
func trimEmpty(names []string) []string {
	for len(names) > 0 && names[len(names)-1] == "" {
		names = names[:len(names)-1]
	}
	return names
}

// constantNode folds a Constant node into a constant tensor named after its output.
func (im *importer) constantNode(desc string, n *nodeProto) error {
	if len(n.outputs) != 1 || n.outputs[0] == "" {
		return fmt.Errorf("%s must have exactly one named output", desc)
	}
	if len(n.attrs) != 1 {
		return fmt.Errorf("%s must have exactly one attribute, has %d", desc, len(n.attrs))
	}
	out := n.outputs[0]
	a := &n.attrs[0]
	t := model.Tensor{Name: out}
	le := binary.LittleEndian
	switch a.name {
	case "value":
		if a.t == nil {
			return fmt.Errorf("%s: attribute \"value\" holds no tensor", desc)
		}
		c, err := convertTensor(a.t, func(tp *tensorProto, size int) ([]byte, error) {
			return readExternal(im.dir, tp, size)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", desc, err)
		}
		c.Name = out
		t = c
	case "value_float":
		t.Type, t.Shape = model.Float32, []int{}
		t.Data = le.AppendUint32(nil, math.Float32bits(a.f))
	case "value_floats":
		t.Type, t.Shape = model.Float32, []int{len(a.floats)}
		t.Data = []byte{}
		for _, v := range a.floats {
			t.Data = le.AppendUint32(t.Data, math.Float32bits(v))
		}
	case "value_int":
		t.Type, t.Shape = model.Int64, []int{}
		t.Data = le.AppendUint64(nil, uint64(a.i))
	case "value_ints":
		t.Type, t.Shape = model.Int64, []int{len(a.ints)}
		t.Data = []byte{}
		for _, v := range a.ints {
			t.Data = le.AppendUint64(t.Data, uint64(v))
		}
	default:
		return fmt.Errorf("%s: attribute %q is not supported (clhost reads value, value_float(s) and value_int(s))", desc, a.name)
	}
	if err := im.produce(out, desc); err != nil {
		return err
	}
	im.addConst(t)
	return nil
}
