package host

import (
	"fmt"
	"slices"
)

// CheckOptions.Expect: matching each expected value to the tensor it names.

// resolveExpect maps each expectation to the tensor it names (a tensor, or a layer of
// one output) and checks its shape.
func (n *Network) resolveExpect(exp map[string]*Tensor, kept bool) (map[string]*Tensor, error) {
	out := map[string]*Tensor{}
	outputs := map[string]bool{}
	for _, t := range n.outputs {
		outputs[t.name] = true
	}
	for name, t := range exp {
		tensor := name
		if _, ok := n.tensors[name]; !ok {
			if l := n.layer(name); l != nil && len(l.Outputs) == 1 {
				tensor = l.Outputs[0]
			}
		}
		dt, ok := n.tensors[tensor]
		switch {
		case !ok && n.Model.Tensor(tensor) != nil:
			return nil, fmt.Errorf("expected tensor %q: the compiled network has no buffer of it (a fusion pass removed it; Options.NoFuse keeps every layer)", name)
		case !ok:
			return nil, fmt.Errorf("expected tensor %q: no tensor or single-output layer of that name in the network", name)
		case slices.Contains(n.Model.Inputs, tensor):
			return nil, fmt.Errorf("expected tensor %q: a graph input, which nothing computes", name)
		case n.isConstant(tensor):
			return nil, fmt.Errorf("expected tensor %q: a constant of the model, which nothing computes", name)
		case !kept && !outputs[tensor]:
			return nil, fmt.Errorf("expected tensor %q: an intermediate tensor, which only an engine opened with Options.KeepIntermediates keeps", name)
		case t == nil || len(t.Data) != elements(dt.shape):
			return nil, fmt.Errorf("expected tensor %q: the reference has shape %v, the tensor %v", name, shapeOf(t), dt.shape)
		}
		if _, dup := out[tensor]; dup {
			return nil, fmt.Errorf("expected tensor %q: given twice (by its name and its layer's)", tensor)
		}
		out[tensor] = t
	}
	return out, nil
}

func shapeOf(t *Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}
