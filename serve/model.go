package serve

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/clhost/clhost/model"
)

// tensorMeta describes a model input or output as the protocol shows it.
type tensorMeta struct {
	name     string
	datatype string
	// shape is the tensor's shape at one item when the model batches (dim 0 is 1 and
	// metadata shows it as -1), its whole fixed shape otherwise.
	shape []int
	// row is the number of elements per item: per row of dim 0 when the model batches,
	// the whole tensor otherwise.
	row int
}

// metaShape is the shape metadata reports: -1 for a batch dimension.
func (t *tensorMeta) metaShape(batched bool) []int64 {
	s := make([]int64, len(t.shape))
	for i, d := range t.shape {
		s[i] = int64(d)
	}
	if batched {
		s[0] = -1
	}
	return s
}

// servedModel is one model of the server: what the protocol shows of it, its queue,
// and its compiled networks on every device.
type servedModel struct {
	name, platform  string
	inputs, outputs []tensorMeta
	// batched says requests are made of items (rows of dim 0) that run together in
	// batches of any compiled size; otherwise each request is one inference at the
	// model's own shapes.
	batched bool
	// sizes are the batch sizes compiled on every device, ascending ({1} when the
	// model is not batched: one request per inference).
	sizes     []int
	instances []*instance // by device index
	q         queue
	// begun and ended count the requests for the model whose reading and checking by
	// a handler has begun and ended: a batch may wait for those arriving when it
	// became due (queue.due).
	begun, ended atomic.Int64
	// unready is why the model is not served (it failed to load, or a custom layer
	// failed its check at load: checkCustomLayers); "" when it is.
	unready string
}

// notServed is the answer to any request for the model but its readiness while it is
// not served (it failed to load or its check), nil while it is.
func (m *servedModel) notServed() error {
	if m.unready == "" {
		return nil
	}
	return errorf(KindUnavailable, "model %q is not served: %s", m.name, m.unready)
}

// newTensorMetas describes the tensors names of m; types, where they name one, replace
// a tensor's own element type (Source.InputTypes).
func newTensorMetas(m *model.Model, names []string, batched bool, types map[string]model.DataType) ([]tensorMeta, error) {
	out := make([]tensorMeta, len(names))
	for i, name := range names {
		t := m.Tensor(name)
		if t == nil {
			return nil, fmt.Errorf("model %q: tensor %q has no declared shape", m.Name, name)
		}
		row := 1
		for _, d := range t.Shape {
			row *= d
		}
		if batched {
			row /= t.Shape[0]
		}
		typ := t.Type
		if declared, ok := types[name]; ok {
			typ = declared
		}
		out[i] = tensorMeta{name: name, datatype: protocolType(typ), shape: slices.Clone(t.Shape), row: row}
	}
	return out, nil
}

// inputIndex finds a model input by name.
func (m *servedModel) inputIndex(name string) (int, error) {
	for i := range m.inputs {
		if m.inputs[i].name == name {
			return i, nil
		}
	}
	return 0, errorf(KindInvalid, "model %q has no input %q (its inputs: %s)", m.name, name, names(m.inputs))
}

// outputIndex finds a model output by name.
func (m *servedModel) outputIndex(name string) (int, error) {
	for i := range m.outputs {
		if m.outputs[i].name == name {
			return i, nil
		}
	}
	return 0, errorf(KindInvalid, "model %q has no output %q (its outputs: %s)", m.name, name, names(m.outputs))
}

func names(ts []tensorMeta) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprintf("%q", t.name)
	}
	return strings.Join(s, ", ")
}

// checkInput checks an input tensor's datatype and shape against the model and returns
// its number of items and elements. maxElems bounds the elements a request may carry.
func (m *servedModel) checkInput(i int, datatype string, shape []int64, maxElems int64) (items, elems int, err error) {
	t := &m.inputs[i]
	if datatype != t.datatype {
		return 0, 0, errorf(KindInvalid, "input %q: datatype %q, the model takes %s", t.name, datatype, t.datatype)
	}
	want := t.metaShape(m.batched)
	bad := len(shape) != len(want)
	for k := 0; !bad && k < len(shape); k++ {
		bad = shape[k] < 1 || (want[k] >= 0 && shape[k] != want[k])
	}
	if bad {
		how := ""
		if m.batched {
			how = " (-1: any batch of 1 or more)"
		}
		return 0, 0, errorf(KindInvalid, "input %q: shape %s, the model takes %v%s", t.name, shapeText(shape), want, how)
	}
	items = 1
	if m.batched {
		if shape[0] > maxElems/int64(max(t.row, 1)) {
			return 0, 0, errorf(KindInvalid, "input %q: shape %s holds more elements than a request may carry (%d)", t.name, shapeText(shape), maxElems)
		}
		items = int(shape[0])
	}
	return items, items * t.row, nil
}
