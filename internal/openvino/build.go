package openvino

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// The walk over the IR's graph: layers and edges checked, ordered, and translated one
// at a time (ops.go), each output checked against the dims its port declares.

type portKey struct{ layer, port int }

// val is what an output port carries once read: a tensor of the model, its shape, and
// its data when it is known at load time.
type val struct {
	name  string
	shape []int
	c     *model.Tensor // non-nil for a constant
}

type reader struct {
	opt    Options
	net    *xmlNet
	bin    []byte
	byID   map[int]*xmlLayer
	from   map[portKey]portKey // input port → the output port feeding it
	users  map[portKey]int     // output port → how many input ports read it
	vals   map[portKey]*val
	names  map[string]bool // tensor names in use
	batch  int
	shapes map[string][]int

	tensors    []model.Tensor // activations, in the order they appear
	consts     map[string]*model.Tensor
	constOrder []string
	layers     []model.Layer
	inputs     []string
	outputs    []string
	custom     map[string]bool // types run as custom layers
	unknown    map[string]bool // types nothing implements, read as custom (KeepUnknown)
	layerNames map[string]bool
	tensorAt   map[string]int // activation name → index in tensors
	producer   map[string]int // activation name → index of the layer writing it
	nParams    int
	portOf     map[string]portKey // an output port's tensor name → the port
}

