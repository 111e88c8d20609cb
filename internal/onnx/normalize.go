package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/clhost/clhost/model"
)

// normalize rewrites the attributes of default-domain operators whose meaning depends on
// the opset, so that the runtime, which never sees the opset, reads one form.
func (im *importer) normalize(l *model.Layer) error {
	if l.Has("domain") {
		return nil
	}
	// consumed_inputs (opsets before 6) marked inputs a node could overwrite, and is_test
	// (before 7) chose inference: neither changes what a node computes here.
	removeAttr(l, "consumed_inputs")
	if l.Int("is_test", 1) == 0 && (l.Type == "BatchNormalization" || l.Type == "Dropout") {
		return errors.New("is_test=0 (training) is not supported; export the model for inference")
	}
	removeAttr(l, "is_test")
	switch l.Type {
	case "Concat":
		if !l.Has("axis") && im.opset < 4 {
			setAttr(l, model.Attr{Name: "axis", Kind: model.AttrInt, Int: 1}) // the default before opset 4
		}
	case "Resize":
		if im.opset < 11 {
			// Resize 10 had Upsample's coordinates: asymmetric, nearest rounding down.
			setAttr(l, model.Attr{Name: "coordinate_transformation_mode", Kind: model.AttrString, Str: "asymmetric"})
			setAttr(l, model.Attr{Name: "nearest_mode", Kind: model.AttrString, Str: "floor"})
		}
	case "Upsample":
		if l.Has("height_scale") || l.Has("width_scale") {
			// Upsample 1 scaled the last two axes of N,C,H,W by attributes of their own.
			scales := []float32{1, 1, l.Float("height_scale", 1), l.Float("width_scale", 1)}
			removeAttr(l, "height_scale")
			removeAttr(l, "width_scale")
			setAttr(l, model.Attr{Name: "scales", Kind: model.AttrFloats, Floats: scales})
		}
		switch l.String("mode", "nearest") {
		case "NN":
			setAttr(l, model.Attr{Name: "mode", Kind: model.AttrString, Str: "nearest"})
		case "BILINEAR":
			setAttr(l, model.Attr{Name: "mode", Kind: model.AttrString, Str: "linear"})
		}
	case "Clip":
		im.clipAttrs(l)
	case "BatchNormalization":
		// Opsets before 9 could normalize per activation (spatial=0); nobody exports that
		// for inference and no kernel here computes it.
		if l.Has("spatial") {
			if l.Int("spatial", 1) != 1 {
				return errors.New("spatial=0 (statistics per activation) is not supported")
			}
			removeAttr(l, "spatial")
		}
		if l.Int("training_mode", 0) != 0 {
			return errors.New("training_mode=1 is not supported; export the model for inference")
		}
		removeAttr(l, "training_mode")
		// Running statistics outputs exist only in training; unread ones are dropped.
		for _, o := range l.Outputs[min(1, len(l.Outputs)):] {
			if im.read[o] {
				return fmt.Errorf("output %q (training statistics) is read by the graph; export the model for inference", o)
			}
		}
		l.Outputs = l.Outputs[:1]
	case "Softmax", "LogSoftmax", "Hardmax":
		if !l.Has("axis") {
			// The default axis moved from 1 to -1 in opset 13.
			axis := int64(-1)
			if im.opset < 13 {
				axis = 1
			}
			setAttr(l, model.Attr{Name: "axis", Kind: model.AttrInt, Int: axis})
		}
		if im.opset < 13 {
			im.legacy[l.Name] = true
		}
	}
	return nil
}

// clipAttrs turns Clip's constant min and max inputs (opset 11 on) into the attributes
// opsets 6 to 10 use. Bounds computed at run time stay inputs.
func (im *importer) clipAttrs(l *model.Layer) {
	var attrs []model.Attr
	for k, name := range []string{"min", "max"} {
		idx := k + 1
		if idx >= len(l.Inputs) || l.Inputs[idx] == "" {
			continue
		}
		c := im.consts[l.Inputs[idx]]
		if c == nil {
			return
		}
		fs, _, err := tensorValues(c)
		if err != nil || len(fs) != 1 {
			return
		}
		attrs = append(attrs, model.Attr{Name: name, Kind: model.AttrFloat, Float: fs[0]})
	}
	if len(l.Inputs) > 1 {
		l.Inputs = l.Inputs[:1]
	}
	for _, a := range attrs {
		setAttr(l, a)
	}
}

func setAttr(l *model.Layer, a model.Attr) {
	if p := l.Attr(a.Name); p != nil {
		*p = a
		return
	}
	l.Attrs = append(l.Attrs, a)
}

