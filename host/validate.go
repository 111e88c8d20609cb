package host

import (
	"fmt"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// CustomInstance is one custom layer of a model as an engine would bind it: its
// configuration and program text, or the problems that keep it from having one (a
// missing parameter, a work-size formula its shapes break, a format).
type CustomInstance struct {
	Layer, Type string
	Config      *customlayer.Layer
	Program     *jit.Program // nil when Err is set
	Err         error
}

// CustomInstances generates the program of every custom layer of m from the model's
// shapes and attributes, as Engine.Compile would, without a device and without running
// anything, so that tools can check a model's custom layers (clhost validate -m). Layer
// types neither a built-in nor reg implements come back as an *UnimplementedError beside
// the instances.
func CustomInstances(m *model.Model, reg *customlayer.Registry) ([]CustomInstance, error) {
	if err := model.Validate(m); err != nil {
		return nil, err
	}
	m = m.Clone()
	res := newResolver(reg)
	if err := graph.InferShapesExcept(m, res.isCustom); err != nil {
		return nil, err
	}
	var out []CustomInstance
	var missing *UnimplementedError
	seen := map[string]bool{}
	for i := range m.Layers {
		l := &m.Layers[i]
		cfg := res.layer(l).custom
		if cfg == nil {
			if res.layer(l).op == nil && !seen[l.Type] {
				seen[l.Type] = true
				t := UnimplementedType{Type: l.Type, Layer: l.Name}
				if near, ok := reg.Near(l.Type); ok {
					t.Near = near
				}
				if missing == nil {
					missing = &UnimplementedError{}
				}
				missing.Types = append(missing.Types, t)
			}
			continue
		}
		ci := CustomInstance{Layer: l.Name, Type: l.Type, Config: cfg}
		inst := jit.Instance{Name: l.Name, Params: layerParams{l}}
		tensor := func(name string) (jit.Tensor, error) {
			t := m.Tensor(name)
			if t == nil || t.Shape == nil {
				return jit.Tensor{}, fmt.Errorf("tensor %q has no known shape", name)
			}
			typ := t.Type.CLName()
			if typ == "" {
				typ = "float"
			}
			return jit.Tensor{Shape: t.Shape, Type: typ, Format: customlayer.ANY}, nil
		}
		for _, list := range []struct {
			names []string
			dst   *[]jit.Tensor
		}{{l.Inputs, &inst.Inputs}, {l.Outputs, &inst.Outputs}} {
			for _, name := range list.names {
				if name == "" {
					*list.dst = append(*list.dst, jit.Tensor{Shape: []int{1}})
					continue
				}
				t, err := tensor(name)
				if err != nil && ci.Err == nil {
					ci.Err = fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
				}
				*list.dst = append(*list.dst, t)
			}
		}
		if ci.Err == nil {
			ci.Program, ci.Err = jit.Generate(cfg, inst)
		}
		out = append(out, ci)
	}
	if missing != nil {
		return out, missing
	}
	return out, nil
}