func (o Options) build(net *xmlNet, bin []byte, name string) (*model.Model, error) {
	if o.Batch < 0 {
		return nil, fmt.Errorf("batch size %d is negative", o.Batch)
	}
	r := &reader{opt: o, net: net, bin: bin, byID: map[int]*xmlLayer{}, from: map[portKey]portKey{},
		users: map[portKey]int{}, vals: map[portKey]*val{}, names: map[string]bool{},
		shapes: map[string][]int{}, consts: map[string]*model.Tensor{}, custom: map[string]bool{}, unknown: map[string]bool{},
		layerNames: map[string]bool{}, tensorAt: map[string]int{}, producer: map[string]int{}, portOf: map[string]portKey{}}
	for i := range net.Layers {
		if net.Layers[i].Type == "Parameter" {
			r.nParams++
		}
	}
	r.batch = o.Batch
	if r.batch == 0 {
		r.batch = 1
	}
	order, err := r.link()
	if err != nil {
		return nil, err
	}
	if err := r.unresolved(order); err != nil {
		return nil, err
	}
	r.nameTensors(order)
	for _, l := range order {
		if err := r.read(l); err != nil {
			return nil, err
		}
	}
	if len(r.outputs) == 0 {
		return nil, fmt.Errorf("the IR has no Result layer: nothing is an output")
	}
	m := &model.Model{Name: net.Name, Layers: r.layers, Inputs: r.inputs, Outputs: r.outputs}
	if m.Name == "" {
		m.Name = name
	}
	r.floatKernelConsts(m)
	used := map[string]bool{}
	for i := range m.Layers {
		for _, in := range m.Layers[i].Inputs {
			used[in] = true
		}
	}
	for _, out := range m.Outputs {
		used[out] = true
	}
	for _, in := range r.inputs {
		m.Tensors = append(m.Tensors, model.Tensor{Name: in, Type: model.Float32, Shape: r.shapes[in]})
	}
	for _, n := range r.constOrder {
		if used[n] {
			m.Tensors = append(m.Tensors, *r.consts[n])
		}
	}
	m.Tensors = append(m.Tensors, r.tensors...)
	custom := func(typ string) bool { return r.custom[typ] }
	if err := graph.InferShapesExcept(m, custom); err != nil {
		return nil, err
	}
	if err := model.Validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// link checks ids, ports and edges, and returns the layers in an order where each comes
// after those it reads: the file's order where it allows, since the serializer may write
// ids in any order.
func (r *reader) link() ([]*xmlLayer, error) {
	inPorts := map[portKey]bool{}
	outPorts := map[portKey]bool{}
	for i := range r.net.Layers {
		l := &r.net.Layers[i]
		if prev, dup := r.byID[l.id]; dup {
			return nil, fmt.Errorf("%s and %s have the same id", prev.desc(), l.desc())
		}
		r.byID[l.id] = l
		for _, p := range l.Inputs {
			k := portKey{l.id, p.id}
			if inPorts[k] || outPorts[k] {
				return nil, fmt.Errorf("%s: port %d appears twice", l.desc(), p.id)
			}
			inPorts[k] = true
		}
		for _, p := range l.Outputs {
			k := portKey{l.id, p.id}
			if inPorts[k] || outPorts[k] {
				return nil, fmt.Errorf("%s: port %d appears twice", l.desc(), p.id)
			}
			outPorts[k] = true
		}
	}
	num := func(s, what string, i int) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("edge %d: %s %q is not a number", i, what, s)
		}
		return v, nil
	}
	for i, e := range r.net.Edges {
		var vs [4]int
		var err error
		for k, f := range []struct{ s, what string }{{e.FromLayer, "from-layer"}, {e.FromPort, "from-port"}, {e.ToLayer, "to-layer"}, {e.ToPort, "to-port"}} {
			if vs[k], err = num(f.s, f.what, i); err != nil {
				return nil, err
			}
		}
		from, to := portKey{vs[0], vs[1]}, portKey{vs[2], vs[3]}
		fl, tl := r.byID[from.layer], r.byID[to.layer]
		switch {
		case fl == nil:
			return nil, fmt.Errorf("edge %d (%d:%d → %d:%d) starts at layer %d, which the IR does not have", i, vs[0], vs[1], vs[2], vs[3], from.layer)
		case tl == nil:
			return nil, fmt.Errorf("edge %d (%d:%d → %d:%d) ends at layer %d, which the IR does not have", i, vs[0], vs[1], vs[2], vs[3], to.layer)
		case !outPorts[from]:
			return nil, fmt.Errorf("edge %d starts at port %d of %s, which is not one of its output ports", i, from.port, fl.desc())
		case !inPorts[to]:
			return nil, fmt.Errorf("edge %d ends at port %d of %s, which is not one of its input ports", i, to.port, tl.desc())
		}
		if prev, ok := r.from[to]; ok {
			return nil, fmt.Errorf("%s: input port %d has two producers: port %d of %s and port %d of %s", tl.desc(), to.port, prev.port, r.byID[prev.layer].desc(), from.port, fl.desc())
		}
		r.from[to] = from
		r.users[from]++
	}
	// Kahn's order, taking the ready layer that comes first in the file: the file's
	// order where it allows. A heap of file positions keeps it linear in the layers and
	// edges, however the file orders them (a chain written backwards took quadratic time
	// with passes over the file).
	pending := map[int]int{}
	readers := map[int][]int{}
	at := map[int]int{} // layer id → its position in the file
	for i := range r.net.Layers {
		l := &r.net.Layers[i]
		at[l.id] = i
		for _, p := range l.Inputs {
			src, ok := r.from[portKey{l.id, p.id}]
			if !ok {
				return nil, fmt.Errorf("%s: input port %d is not connected (no edge ends there)", l.desc(), p.id)
			}
			pending[l.id]++
			readers[src.layer] = append(readers[src.layer], l.id)
		}
	}
	ready := &positions{}
	for i := range r.net.Layers {
		if pending[r.net.Layers[i].id] == 0 {
			heap.Push(ready, i)
		}
	}
	var order []*xmlLayer
	done := map[int]bool{}
	for ready.Len() > 0 {
		l := &r.net.Layers[heap.Pop(ready).(int)]
		done[l.id] = true
		order = append(order, l)
		for _, u := range readers[l.id] {
			if pending[u]--; pending[u] == 0 {
				heap.Push(ready, at[u])
			}
		}
	}
	if len(order) < len(r.net.Layers) {
		return nil, r.cycleError(done)
	}
	return order, nil
}

