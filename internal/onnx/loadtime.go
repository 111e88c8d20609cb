package onnx

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/model"
)

// loadTimeSlots lists, per operator, the inputs whose values clhost needs when it loads the
// model: they decide output shapes or act as attributes (the form older opsets give them
// in), and kernels never read them. The importer turns constant ones into attributes;
// anything else there is refused.
var loadTimeSlots = map[string][]int{
	"Reshape":         {1},
	"Slice":           {1, 2, 3, 4},
	"Pad":             {1, 2, 3},
	"Resize":          {1, 2, 3},
	"Upsample":        {1},
	"Tile":            {1},
	"Expand":          {1},
	"Squeeze":         {1},
	"Unsqueeze":       {1},
	"Split":           {1},
	"ReduceMean":      {1},
	"ReduceSum":       {1},
	"ReduceMax":       {1},
	"ReduceMin":       {1},
	"ReduceProd":      {1},
	"ReduceL1":        {1},
	"ReduceL2":        {1},
	"ReduceSumSquare": {1},
	"ReduceLogSum":    {1},
	"ReduceLogSumExp": {1},
	"ConstantOfShape": {0},
	"Range":           {0, 1, 2},
	"TopK":            {1},
	"OneHot":          {1},
	"CumSum":          {1},
	"Dropout":         {2}, // training_mode
	"Trilu":           {1},
}

// readsAtLoadTime reports whether input i of a default-domain node of type op is read when
// the model loads.
func readsAtLoadTime(op string, i int) bool { return slices.Contains(loadTimeSlots[op], i) }

// passThrough lists operators whose outputs carry their inputs' values (integer shape
// arithmetic): a graph input that reaches a load-time slot through them is needed at load
// time too. Shape and Size read only their input's shape, so they are not here.
var passThrough = map[string]bool{
	"Cast": true, "Gather": true, "Concat": true, "Unsqueeze": true, "Squeeze": true,
	"Slice": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Reshape": true,
	"Identity": true, "Neg": true, "Abs": true, "Max": true, "Min": true, "Where": true,
	"Equal": true, "Floor": true, "Ceil": true, "Expand": true, "Transpose": true,
}

// Summary describes an ONNX model's interface without importing it.
type Summary struct {
	Opset int64 // of the default domain; -1 when none is imported
	// Inputs are the graph inputs that are not initializers, Outputs the graph outputs,
	// in graph order.
	Inputs, Outputs []string
	// OpTypes are the distinct operator types of the graph's nodes, in first-use order;
	// those of other domains than the default one are written domain:type.
	OpTypes []string
	// LoadTimeInputs are the graph inputs whose values clhost must know when it loads the
	// model: those that reach an input deciding a shape or an attribute (a Reshape's
	// target shape, a Slice's starts, a Resize's scales), directly or through integer
	// arithmetic. Give their values in Options.Constants.
	LoadTimeInputs []string
	// Types are the element types the graph declares for its inputs and outputs, as
	// clhost reads them (DOUBLE as float32, BOOL as uint8, ...); a tensor of a type
	// clhost does not read is absent.
	Types map[string]model.DataType
}

// IntegerInputs are the graph inputs declared as 8-, 32- or 64-bit integers, by name:
// token ids and the like, which import as float32 like every activation but which
// clients send as integers. Nil when there are none.
func (s *Summary) IntegerInputs() map[string]model.DataType {
	var out map[string]model.DataType
	for _, in := range s.Inputs {
		if t, ok := s.Types[in]; ok && t.IsInteger() {
			if out == nil {
				out = map[string]model.DataType{}
			}
			out[in] = t
		}
	}
	return out
}

// Inspect reads an ONNX model's opset, inputs, outputs and operator types.
func Inspect(data []byte) (*Summary, error) {
	mp, err := decodeModel(data)
	if err != nil {
		return nil, fmt.Errorf("not a readable ONNX file: %w", err)
	}
	if mp.graph == nil {
		return nil, fmt.Errorf("no graph in the file (is it an ONNX model?)")
	}
	g := mp.graph
	s := &Summary{Opset: -1, Types: map[string]model.DataType{}}
	for _, op := range mp.opsets {
		if defaultDomain(op.domain) {
			s.Opset = op.version
		}
	}
	producer := map[string]*nodeProto{}
	seenOp := map[string]bool{}
	for i := range g.nodes {
		n := &g.nodes[i]
		for _, o := range n.outputs {
			producer[o] = n
		}
		typ := n.opType
		if !defaultDomain(n.domain) {
			typ = n.domain + ":" + typ
		}
		if !seenOp[typ] {
			seenOp[typ] = true
			s.OpTypes = append(s.OpTypes, typ)
		}
	}
	needed := map[string]bool{}
	var mark func(name string)
	mark = func(name string) {
		if name == "" || needed[name] {
			return
		}
		needed[name] = true
		n := producer[name]
		if n == nil || !defaultDomain(n.domain) || !passThrough[n.opType] {
			return
		}
		for _, in := range n.inputs {
			mark(in)
		}
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		if !defaultDomain(n.domain) {
			continue
		}
		for k, in := range n.inputs {
			if readsAtLoadTime(n.opType, k) {
				mark(in)
			}
		}
	}
	inits := map[string]bool{}
	for i := range g.initializers {
		inits[g.initializers[i].name] = true
	}
	for _, v := range append(slices.Clone(g.inputs), g.outputs...) {
		if t, err := modelType(v.elemType); err == nil && v.isTensor {
			s.Types[v.name] = t
		}
	}
	for _, v := range g.inputs {
		if inits[v.name] {
			continue
		}
		s.Inputs = append(s.Inputs, v.name)
		if needed[v.name] {
			s.LoadTimeInputs = append(s.LoadTimeInputs, v.name)
		}
	}
	for _, v := range g.outputs {
		s.Outputs = append(s.Outputs, v.name)
	}
	return s, nil
}
