package graph

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

// BatchOf is dim 0 shared by every input and output of m, if they share one.
func BatchOf(m *model.Model) (int, bool) {
	b := -1
	for _, names := range [][]string{m.Inputs, m.Outputs} {
		for _, name := range names {
			t := m.Tensor(name)
			if t == nil || len(t.Shape) == 0 {
				return 0, false
			}
			if b < 0 {
				b = t.Shape[0]
			}
			if t.Shape[0] != b {
				return 0, false
			}
		}
	}
	return b, b > 0
}

// Rebatch returns a copy of m whose batch dimension (dim 0 of every input, shared by
// every output) is batch. Shapes of built-in layers' outputs are inferred anew; a
// layer without shape inference, or of a type custom says a custom layer implements,
// keeps its declared output shape with dim 0 scaled, when dim 0 is the old batch. A model
// whose constants fix the batch (a Reshape to [1, n]) fails shape inference and is
// refused; a server checks the result numerically against the stored model before it
// batches requests.
func Rebatch(m *model.Model, batch int, custom func(typ string) bool) (*model.Model, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("batch size %d: must be positive", batch)
	}
	m = m.Clone()
	if err := InferShapesExcept(m, custom); err != nil {
		return nil, err
	}
	old, ok := BatchOf(m)
	if !ok {
		return nil, fmt.Errorf("model %q: its inputs and outputs share no batch dimension (dim 0)", m.Name)
	}
	c := m.Clone()
	if old == batch {
		return c, nil
	}
	isInput := map[string]bool{}
	for _, in := range c.Inputs {
		isInput[in] = true
	}
	inferred := map[string]bool{}
	for _, l := range c.Layers {
		if !HasShape(l.Type) || custom != nil && custom(l.Type) {
			continue
		}
		for _, o := range l.Outputs {
			inferred[o] = true
		}
	}
	kept := c.Tensors[:0]
	for _, t := range c.Tensors {
		switch {
		case t.IsConst():
		case isInput[t.Name]:
			t.Shape[0] = batch
		case inferred[t.Name]:
			continue // inferred again below
		case len(t.Shape) > 0 && t.Shape[0] == old:
			t.Shape[0] = batch
		default:
			return nil, fmt.Errorf("model %q: tensor %q %v has no batch dimension of %d to rewrite", m.Name, t.Name, t.Shape, old)
		}
		kept = append(kept, t)
	}
	c.Tensors = kept
	if err := InferShapesExcept(c, custom); err != nil {
		return nil, fmt.Errorf("at batch %d: %w", batch, err)
	}
	if b, ok := BatchOf(c); !ok || b != batch {
		return nil, fmt.Errorf("model %q: at batch %d the outputs do not all have dim 0 = %d", m.Name, batch, batch)
	}
	return c, nil
}
