package graph

import (
	"errors"
	"fmt"
	"slices"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// ErrNoShapeFunc is returned (wrapped) by OutputShapes for a layer type without built-in
// shape inference, such as a custom layer.
var ErrNoShapeFunc = errors.New("no shape inference for this layer type")

// shaper is the shape rule of a layer type: the built-in op's, found in the op registry,
// which is the one home of each op's knowledge (the graph keeps no table of its own).
func shaper(typ string) (builtinkernels.Shaper, bool) {
	op, ok := builtinkernels.Lookup(typ)
	if !ok {
		return nil, false
	}
	s, ok := op.(builtinkernels.Shaper)
	return s, ok
}

// HasShape reports whether a layer type has built-in shape inference.
func HasShape(typ string) bool {
	_, ok := shaper(typ)
	return ok
}

// ShapeTypes lists the layer types with shape inference, sorted.
func ShapeTypes() []string {
	var types []string
	for _, typ := range builtinkernels.Types() {
		if HasShape(typ) {
			types = append(types, typ)
		}
	}
	return types
}

// OutputShapes computes the output shapes of a layer from its input shapes; consts[i], when
// given and not nil, is the constant tensor behind input i. Errors name the layer and its
// type; a type without shape inference gives an error wrapping ErrNoShapeFunc.
func OutputShapes(l *model.Layer, in [][]int, consts ...*model.Tensor) ([][]int, error) {
	f, ok := shaper(l.Type)
	fail := func(err error) error { return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err) }
	if !ok {
		return nil, fail(ErrNoShapeFunc)
	}
	if len(in) != len(l.Inputs) || len(consts) > len(in) {
		return nil, fail(fmt.Errorf("%d input shapes and %d constants given for %d inputs", len(in), len(consts), len(l.Inputs)))
	}
	c := make([]*model.Tensor, len(in))
	copy(c, consts)
	out, err := f.Shapes(l, in, c)
	if err != nil {
		return nil, fail(err)
	}
	if len(out) != len(l.Outputs) {
		return nil, fail(fmt.Errorf("computed %d output shapes for %d outputs", len(out), len(l.Outputs)))
	}
	return out, nil
}

// InferShapes gives every layer output of a valid model its type and shape: built-in layer
// types compute them (and a declared shape that differs is an error naming the layer);
// other types, custom layers, must have them declared in the model. Inferred tensors are
// appended to m.Tensors in execution order. On error the model is left unchanged.
func InferShapes(m *model.Model) error { return InferShapesExcept(m, nil) }

// InferShapesExcept is InferShapes where the layer types custom says are custom layers
// take their declared shapes even when a built-in of that name exists: a loaded
// custom-layer configuration replaces the built-in (OpenVINO's Tile takes attributes,
// ONNX's a repeats input), and with it the built-in's shape rule, which still gives the
// shapes a model leaves undeclared.
func InferShapesExcept(m *model.Model, custom func(typ string) bool) error {
	g, err := Build(m)
	if err != nil {
		return err
	}
	tensors := slices.Clone(m.Tensors)
	index := make(map[string]int, len(tensors))
	for i := range tensors {
		index[tensors[i].Name] = i
	}
	for _, li := range g.order {
		l := &m.Layers[li]
		in := make([][]int, len(l.Inputs))
		consts := make([]*model.Tensor, len(l.Inputs))
		var first model.DataType
		typed := false
		for k, name := range l.Inputs {
			if name == "" {
				continue
			}
			t := &tensors[index[name]] // topological order: every input is known by now
			in[k] = t.Shape
			if t.IsConst() {
				consts[k] = t
			}
			if !typed {
				first, typed = t.Type, true
			}
		}
		var out [][]int
		err := ErrNoShapeFunc
		if custom == nil || !custom(l.Type) || !allDeclared(l.Outputs, index) {
			out, err = OutputShapes(l, in, consts...)
		}
		if errors.Is(err, ErrNoShapeFunc) {
			for _, o := range l.Outputs {
				if _, declared := index[o]; !declared {
					return fmt.Errorf("model %q: layer %q (%s): output %q has no declared shape, and clhost cannot infer one for type %s: a custom layer's outputs must be declared in the model", m.Name, l.Name, l.Type, o, l.Type)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("model %q: %w", m.Name, err)
		}
		for k, o := range l.Outputs {
			typ := outputType(l, k, first)
			if i, declared := index[o]; declared {
				t := &tensors[i]
				if !slices.Equal(t.Shape, out[k]) || t.Type != typ {
					return fmt.Errorf("model %q: layer %q (%s): output %q is declared as %s %v, but the layer computes %s %v", m.Name, l.Name, l.Type, o, t.Type, t.Shape, typ, out[k])
				}
				continue
			}
			index[o] = len(tensors)
			tensors = append(tensors, model.Tensor{Name: o, Type: typ, Shape: out[k]})
		}
	}
	m.Tensors = tensors
	return nil
}

// allDeclared says whether the model declares every one of the tensors.
func allDeclared(names []string, index map[string]int) bool {
	for _, n := range names {
		if _, ok := index[n]; !ok {
			return false
		}
	}
	return true
}

// outputType is the element type of output k of a built-in layer whose first input has
// type first: the same, unless the op says otherwise (MaxPool's indices, Dropout's mask).
func outputType(l *model.Layer, k int, first model.DataType) model.DataType {
	if op, ok := builtinkernels.Lookup(l.Type); ok {
		if t, ok := op.(builtinkernels.OutputTyper); ok {
			return t.OutputType(l, k, first)
		}
	}
	return first
}

// Broadcast returns the shape of an element-wise result of operands of shapes a and b:
// opspec.Broadcast, numpy's rule as the kernels apply it.
func Broadcast(a, b []int) ([]int, error) { return opspec.Broadcast(a, b) }
