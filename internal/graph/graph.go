package graph

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/model"
)

// Graph is the dependency structure of a valid model: which layer produces and which
// layers read each tensor, the dependency levels, and the execution order derived from
// them. Layers are referred to by their index in Model.Layers. A Graph does not change; it
// describes the model as it was when built.
type Graph struct {
	Model *model.Model

	levels    [][]int
	order     []int          // levels flattened: the execution order
	step      []int          // layer → position in order
	level     []int          // layer → level
	producer  map[string]int // tensor → layer writing it
	consumers map[string][]int
	deps      [][]int // layer → layers whose outputs it reads (its wait list)
	users     [][]int // layer → layers that read its outputs
	lastUse   map[string]int
}

// Build validates the model and computes its graph. A model that is not valid, cycles
// included, is refused with model.Validate's error, which names every problem.
func Build(m *model.Model) (*Graph, error) {
	if err := model.Validate(m); err != nil {
		return nil, err
	}
	levels, err := m.Levels()
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", m.Name, err)
	}
	n := len(m.Layers)
	g := &Graph{
		Model:     m,
		levels:    levels,
		step:      make([]int, n),
		level:     make([]int, n),
		producer:  make(map[string]int),
		consumers: make(map[string][]int),
		deps:      make([][]int, n),
		users:     make([][]int, n),
		lastUse:   make(map[string]int),
	}
	for lv, layers := range levels {
		for _, li := range layers {
			g.step[li] = len(g.order)
			g.level[li] = lv
			g.order = append(g.order, li)
		}
	}
	for i := range m.Layers {
		for _, o := range m.Layers[i].Outputs {
			g.producer[o] = i
		}
	}
	for i := range m.Layers {
		for _, in := range m.Layers[i].Inputs {
			if in == "" {
				continue
			}
			if c := g.consumers[in]; len(c) == 0 || c[len(c)-1] != i {
				g.consumers[in] = append(c, i)
			}
			if p, ok := g.producer[in]; ok {
				g.deps[i] = append(g.deps[i], p)
				g.users[p] = append(g.users[p], i)
			}
		}
	}
	for i := range n {
		g.deps[i] = sortedUnique(g.deps[i])
		g.users[i] = sortedUnique(g.users[i])
	}

	// Last use, for memory planning: the step of the last layer reading the tensor; graph
	// outputs live past the last step; a tensor nobody reads dies where it is made.
	for i := range m.Layers {
		for _, o := range m.Layers[i].Outputs {
			g.lastUse[o] = g.step[i]
		}
	}
	for name, readers := range g.consumers {
		last := -1
		for _, r := range readers {
			last = max(last, g.step[r])
		}
		g.lastUse[name] = max(g.lastUseOr(name, -1), last)
	}
	for _, o := range m.Outputs {
		g.lastUse[o] = len(g.order)
	}
	return g, nil
}

func (g *Graph) lastUseOr(name string, def int) int {
	if s, ok := g.lastUse[name]; ok {
		return s
	}
	return def
}

func sortedUnique(l []int) []int {
	slices.Sort(l)
	return slices.Compact(l)
}

// Levels returns the layer indexes grouped by dependency level, in the OCL-ENGINE way:
// level 0 holds the layers that need only graph inputs and constants, each next level the
// layers whose inputs the earlier levels produce. Layers of one level are independent.
func (g *Graph) Levels() [][]int {
	out := make([][]int, len(g.levels))
	for i, l := range g.levels {
		out[i] = slices.Clone(l)
	}
	return out
}

// Order returns the layer indexes in execution order: the levels one after the other.
func (g *Graph) Order() []int { return slices.Clone(g.order) }

// Level returns the dependency level of a layer.
func (g *Graph) Level(layer int) int { return g.level[layer] }

// Step returns the position of a layer in Order.
func (g *Graph) Step(layer int) int { return g.step[layer] }

// Producer returns the index of the layer that writes a tensor, or -1 for graph inputs,
// constants and unknown names.
func (g *Graph) Producer(tensor string) int {
	if p, ok := g.producer[tensor]; ok {
		return p
	}
	return -1
}

// Consumers returns the indexes of the layers that read a tensor, ascending, each once.
func (g *Graph) Consumers(tensor string) []int { return slices.Clone(g.consumers[tensor]) }

// Deps returns the layers whose outputs a layer reads, ascending: the events its kernel
// must wait for.
func (g *Graph) Deps(layer int) []int { return slices.Clone(g.deps[layer]) }

// Users returns the layers that read any output of a layer, ascending.
func (g *Graph) Users(layer int) []int { return slices.Clone(g.users[layer]) }

// LastUse returns the step (position in Order) of the last layer that reads a tensor, after
// which its memory may be reused. Graph outputs return len(Order()): they are needed after
// the last layer. A layer output nobody reads returns its producer's step; a graph input or
// constant nobody reads, and an unknown name, return -1.
func (g *Graph) LastUse(tensor string) int { return g.lastUseOr(tensor, -1) }