// nameTensors gives every output port its tensor's name: the first of the port's names
// (the names OpenVINO's API knows the tensor by), else, as OpenVINO's older API named
// outputs of IRs without names (v10), the producing layer's name, ".port" added for a
// layer of several outputs; made unique.
func (r *reader) nameTensors(order []*xmlLayer) {
	want := map[portKey]string{}
	for _, l := range order {
		for _, p := range l.Outputs {
			if n := portNames(p.Names); len(n) > 0 {
				want[portKey{l.id, p.id}] = n[0]
			}
		}
	}
	taken := map[string]bool{}
	for _, n := range want {
		taken[n] = true
	}
	for _, l := range order {
		for _, p := range l.Outputs {
			k := portKey{l.id, p.id}
			if n, ok := want[k]; ok && !r.names[n] {
				r.names[n] = true
				r.vals[k] = &val{name: n}
				r.portOf[n] = k
				continue
			}
			base := l.Name
			if base == "" {
				base = l.Type + "_" + l.ID
			}
			if len(l.Outputs) > 1 {
				base += "." + strconv.Itoa(p.id)
			}
			n := base
			for i := 2; r.names[n] || taken[n]; i++ {
				n = base + "_" + strconv.Itoa(i)
			}
			r.names[n] = true
			r.vals[k] = &val{name: n}
			r.portOf[n] = k
		}
	}
}

// fresh is a new tensor name for an intermediate of a layer's translation.
func (r *reader) fresh(base string) string {
	n := base
	for i := 2; r.names[n]; i++ {
		n = base + "_" + strconv.Itoa(i)
	}
	r.names[n] = true
	return n
}

// read translates one layer.
func (r *reader) read(l *xmlLayer) error {
	ins := make([]*val, len(l.Inputs))
	for k, p := range l.Inputs {
		src := r.from[portKey{l.id, p.id}]
		v := r.vals[src]
		if v == nil || v.shape == nil {
			return fmt.Errorf("%s: input port %d reads port %d of %s, which carries nothing clhost keeps", l.desc(), p.id, src.port, r.byID[src.layer].desc())
		}
		ins[k] = v
	}
	outs := make([]*val, len(l.Outputs))
	for k, p := range l.Outputs {
		outs[k] = r.vals[portKey{l.id, p.id}]
	}
	c := &lctx{r: r, l: l, ins: ins, outs: outs}
	if err := c.translate(); err != nil {
		return fmt.Errorf("%s: %w", l.desc(), err)
	}
	for k, p := range l.Outputs {
		v := outs[k]
		if v.shape == nil {
			if r.users[portKey{l.id, p.id}] > 0 {
				return fmt.Errorf("%s: output port %d is read, but clhost does not compute it", l.desc(), p.id)
			}
			continue
		}
		if !dimsAgree(p.dims, v.shape) {
			return fmt.Errorf("%s: output port %d: the IR declares %s, clhost's shape inference gives %s", l.desc(), p.id, dimsString(p.dims), dimsString(v.shape))
		}
	}
	return nil
}

func dimsAgree(declared, got []int) bool {
	if len(declared) != len(got) {
		return false
	}
	for i, d := range declared {
		if d >= 0 && d != got[i] {
			return false
		}
	}
	return true
}

func dimsString(d []int) string {
	s := make([]string, len(d))
	for i, v := range d {
		if v < 0 {
			s[i] = "?"
		} else {
			s[i] = strconv.Itoa(v)
		}
	}
	return "[" + strings.Join(s, ",") + "]"
}

// addConst records a constant tensor and returns it.
func (r *reader) addConst(t model.Tensor) *model.Tensor {
	if t.Data == nil {
		t.Data = []byte{}
	}
	p := &t
	r.consts[t.Name] = p
	r.constOrder = append(r.constOrder, t.Name)
	r.shapes[t.Name] = t.Shape
	return p
}

