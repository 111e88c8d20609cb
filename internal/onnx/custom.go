package onnx

import (
	"slices"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// A node that a user's custom layer implements reaches the kernel as the model writes it:
// none of the importer's rewrites (constant folding, load-time inputs turned into
// attributes, opset normalization, Identity and Dropout folding) touch it, since they
// carry the built-in operator's semantics, which the user's layer need not share.

// isCustom says whether a layer runs a custom layer's kernel: a node of another domain
// than the default one, or one whose type Options.Custom names.
func (im *importer) isCustom(l *model.Layer) bool {
	return l.Has("domain") || im.isCustomType(l.Type)
}

// isCustomType says whether Options.Custom names a layer type.
func (im *importer) isCustomType(typ string) bool {
	return im.opt.Custom != nil && im.opt.Custom(typ)
}

// customShapes records the output shapes of a custom layer: those the model declares,
// and for the others, where a built-in of the same type exists and its shape rule takes
// the node, the shapes that rule gives to a copy of it rewritten as a built-in would be.
// The layer itself is left as it is; an output that still has no shape is reported by
// checkDeclared.
func (im *importer) customShapes(l *model.Layer, shapes map[string][]int, types map[string]model.DataType) {
	undeclared := false
	for _, o := range l.Outputs {
		if d, ok := im.declared[o]; ok {
			shapes[o] = d.Shape
		} else {
			undeclared = true
		}
	}
	if undeclared {
		if out, ok := im.builtinShapes(l, shapes); ok {
			for k, o := range l.Outputs {
				if _, ok := im.declared[o]; !ok {
					shapes[o] = out[k]
					im.declare(model.Tensor{Name: o, Type: outputElemType(l, k, types), Shape: slices.Clone(out[k])})
				}
			}
		}
	}
	for k, o := range l.Outputs {
		if _, ok := types[o]; !ok {
			types[o] = outputElemType(l, k, types)
		}
	}
}

// builtinShapes runs the built-in shape rule of l's type on a rewritten copy of l.
func (im *importer) builtinShapes(l *model.Layer, shapes map[string][]int) ([][]int, bool) {
	c := *l
	c.Attrs = slices.Clone(l.Attrs)
	c.Inputs = slices.Clone(l.Inputs)
	wasLegacy := im.legacy[c.Name]
	defer func() { im.legacy[c.Name] = wasLegacy }()
	if im.normalize(&c) != nil || im.legacyBroadcast(&c, shapes) != nil || im.loadTimeAttrs(&c, shapes) != nil {
		return nil, false
	}
	in := make([][]int, len(c.Inputs))
	consts := make([]*model.Tensor, len(c.Inputs))
	for k, name := range c.Inputs {
		if name == "" {
			continue
		}
		if in[k] = shapes[name]; in[k] == nil {
			return nil, false
		}
		consts[k] = im.consts[name]
	}
	out, err := graph.OutputShapes(&c, in, consts...)
	if err != nil || len(out) != len(l.Outputs) {
		return nil, false
	}
	return out, true
}

// customTypes is the predicate graph.InferShapesExcept takes: the types of the model's
// custom layers, whose declared shapes stand.
func (im *importer) customTypes(m *model.Model) func(string) bool {
	types := map[string]bool{}
	for i := range m.Layers {
		if im.isCustom(&m.Layers[i]) {
			types[m.Layers[i].Type] = true
		}
	}
	return func(typ string) bool { return types[typ] }
}
