package onnx

import (
	"fmt"
	"strings"

	"github.com/clhost/clhost/model"
)

// UnsupportedOp is one layer type of a model that the runtime has no implementation for.
type UnsupportedOp struct {
	Type   string
	Domain string   // the ONNX domain for operators outside the default one, else ""
	Layers []string // the layers of that type, in model order
}

// UnsupportedError lists every layer type of a model without an implementation.
type UnsupportedError struct {
	Model string
	Ops   []UnsupportedOp
}

// maxLayersNamed bounds how many layers of one type a message names.
const maxLayersNamed = 3

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	if len(e.Ops) == 1 {
		fmt.Fprintf(&b, "model %q: 1 layer type has no implementation:", e.Model)
	} else {
		fmt.Fprintf(&b, "model %q: %d layer types have no implementation:", e.Model, len(e.Ops))
	}
	for _, op := range e.Ops {
		names := make([]string, 0, maxLayersNamed)
		for _, n := range op.Layers[:min(len(op.Layers), maxLayersNamed)] {
			names = append(names, fmt.Sprintf("%q", n))
		}
		which := "layer " + names[0]
		if len(op.Layers) > 1 {
			which = "layers " + strings.Join(names, ", ")
		}
		if more := len(op.Layers) - len(names); more > 0 {
			which += fmt.Sprintf(" and %d more", more)
		}
		if op.Domain != "" {
			which += fmt.Sprintf(", domain %q", op.Domain)
		}
		fmt.Fprintf(&b, "\n  no implementation for layer type %q (%s): load a custom-layer config (-c) that defines it", op.Type, which)
	}
	return b.String()
}

// UnsupportedOps returns an *UnsupportedError listing, all at once, every layer type of m
// for which known reports false, or nil when every type is known. known is typically the
// runtime's layer registry including the custom layers loaded from configs.
func UnsupportedOps(m *model.Model, known func(typ string) bool) error {
	var ops []UnsupportedOp
	index := map[string]int{}
	for _, l := range m.Layers {
		if known(l.Type) {
			continue
		}
		i, ok := index[l.Type]
		if !ok {
			i = len(ops)
			index[l.Type] = i
			ops = append(ops, UnsupportedOp{Type: l.Type, Domain: l.String("domain", "")})
		}
		ops[i].Layers = append(ops[i].Layers, l.Name)
	}
	if len(ops) == 0 {
		return nil
	}
	return &UnsupportedError{Model: m.Name, Ops: ops}
}