// unresolved refuses, all at once, the layer types neither a built-in mapping nor a
// custom layer implements, naming the layers of each and what to write.
func (r *reader) unresolved(order []*xmlLayer) error {
	byType := map[string][]string{}
	var types []string
	var versions []string
	for _, l := range order {
		if r.isCustom(l.Type) {
			continue
		}
		if _, ok := ops[l.Type]; ok {
			if _, known := opsetNumber(l.Version); known {
				continue
			}
			if l.Version == "" || isStdOpset(l.Version) {
				versions = append(versions, fmt.Sprintf("%s: unknown op version %q", l.desc(), l.Version))
				continue
			}
		}
		if _, ok := byType[l.Type]; !ok {
			types = append(types, l.Type)
		}
		byType[l.Type] = append(byType[l.Type], fmt.Sprintf("%s %q", l.ID, l.Name))
	}
	if len(versions) > 0 {
		return fmt.Errorf("%s (clhost reads opset1 to opset%d)", strings.Join(versions, "; "), maxOpset)
	}
	if len(types) == 0 {
		return nil
	}
	if r.opt.KeepUnknown {
		for _, t := range types {
			r.unknown[t] = true
		}
		return nil
	}
	slices.Sort(types)
	var parts []string
	for _, t := range types {
		ls := byType[t]
		if len(ls) > 4 {
			ls = append(ls[:4], fmt.Sprintf("%d more", len(byType[t])-4))
		}
		parts = append(parts, fmt.Sprintf("%s (layers %s)", t, strings.Join(ls, ", ")))
	}
	return fmt.Errorf("no built-in op and no custom layer for %s: write a CustomLayer configuration whose name is the layer type (<CustomLayer name=%q type=\"SimpleGPU\" version=\"1\">, its <data> attributes read by <Define param=...>) and load it with -c FILE.xml",
		strings.Join(parts, "; "), types[0])
}

func (r *reader) isCustom(typ string) bool {
	return r.opt.Custom != nil && r.opt.Custom(typ)
}

const maxOpset = 16

// opsetNumber reads version="opsetN".
func opsetNumber(v string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(v, "opset"))
	if !strings.HasPrefix(v, "opset") || err != nil || n < 1 || n > maxOpset {
		return 0, false
	}
	return n, true
}

// isStdOpset says whether a version names one of OpenVINO's own opsets (known or not);
// anything else (extension, a custom opset name) marks an operation of an extension.
func isStdOpset(v string) bool {
	_, err := strconv.Atoi(strings.TrimPrefix(v, "opset"))
	return strings.HasPrefix(v, "opset") && err == nil
}

// floatKernelConsts gives the built-in layers float32 copies of the integer constants
// their kernels read (Gather's indices, an integer operand): every activation is float32.
// Custom layers keep the IR's types, which their kernels are written for.
func (r *reader) floatKernelConsts(m *model.Model) {
	copies := map[string]string{}
	for i := range m.Layers {
		l := &m.Layers[i]
		if r.custom[l.Type] {
			continue
		}
		for k, in := range l.Inputs {
			c := r.consts[in]
			if c == nil || !c.Type.IsInteger() {
				continue
			}
			if cp, ok := copies[in]; ok {
				l.Inputs[k] = cp
				continue
			}
			a := toArr(c)
			name := r.fresh(in + "/f32")
			f := a.tensor(name, model.Float32)
			r.addConst(f)
			copies[in] = name
			l.Inputs[k] = name
		}
	}
}

// positions is a min-heap of file positions (container/heap).
type positions []int

func (p positions) Len() int           { return len(p) }
func (p positions) Less(i, j int) bool { return p[i] < p[j] }
func (p positions) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *positions) Push(x any)        { *p = append(*p, x.(int)) }
func (p *positions) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}
