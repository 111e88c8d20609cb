package model

import (
	"fmt"
	"math"
	"slices"
)

// maxElements bounds the element count of one tensor so that byte sizes computed from a
// shape never overflow an int, whatever a file claims.
const maxElements = math.MaxInt64 / 16

// Validate checks that a model is well formed: names present and unique, element types
// known, constant data as long as shape × element size, every layer input a graph input, a
// constant or the output of some layer, every graph input declared and every graph output
// resolvable, and no cycle among the layers. It reports every problem it finds in one error
// (an *Error). Load and Decode run it on every file; Builder.Build on what it built.
func Validate(m *Model) error {
	return validate(m, memorySource(m))
}

func validate(m *Model, source string) error {
	var p problems
	if m == nil {
		p.add("no model")
		return p.err(source)
	}

	tensors := make(map[string]int, len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Name == "" {
			p.add("tensor %d has no name", i)
			continue
		}
		if j, dup := tensors[t.Name]; dup {
			p.add("tensor %q is declared twice (tensors %d and %d)", t.Name, j, i)
			continue
		}
		tensors[t.Name] = i
		checkTensor(&p, t)
	}
	isConst := func(name string) bool {
		i, ok := tensors[name]
		return ok && m.Tensors[i].IsConst()
	}

	producer := make(map[string]int)
	layers := make(map[string]int, len(m.Layers))
	for i := range m.Layers {
		l := &m.Layers[i]
		id := layerID(l, i)
		if l.Name == "" {
			p.add("layer %d has no name", i)
		} else if j, dup := layers[l.Name]; dup {
			p.add("layer name %q is used twice (layers %d and %d)", l.Name, j, i)
		} else {
			layers[l.Name] = i
		}
		if l.Type == "" {
			p.add("%s has no type", id)
		}
		if len(l.Outputs) == 0 {
			p.add("%s has no outputs", id)
		}
		for k, o := range l.Outputs {
			switch j, dup := producer[o]; {
			case o == "":
				p.add("%s: output %d has no name", id, k)
			case dup && j == i:
				p.add("%s lists output %q twice", id, o)
			case dup:
				p.add("tensor %q is the output of both %s and %s", o, layerID(&m.Layers[j], j), id)
			case isConst(o):
				p.add("%s writes %q, which is a constant", id, o)
			default:
				producer[o] = i
			}
		}
		attrs := make(map[string]bool, len(l.Attrs))
		for k := range l.Attrs {
			a := &l.Attrs[k]
			switch {
			case a.Name == "":
				p.add("%s: attribute %d has no name", id, k)
			case attrs[a.Name]:
				p.add("%s: attribute %q is given twice", id, a.Name)
			case a.Kind < AttrInt || a.Kind > AttrString:
				p.add("%s: attribute %q has unknown kind %d", id, a.Name, a.Kind)
			}
			attrs[a.Name] = true
		}
	}

	inputs := make(map[string]bool, len(m.Inputs))
	for _, in := range m.Inputs {
		i, declared := tensors[in]
		switch {
		case in == "":
			p.add("a graph input has no name")
		case inputs[in]:
			p.add("graph input %q is listed twice", in)
		case !declared:
			p.add("graph input %q is not among the tensors, so its type and shape are unknown", in)
		case m.Tensors[i].IsConst():
			p.add("graph input %q is a constant", in)
		default:
			if j, ok := producer[in]; ok {
				p.add("graph input %q is also the output of %s", in, layerID(&m.Layers[j], j))
			}
		}
		inputs[in] = true
	}
	available := func(name string) bool {
		_, produced := producer[name]
		return inputs[name] || produced || isConst(name)
	}

	for i := range m.Layers {
		l := &m.Layers[i]
		for _, in := range l.Inputs {
			// An empty name is an omitted optional input (ONNX writes them that way).
			if in != "" && !available(in) {
				p.add("%s (%s): input %q is not a graph input, a constant or the output of any layer", layerID(l, i), l.Type, in)
			}
		}
	}

	if len(m.Outputs) == 0 {
		p.add("the model has no outputs")
	}
	outputs := make(map[string]bool, len(m.Outputs))
	for _, o := range m.Outputs {
		switch {
		case o == "":
			p.add("a graph output has no name")
		case outputs[o]:
			p.add("graph output %q is listed twice", o)
		case !available(o):
			p.add("graph output %q is not a graph input, a constant or the output of any layer", o)
		}
		outputs[o] = true
	}

	for i := range m.Tensors {
		t := &m.Tensors[i]
		if _, produced := producer[t.Name]; t.Name != "" && !t.IsConst() && !inputs[t.Name] && !produced {
			p.add("tensor %q has no data and is neither a graph input nor the output of any layer", t.Name)
		}
	}

	// A cycle only means something once every name resolves.
	if p.empty() {
		if _, err := m.Levels(); err != nil {
			p.add("%v", err)
		}
	}
	return p.err(source)
}

