package onnx

import (
	"errors"
	"fmt"

	"github.com/clhost/clhost/model"
)

// The importer's state and run, which drives the import: import_inputs.go reads the graph
// inputs and declared shapes, import_node.go the nodes, import_attrs.go their attributes,
// import_aliases.go rewires the readers of folded copies.

// importer turns one decoded GraphProto into a model.Model.
type importer struct {
	opt   Options
	dir   string
	opset int64
	g     *graphProto

	consts     map[string]*model.Tensor // constant tensors by name
	constOrder []string
	declared   map[string]*model.Tensor // tensors whose shape the model declares
	declOrder  []string
	producer   map[string]string // tensor name → what produces it, for the single-producer check
	alias      map[string]string // output of a folded Identity/Dropout → its input
	aliasNode  map[string]string // output of a folded Identity/Dropout → that node's name
	layers     []model.Layer
	layerOf    map[string]int  // tensor name → index of the layer producing it (for resolveAliases)
	names      map[string]bool // layer names in use
	params     map[string]int  // dim_param symbol → size
	inputs     []string
	legacy     map[string]bool   // layers with the opset < 13 Softmax semantics
	read       map[string]bool   // names some node or the graph's outputs read
	renames    map[string]string // producer's tensor → graph output name it takes
	kept       []model.Layer     // Identity copies that must stay (see resolveAliases)
}

func defaultDomain(d string) bool { return d == "" || d == "ai.onnx" }

func nodeDesc(i int, n *nodeProto) string {
	if n.name != "" {
		return fmt.Sprintf("node %q (%s)", n.name, n.opType)
	}
	return fmt.Sprintf("node %d (%s)", i, n.opType)
}

func (im *importer) produce(name, by string) error {
	if prev, ok := im.producer[name]; ok {
		return fmt.Errorf("tensor %q is produced by both %s and %s", name, prev, by)
	}
	im.producer[name] = by
	return nil
}

func (im *importer) run() (*model.Model, error) {
	g := im.g
	if g.sparseInitCount > 0 {
		return nil, errors.New("sparse initializers are not supported")
	}
	for i := range g.initializers {
		t := &g.initializers[i]
		if t.name == "" {
			return nil, fmt.Errorf("initializer %d has no name", i)
		}
		c, err := convertTensor(t, func(t *tensorProto, size int) ([]byte, error) {
			return readExternal(im.dir, t, size)
		})
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", t.name, err)
		}
		if err := im.produce(t.name, "an initializer"); err != nil {
			return nil, err
		}
		im.addConst(c)
	}
	if err := im.readInputs(); err != nil {
		return nil, err
	}

	// Names something reads: a Dropout whose mask is read cannot be folded away.
	im.read = map[string]bool{}
	for i := range g.nodes {
		for _, in := range g.nodes[i].inputs {
			im.read[in] = true
		}
	}
	outputs := map[string]bool{}
	for _, o := range g.outputs {
		im.read[o.name] = true
		outputs[o.name] = true
	}

	for i := range g.nodes {
		if err := im.node(i, &g.nodes[i]); err != nil {
			return nil, err
		}
	}
	im.resolveAliases(outputs)
	im.rewriteEinsum()
	if err := im.readDeclaredShapes(); err != nil {
		return nil, err
	}
	if err := im.prepareLayers(); err != nil {
		return nil, err
	}
	im.constantOutputs()
	im.floatActivations()

	m := &model.Model{Name: g.name, Layers: im.layers, Inputs: im.inputs}
	for _, o := range g.outputs {
		if o.name == "" {
			return nil, errors.New("a graph output has no name")
		}
		m.Outputs = append(m.Outputs, o.name)
	}
	// Inputs first, then constants in file order, then the other declared shapes.
	for _, n := range im.inputs {
		m.Tensors = append(m.Tensors, *im.declared[n])
	}
	for _, n := range im.constOrder {
		m.Tensors = append(m.Tensors, *im.consts[n])
	}
	isInput := map[string]bool{}
	for _, n := range im.inputs {
		isInput[n] = true
	}
	for _, n := range im.declOrder {
		if !isInput[n] {
			m.Tensors = append(m.Tensors, *im.declared[n])
		}
	}
	return m, nil
}

func (im *importer) addConst(t model.Tensor) {
	if t.Data == nil {
		t.Data = []byte{}
	}
	im.consts[t.Name] = &t
	im.constOrder = append(im.constOrder, t.Name)
}
