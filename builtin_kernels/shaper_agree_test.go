package builtinkernels

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/clhost/clhost/model"
)

// layerOf is a device-harness case as the graph sees it: a model layer with the case's
// attributes, an empty name for each omitted input.
func layerOf(t *testing.T, c opCase) *model.Layer {
	t.Helper()
	l := &model.Layer{Name: c.name, Type: c.typ}
	names := make([]string, 0, len(c.attrs))
	for k := range c.attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch v := c.attrs[k].(type) {
		case int:
			l.Attrs = append(l.Attrs, model.IntAttr(k, int64(v)))
		case int64:
			l.Attrs = append(l.Attrs, model.IntAttr(k, v))
		case float32:
			l.Attrs = append(l.Attrs, model.FloatAttr(k, v))
		case float64:
			l.Attrs = append(l.Attrs, model.FloatAttr(k, float32(v)))
		case string:
			l.Attrs = append(l.Attrs, model.StringAttr(k, v))
		case []int:
			ints := make([]int64, len(v))
			for i, x := range v {
				ints[i] = int64(x)
			}
			l.Attrs = append(l.Attrs, model.IntsAttr(k, ints...))
		case []int64:
			l.Attrs = append(l.Attrs, model.IntsAttr(k, v...))
		case []float32:
			l.Attrs = append(l.Attrs, model.FloatsAttr(k, v...))
		default:
			t.Fatalf("%s/%s: attribute %s of type %T", c.typ, c.name, k, v)
		}
	}
	for i := range c.in {
		name := fmt.Sprint("in", i)
		if slices.Contains(c.omit, i) {
			name = ""
		}
		l.Inputs = append(l.Inputs, name)
	}
	for i := range c.out {
		l.Outputs = append(l.Outputs, fmt.Sprint("out", i))
	}
	return l
}

// TestShapeRulesAgreeWithPlans: on every case of the device harness, the shape rule the
// graph asks (Shaper) gives the shapes the op plans and checks its reference against.
// Reshape's target shape input is a constant the graph reads; the harness has none.
func TestShapeRulesAgreeWithPlans(t *testing.T) {
	for _, c := range opCases {
		if c.typ == "Reshape" && !c.attrs.Has("shape") {
			continue
		}
		op, _ := Lookup(c.typ)
		s, ok := op.(Shaper)
		if !ok {
			t.Errorf("%s has no shape rule", c.typ)
			continue
		}
		l := layerOf(t, c)
		in := slices.Clone(c.in)
		for _, i := range c.omit {
			in[i] = nil
		}
		got, err := s.Shapes(l, in, make([]*model.Tensor, len(in)))
		if err != nil {
			t.Errorf("%s/%s: %v", c.typ, c.name, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.out) {
			t.Errorf("%s/%s: the shape rule gives %v, the op plans %v", c.typ, c.name, got, c.out)
		}
	}
}
