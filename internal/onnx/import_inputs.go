package onnx

import (
	"errors"
	"fmt"
	"slices"

	"github.com/clhost/clhost/model"
)

// Graph inputs (their shapes, the sizes of their symbols, load-time constants) and the
// shapes value_info and graph outputs declare.

// readInputs records the graph inputs that are not initializers (older exporters list
// weights among the inputs too; an initializer always wins, as for inference it should)
// and fixes their shapes, defining the sizes of the symbols they use.
func (im *importer) readInputs() error {
	seen := map[string]bool{}
	for i := range im.g.inputs {
		v := &im.g.inputs[i]
		if v.name == "" {
			return fmt.Errorf("graph input %d has no name", i)
		}
		if _, isConst := im.consts[v.name]; isConst {
			continue
		}
		if c, ok := im.opt.Constants[v.name]; ok {
			if err := im.loadTimeConstant(v, c); err != nil {
				return fmt.Errorf("graph input %q: %w", v.name, err)
			}
			seen[v.name] = true
			continue
		}
		if seen[v.name] {
			return fmt.Errorf("graph input %q is listed twice", v.name)
		}
		seen[v.name] = true
		if !v.isTensor {
			return fmt.Errorf("graph input %q is not a tensor (sequences, maps and optionals are not supported)", v.name)
		}
		typ, err := modelType(v.elemType)
		if err != nil {
			return fmt.Errorf("graph input %q: %w", v.name, err)
		}
		shape, err := im.inputShape(v)
		if err != nil {
			return fmt.Errorf("graph input %q: %w", v.name, err)
		}
		if slices.Contains(shape, 0) {
			// An empty tensor holds no values, so it is known at load time: a constant,
			// which the layers it reaches fold with (an input fed nothing).
			if err := im.produce(v.name, "an empty graph input"); err != nil {
				return err
			}
			im.addConst(model.Tensor{Name: v.name, Type: typ, Shape: shape, Data: []byte{}})
			continue
		}
		if err := im.produce(v.name, "a graph input"); err != nil {
			return err
		}
		im.declare(model.Tensor{Name: v.name, Type: typ, Shape: shape})
		im.inputs = append(im.inputs, v.name)
	}
	for name := range im.opt.InputShapes {
		if !seen[name] {
			return fmt.Errorf("a shape is given for %q, which is not a graph input (inputs: %q)", name, im.inputs)
		}
	}
	for name := range im.opt.Constants {
		if !seen[name] {
			return fmt.Errorf("a constant value is given for %q, which is not a graph input (inputs: %q)", name, im.inputs)
		}
	}
	return nil
}

// loadTimeConstant makes graph input v the constant c (Options.Constants), after checking
// c against the shape the model declares.
func (im *importer) loadTimeConstant(v *valueInfo, c model.Tensor) error {
	if len(c.Data) != c.Elements()*c.Type.Size() {
		return fmt.Errorf("the constant given has %d bytes for %d elements of %s", len(c.Data), c.Elements(), c.Type)
	}
	if v.hasShape {
		if len(v.dims) != len(c.Shape) {
			return fmt.Errorf("the constant given has shape %v, the model declares rank %d", c.Shape, len(v.dims))
		}
		for i, d := range v.dims {
			if d.hasValue && d.value > 0 && int(d.value) != c.Shape[i] {
				return fmt.Errorf("the constant given has shape %v, the model fixes dimension %d at %d", c.Shape, i, d.value)
			}
		}
	}
	if err := im.produce(v.name, "a load-time constant"); err != nil {
		return err
	}
	c.Name = v.name
	im.addConst(c)
	return nil
}

func (im *importer) declare(t model.Tensor) {
	if _, ok := im.declared[t.Name]; !ok {
		im.declOrder = append(im.declOrder, t.Name)
	}
	im.declared[t.Name] = &t
}