func removeAttr(l *model.Layer, name string) {
	out := l.Attrs[:0]
	for _, a := range l.Attrs {
		if a.Name != name {
			out = append(out, a)
		}
	}
	l.Attrs = out
}

// rewriteLegacySoftmax gives opset < 13 Softmax, LogSoftmax and Hardmax their meaning in
// the one-axis form the runtime computes: they normalized over all dimensions from axis
// on as one flat row, which is Flatten(axis), the operator over axis 1 of the 2-D result,
// and a Reshape back. Where axis is already the last dimension both meanings agree and
// the layer stays as it is. It needs the input shapes, so it runs after inference.
func (im *importer) rewriteLegacySoftmax(m *model.Model) error {
	if len(im.legacy) == 0 {
		return nil
	}
	var layers []model.Layer
	for _, l := range m.Layers {
		if !im.legacy[l.Name] {
			layers = append(layers, l)
			continue
		}
		if len(l.Inputs) != 1 || len(l.Outputs) != 1 {
			return fmt.Errorf("node %q (%s): needs one input and one output", l.Name, l.Type)
		}
		in := m.Tensor(l.Inputs[0])
		if in == nil {
			return fmt.Errorf("node %q (%s): the shape of input %q is unknown", l.Name, l.Type, l.Inputs[0])
		}
		r := len(in.Shape)
		axis := int(l.Int("axis", 1))
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis >= r {
			return fmt.Errorf("node %q (%s): axis %d is out of range for input %q of shape %v", l.Name, l.Type, l.Int("axis", 1), in.Name, in.Shape)
		}
		if axis == r-1 {
			layers = append(layers, l)
			continue
		}
		outer, inner := 1, 1
		for i, d := range in.Shape {
			if i < axis {
				outer *= d
			} else {
				inner *= d
			}
		}
		y := l.Outputs[0]
		flat := uniqueTensor(m, y+"/flat")
		m.Tensors = append(m.Tensors, model.Tensor{Name: flat, Type: in.Type, Shape: []int{outer, inner}})
		row := uniqueTensor(m, y+"/rows")
		m.Tensors = append(m.Tensors, model.Tensor{Name: row, Type: in.Type, Shape: []int{outer, inner}})
		shapeName := uniqueTensor(m, y+"/shape")
		shapeData := make([]byte, 0, 8*r)
		for _, d := range in.Shape {
			shapeData = binary.LittleEndian.AppendUint64(shapeData, uint64(d))
		}
		m.Tensors = append(m.Tensors, model.Tensor{Name: shapeName, Type: model.Int64, Shape: []int{r}, Data: shapeData})

		op := l
		op.Attrs = append([]model.Attr(nil), l.Attrs...)
		setAttr(&op, model.Attr{Name: "axis", Kind: model.AttrInt, Int: 1})
		op.Inputs, op.Outputs = []string{flat}, []string{row}
		layers = append(layers,
			model.Layer{Name: uniqueLayer(m, l.Name+"/flatten"), Type: "Flatten", Inputs: []string{in.Name}, Outputs: []string{flat},
				Attrs: []model.Attr{{Name: "axis", Kind: model.AttrInt, Int: int64(axis)}}},
			op,
			model.Layer{Name: uniqueLayer(m, l.Name+"/reshape"), Type: "Reshape", Inputs: []string{row, shapeName}, Outputs: []string{y}})
	}
	m.Layers = layers
	return nil
}

func uniqueTensor(m *model.Model, base string) string {
	name := base
	for k := 2; m.Tensor(name) != nil || producedBy(m, name) >= 0; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	return name
}

func uniqueLayer(m *model.Model, base string) string {
	taken := func(n string) bool {
		for i := range m.Layers {
			if m.Layers[i].Name == n {
				return true
			}
		}
		return false
	}
	name := base
	for k := 2; taken(name); k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	return name
}

// producedBy returns the index of the layer writing tensor name, or -1.
func producedBy(m *model.Model, name string) int {
	for i := range m.Layers {
		for _, o := range m.Layers[i].Outputs {
			if o == name {
				return i
			}
		}
	}
	return -1
}

// pruneTensors drops tensors nothing refers to: initializers no node reads, and the
// declared shapes of values folded away.
func pruneTensors(m *model.Model) {
	ref := map[string]bool{}
	for _, l := range m.Layers {
		for _, n := range l.Inputs {
			ref[n] = true
		}
		for _, n := range l.Outputs {
			ref[n] = true
		}
	}
	for _, n := range m.Inputs {
		ref[n] = true
	}
	for _, n := range m.Outputs {
		ref[n] = true
	}
	out := m.Tensors[:0]
	for _, t := range m.Tensors {
		if ref[t.Name] {
			out = append(out, t)
		}
	}
	m.Tensors = out
}
