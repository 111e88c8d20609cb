package model

import "slices"

// Clone returns a copy of the model that can be rewritten (shape inference, fusion)
// without touching the original. Constant data is shared: passes never write into it.
func (m *Model) Clone() *Model {
	c := &Model{
		Name:    m.Name,
		Tensors: make([]Tensor, len(m.Tensors)),
		Layers:  make([]Layer, len(m.Layers)),
		Inputs:  slices.Clone(m.Inputs),
		Outputs: slices.Clone(m.Outputs),
	}
	for i, t := range m.Tensors {
		t.Shape = slices.Clone(t.Shape)
		c.Tensors[i] = t
	}
	for i, l := range m.Layers {
		l.Inputs = slices.Clone(l.Inputs)
		l.Outputs = slices.Clone(l.Outputs)
		l.Attrs = slices.Clone(l.Attrs)
		for j := range l.Attrs {
			l.Attrs[j].Ints = slices.Clone(l.Attrs[j].Ints)
			l.Attrs[j].Floats = slices.Clone(l.Attrs[j].Floats)
		}
		c.Layers[i] = l
	}
	return c
}