func checkTensor(p *problems, t *Tensor) {
	size := t.Type.Size()
	if size == 0 {
		p.add("tensor %q has unknown element type %d", t.Name, int8(t.Type))
	}
	n, ok := checkedElements(t.Shape)
	if !ok {
		for k, d := range t.Shape {
			if d < 0 {
				p.add("tensor %q: dimension %d of shape %v is negative", t.Name, k, t.Shape)
				return
			}
		}
		p.add("tensor %q: shape %v has too many elements", t.Name, t.Shape)
		return
	}
	if t.IsConst() && size > 0 && int64(len(t.Data)) != n*int64(size) {
		p.add("tensor %q: data is %d bytes, but shape %v of %s needs %d", t.Name, len(t.Data), t.Shape, t.Type, n*int64(size))
	}
}

// checkedElements is the product of the shape, or false when a dimension is negative or the
// product exceeds maxElements.
func checkedElements(shape []int) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d == 0 {
			n = 0
			continue
		}
		if n > maxElements/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// layerID names a layer in messages, by index when it has no name.
func layerID(l *Layer, i int) string {
	if l.Name == "" {
		return fmt.Sprintf("layer %d", i)
	}
	return fmt.Sprintf("layer %q", l.Name)
}

// Levels groups the layers by dependency the way OCL-ENGINE orders a network: the first
// level holds every layer whose inputs are all available at the start (graph inputs and
// constants), and each next level every layer whose inputs the levels before it produce.
// Layers of one level do not depend on one another, so they may run concurrently. Each
// level lists layer indexes in ascending order. A name no layer produces counts as
// available; Validate reports those that resolve to nothing. When the layers form a cycle
// the error is a *CycleError naming the layers around one loop.
func (m *Model) Levels() ([][]int, error) {
	producer := make(map[string]int)
	for i := range m.Layers {
		for _, o := range m.Layers[i].Outputs {
			producer[o] = i
		}
	}
	// waiting counts, per layer, the inputs (one per occurrence) whose producer has not run;
	// readers lists, per layer, one entry per input occurrence that reads its outputs.
	waiting := make([]int, len(m.Layers))
	readers := make([][]int, len(m.Layers))
	for i := range m.Layers {
		for _, in := range m.Layers[i].Inputs {
			if p, ok := producer[in]; ok && in != "" {
				waiting[i]++
				readers[p] = append(readers[p], i)
			}
		}
	}
	var levels [][]int
	var cur []int
	for i, w := range waiting {
		if w == 0 {
			cur = append(cur, i)
		}
	}
	done := 0
	for len(cur) > 0 {
		levels = append(levels, cur)
		done += len(cur)
		var next []int
		for _, p := range cur {
			for _, r := range readers[p] {
				waiting[r]--
				if waiting[r] == 0 {
					next = append(next, r)
				}
			}
		}
		slices.Sort(next)
		cur = next
	}
	if done == len(m.Layers) {
		return levels, nil
	}
	return nil, m.findCycle(waiting, producer)
}

// findCycle walks from a layer that never became ready towards a producer that never ran
// either; such a producer always exists, so the walk must come back to a layer it has seen,
// and the layers from there on form a loop.
func (m *Model) findCycle(waiting []int, producer map[string]int) *CycleError {
	start := slices.IndexFunc(waiting, func(w int) bool { return w > 0 })
	seen := make(map[int]int) // layer → position in path
	var path []int
	for x := start; ; {
		if at, ok := seen[x]; ok {
			loop := path[at:]
			// The walk went from readers to producers; report in data-flow order.
			names := make([]string, len(loop))
			for k, l := range loop {
				names[len(loop)-1-k] = m.Layers[l].Name
			}
			return &CycleError{Layers: names}
		}
		seen[x] = len(path)
		path = append(path, x)
		next := -1
		for _, in := range m.Layers[x].Inputs {
			if p, ok := producer[in]; ok && in != "" && waiting[p] > 0 {
				next = p
				break
			}
		}
		if next < 0 {
			// Unreachable when waiting came from Levels; a reported layer still beats a panic.
			return &CycleError{Layers: []string{m.Layers[x].Name}}
		}
		x = next
	}
}
