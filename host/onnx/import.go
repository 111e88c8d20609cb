package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/clhost/clhost/host/model"
)

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
			if d <= 0 || d > maxDim {
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
			if prev, ok := im.declared[name]; ok && !equalShapes(prev.Shape, shape) {
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

func equalShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// node imports one NodeProto: a constant, an alias, or a layer.
func (im *importer) node(i int, n *nodeProto) error {
	desc := nodeDesc(i, n)
	if n.opType == "" {
		return fmt.Errorf("%s has no op_type", desc)
	}
	if defaultDomain(n.domain) {
		switch n.opType {
		case "Constant":
			return im.constantNode(desc, n)
		case "Identity", "Dropout":
			if len(n.inputs) < 1 || n.inputs[0] == "" || len(n.outputs) < 1 || n.outputs[0] == "" {
				return fmt.Errorf("%s needs an input and an output", desc)
			}
			// The mask of a Dropout is all true at inference; a graph that reads it
			// keeps the node (and needs an implementation for it).
			maskRead := n.opType == "Dropout" && len(n.outputs) > 1 && n.outputs[1] != "" && im.read[n.outputs[1]]
			if len(n.outputs) > 2 || (n.opType == "Identity" && len(n.outputs) > 1) {
				return fmt.Errorf("%s has %d outputs", desc, len(n.outputs))
			}
			if n.opType == "Dropout" && len(n.inputs) > 2 && n.inputs[2] != "" {
				if err := im.dropoutInference(n.inputs[2]); err != nil {
					return fmt.Errorf("%s: %w", desc, err)
				}
			}
			if !maskRead {
				if err := im.produce(n.outputs[0], desc); err != nil {
					return err
				}
				im.alias[n.outputs[0]] = n.inputs[0]
				im.aliasNode[n.outputs[0]] = n.name
				return nil
			}
		}
	}
	name := n.name
	if name == "" {
		name = n.opType + "_" + strconv.Itoa(i)
	}
	base := name
	for k := 2; im.names[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	im.names[name] = true
	l := model.Layer{Name: name, Type: n.opType}
	l.Inputs = append([]string{}, trimEmpty(n.inputs)...)
	l.Outputs = append([]string{}, trimEmpty(n.outputs)...)
	if len(l.Outputs) == 0 {
		return fmt.Errorf("%s has no outputs", desc)
	}
	for k, o := range l.Outputs {
		if o == "" {
			return fmt.Errorf("%s: output %d has no name but a later output has; clhost layers cannot skip outputs", desc, k)
		}
		if err := im.produce(o, desc); err != nil {
			return err
		}
		im.layerOf[o] = len(im.layers)
	}
	seen := map[string]bool{}
	for k := range n.attrs {
		a := &n.attrs[k]
		if seen[a.name] {
			return fmt.Errorf("%s: attribute %q appears twice", desc, a.name)
		}
		seen[a.name] = true
		attr, err := convertAttr(a)
		if err != nil {
			return fmt.Errorf("%s: attribute %q: %w", desc, a.name, err)
		}
		l.Attrs = append(l.Attrs, attr)
	}
	if !defaultDomain(n.domain) {
		if seen["domain"] {
			return fmt.Errorf("%s: has an attribute named \"domain\", which clhost uses for the operator's domain %q", desc, n.domain)
		}
		l.Attrs = append(l.Attrs, model.Attr{Name: "domain", Kind: model.AttrString, Str: n.domain})
	}
	im.layers = append(im.layers, l)
	return nil
}

// dropoutInference accepts Dropout's training_mode input (opset 12 on) when it is a
// constant false: clhost runs inference only.
func (im *importer) dropoutInference(name string) error {
	c := im.consts[name]
	if c == nil {
		return fmt.Errorf("training_mode (input %q) must be a constant false when the model loads; clhost runs inference only", name)
	}
	is, err := c.Int64s()
	if err != nil || len(is) != 1 || is[0] != 0 {
		return fmt.Errorf("training_mode (input %q) is true: training is not supported; export the model for inference", name)
	}
	return nil
}

// trimEmpty drops trailing empty names, which ONNX uses for omitted optional inputs and
// outputs at the end of a list.
func trimEmpty(names []string) []string {
	for len(names) > 0 && names[len(names)-1] == "" {
		names = names[:len(names)-1]
	}
	return names
}

// constantNode folds a Constant node into a constant tensor named after its output.
func (im *importer) constantNode(desc string, n *nodeProto) error {
	if len(n.outputs) != 1 || n.outputs[0] == "" {
		return fmt.Errorf("%s must have exactly one named output", desc)
	}
	if len(n.attrs) != 1 {
		return fmt.Errorf("%s must have exactly one attribute, has %d", desc, len(n.attrs))
	}
	out := n.outputs[0]
	a := &n.attrs[0]
	t := model.Tensor{Name: out}
	le := binary.LittleEndian
	switch a.name {
	case "value":
		if a.t == nil {
			return fmt.Errorf("%s: attribute \"value\" holds no tensor", desc)
		}
		c, err := convertTensor(a.t, func(tp *tensorProto, size int) ([]byte, error) {
			return readExternal(im.dir, tp, size)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", desc, err)
		}
		c.Name = out
		t = c
	case "value_float":
		t.Type, t.Shape = model.Float32, []int{}
		t.Data = le.AppendUint32(nil, math.Float32bits(a.f))
	case "value_floats":
		t.Type, t.Shape = model.Float32, []int{len(a.floats)}
		t.Data = []byte{}
		for _, v := range a.floats {
			t.Data = le.AppendUint32(t.Data, math.Float32bits(v))
		}
	case "value_int":
		t.Type, t.Shape = model.Int64, []int{}
		t.Data = le.AppendUint64(nil, uint64(a.i))
	case "value_ints":
		t.Type, t.Shape = model.Int64, []int{len(a.ints)}
		t.Data = []byte{}
		for _, v := range a.ints {
			t.Data = le.AppendUint64(t.Data, uint64(v))
		}
	default:
		return fmt.Errorf("%s: attribute %q is not supported (clhost reads value, value_float(s) and value_int(s))", desc, a.name)
	}
	if err := im.produce(out, desc); err != nil {
		return err
	}
	im.addConst(t)
	return nil
}

// convertAttr maps an ONNX attribute onto a typed layer attribute.
func convertAttr(a *attrProto) (model.Attr, error) {
	out := model.Attr{Name: a.name}
	if a.name == "" {
		return out, errors.New("attribute has no name")
	}
	if a.refAttrName != "" {
		return out, fmt.Errorf("refers to function attribute %q, which only function bodies may", a.refAttrName)
	}
	typ := a.typ
	if typ == attrUndefined {
		// Old exporters left the type out; the one field that is set tells it.
		if len(a.present) != 1 {
			return out, errors.New("attribute has no type")
		}
		for k := range a.present {
			typ = k
		}
	}
	switch typ {
	case attrFloat:
		out.Kind, out.Float = model.AttrFloat, a.f
	case attrInt:
		out.Kind, out.Int = model.AttrInt, a.i
	case attrString:
		out.Kind, out.Str = model.AttrString, string(a.s)
	case attrFloats:
		out.Kind, out.Floats = model.AttrFloats, append([]float32{}, a.floats...)
	case attrInts:
		out.Kind, out.Ints = model.AttrInts, append([]int64{}, a.ints...)
	case attrTensor:
		// Outside Constant a tensor attribute (ConstantOfShape's value, for one) is
		// kept as a flat list of its values; the operator knows its shape.
		if a.t == nil {
			return out, errors.New("TENSOR attribute holds no tensor")
		}
		t, err := convertTensor(a.t, nil)
		if err != nil {
			return out, err
		}
		if out.Floats, out.Ints, err = tensorValues(&t); err != nil {
			return out, err
		}
		out.Kind = model.AttrInts
		if out.Floats != nil {
			out.Kind = model.AttrFloats
		}
	default:
		return out, fmt.Errorf("type %s cannot be a clhost layer attribute (int, float, string, their lists and tensors can)", attrTypeName(typ))
	}
	return out, nil
}

// tensorValues returns a constant's elements as floats (for float types) or integers.
func tensorValues(t *model.Tensor) ([]float32, []int64, error) {
	le := binary.LittleEndian
	n := t.Elements()
	if t.Type.Size() == 0 || len(t.Data) != n*t.Type.Size() {
		return nil, nil, fmt.Errorf("tensor %q has %d bytes for %d elements of %s", t.Name, len(t.Data), n, t.Type)
	}
	switch t.Type {
	case model.Float32:
		fs := make([]float32, n)
		for i := range fs {
			fs[i] = math.Float32frombits(le.Uint32(t.Data[4*i:]))
		}
		return fs, nil, nil
	case model.Float16:
		fs := make([]float32, n)
		for i := range fs {
			fs[i] = halfToFloat(le.Uint16(t.Data[2*i:]))
		}
		return fs, nil, nil
	}
	is := make([]int64, n)
	for i := range is {
		switch t.Type {
		case model.Int8:
			is[i] = int64(int8(t.Data[i]))
		case model.Uint8:
			is[i] = int64(t.Data[i])
		case model.Int32:
			is[i] = int64(int32(le.Uint32(t.Data[4*i:])))
		case model.Int64:
			is[i] = int64(le.Uint64(t.Data[8*i:]))
		}
	}
	return nil, is, nil
}

// halfToFloat converts IEEE 754 binary16 bits to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0:
		// Zero or subnormal: the value is frac × 2^-24, exact in float32.
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// resolveAliases rewires every reader of a folded Identity or Dropout to the tensor it
// copied. When the copy is a graph output, the producer's tensor takes the output's name
// instead, so the graph's outputs keep their names; where that cannot be (the source is a
// graph input or another graph output), the copy stays as an Identity layer.
func (im *importer) resolveAliases(outputs map[string]bool) {
	rename := map[string]string{}
	im.renames = rename
	for _, o := range im.g.outputs {
		y := o.name
		if _, ok := im.alias[y]; !ok {
			continue
		}
		x := im.resolve(y)
		if c := im.consts[x]; c != nil {
			cp := *c
			cp.Name = y
			im.addConst(cp)
			continue
		}
		if _, byLayer := im.layerOf[x]; byLayer && !outputs[x] && rename[x] == "" {
			rename[x] = y
			continue
		}
		base := im.aliasNode[y]
		if base == "" {
			base = "Identity_" + y
		}
		name := base
		for k := 2; im.names[name]; k++ {
			name = base + "_" + strconv.Itoa(k)
		}
		im.names[name] = true
		im.kept = append(im.kept, model.Layer{Name: name, Type: "Identity", Inputs: []string{x}, Outputs: []string{y}})
	}
	im.layers = append(im.layers, im.kept...)
	for i := range im.layers {
		l := &im.layers[i]
		for k, in := range l.Inputs {
			if in != "" {
				l.Inputs[k] = im.final(in)
			}
		}
		for k, o := range l.Outputs {
			if r, ok := rename[o]; ok {
				l.Outputs[k] = r
			}
		}
	}
}

// resolve follows folded copies back to the tensor they copy. The walk is bounded so a
// (malformed) cycle of Identity nodes ends; validation then reports the dangling name.
func (im *importer) resolve(n string) string {
	for i := 0; i <= len(im.alias); i++ {
		a, ok := im.alias[n]
		if !ok {
			return n
		}
		n = a
	}
	return n
}

// final is the name a tensor has in the imported model.
func (im *importer) final(n string) string {
	n = im.resolve(n)
	if r, ok := im.renames[n]; ok {
		return r
	}
	return n
}