func (im *importer) setParam(p string, size int) error {
	if p == "" {
		return nil
	}
	if prev, ok := im.params[p]; ok && prev != size {
		return fmt.Errorf("symbol %q is %d here but %d in an earlier input", p, size, prev)
	}
	im.params[p] = size
	return nil
}

func (im *importer) inputShape(v *valueInfo) ([]int, error) {
	if given, ok := im.opt.InputShapes[v.name]; ok {
		if v.hasShape && len(given) != len(v.dims) {
			return nil, fmt.Errorf("given shape %v has rank %d, the model declares rank %d", given, len(given), len(v.dims))
		}
		for i, d := range given {
			if d < 0 || d > maxDim {
				return nil, fmt.Errorf("given shape %v: dimension %d is %d", given, i, d)
			}
			if v.hasShape {
				dd := v.dims[i]
				if dd.hasValue && dd.value > 0 && int(dd.value) != d {
					return nil, fmt.Errorf("given shape %v: dimension %d is %d, the model fixes it at %d", given, i, d, dd.value)
				}
				if err := im.setParam(dd.param, d); err != nil {
					return nil, err
				}
			}
		}
		return append([]int{}, given...), nil // never nil: a rank-0 shape is known
	}
	if !v.hasShape {
		return nil, errors.New("the model declares no shape; give one at load time (Options.InputShapes)")
	}
	batch := im.opt.Batch
	if batch == 0 {
		batch = 1
	}
	shape := make([]int, len(v.dims))
	for i, d := range v.dims {
		switch {
		case d.hasValue && d.value > 0:
			if d.value > maxDim {
				return nil, fmt.Errorf("dimension %d is %d", i, d.value)
			}
			shape[i] = int(d.value)
		case i == 0:
			shape[i] = batch
			if err := im.setParam(d.param, batch); err != nil {
				return nil, err
			}
		case d.param != "":
			if size, ok := im.params[d.param]; ok {
				shape[i] = size
				continue
			}
			return nil, fmt.Errorf("dimension %d (%q) is not fixed; only the batch dimension may be, or give the input's shape at load time (Options.InputShapes)", i, d.param)
		default:
			return nil, fmt.Errorf("dimension %d is not fixed; only the batch dimension may be, or give the input's shape at load time (Options.InputShapes)", i)
		}
	}
	return shape, nil
}

// readDeclaredShapes adds the shapes value_info and the graph outputs declare. A shape
// with a symbol no input defines is left to shape inference rather than refused.
func (im *importer) readDeclaredShapes() error {
	lists := []struct {
		what string
		vs   []valueInfo
	}{{"value_info", im.g.valueInfo}, {"graph output", im.g.outputs}}
	for _, l := range lists {
		for i := range l.vs {
			v := &l.vs[i]
			name := im.final(v.name)
			if name == "" || !v.isTensor || !v.hasShape || im.consts[name] != nil {
				continue
			}
			if _, isInput := im.declared[name]; isInput && im.producer[name] == "a graph input" {
				continue
			}
			shape, ok := im.staticShape(v)
			if !ok {
				continue
			}
			typ, err := modelType(v.elemType)
			if err != nil {
				return fmt.Errorf("%s %q: %w", l.what, v.name, err)
			}
			if prev, ok := im.declared[name]; ok && !slices.Equal(prev.Shape, shape) {
				return fmt.Errorf("%s %q: declared shape %v contradicts the earlier %v", l.what, v.name, shape, prev.Shape)
			}
			im.declare(model.Tensor{Name: name, Type: typ, Shape: shape})
		}
	}
	return nil
}

func (im *importer) staticShape(v *valueInfo) ([]int, bool) {
	shape := make([]int, len(v.dims))
	for i, d := range v.dims {
		switch {
		case d.hasValue && d.value > 0 && d.value <= maxDim:
			shape[i] = int(d.value)
		case !d.hasValue && d.param != "" && im.params[d.param] > 0:
			shape[i] = im.params[d.param]
		default:
			return nil, false
		}
	}
	return shape, true
}
