package serve

import (
	"context"
	"time"
)

// wireInput is an input tensor as a protocol received it: its header, and fill, which
// decodes its data (of the datatype the header names, checked against the model) into
// dst, failing unless the data holds exactly len(dst) elements.
type wireInput struct {
	name     string
	datatype string
	shape    []int64
	fill     func(dst []float32) error
	// check, when set, tells whether the data holds exactly elems values without
	// decoding it; unset, raw's length is checked. It runs before the tensor is
	// allocated: a request may claim a shape far larger than the bytes it sent.
	check func(elems int) error
	// raw is the input's binary data (little-endian), floats its typed FP32 contents,
	// when it came that way: FP32 data is then used where it lies (view).
	raw    []byte
	floats []float32
}

// view returns the input's data without a copy when it is FP32 data of exactly elems
// values that the machine reads as float32 where it lies; nil otherwise.
func (in *wireInput) view(elems int) []float32 {
	if in.datatype != "FP32" || elems == 0 {
		return nil
	}
	if in.floats != nil {
		if len(in.floats) == elems {
			return in.floats
		}
		return nil
	}
	if len(in.raw) != 4*elems {
		return nil
	}
	return floatView(in.raw)
}

// holds checks that the input's data holds exactly elems values.
func (in *wireInput) holds(elems int) error {
	if in.check != nil {
		return in.check(elems)
	}
	size := typeSize(in.datatype)
	if len(in.raw) != elems*size {
		return errorf(KindInvalid, "input %q: %d bytes of data, its shape of %d %s elements takes %d", in.name, len(in.raw), elems, in.datatype, elems*size)
	}
	return nil
}

// unknownModel labels metrics of requests for models the server does not have, so a
// client cannot grow the label set.
const unknownModel = "unknown"

// lookup finds a model by name and version ("" or "1": models have one version).
func (s *Server) lookup(name, version string) (*servedModel, error) {
	m, ok := s.models[name]
	if !ok {
		return nil, errorf(KindNotFound, "unknown model %q (models: %s)", name, s.modelNames())
	}
	if version != "" && version != modelVersion {
		return nil, errorf(KindNotFound, "model %q has no version %q (its only version is %q)", name, version, modelVersion)
	}
	return m, nil
}

// modelVersion is the one version every model has.
const modelVersion = "1"

func (s *Server) modelNames() string {
	var b []byte
	for i, m := range s.order {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, m.name...)
	}
	return string(b)
}

// hold is a new request's empty hold on the server's budget of bytes in flight.
func (s *Server) hold() *hold { return &hold{b: s.budget} }

// inferHeld runs one request that holds h, which its caller releases once the answer is
// written (the answer's encoding may refer to the request's memory): it finds the model,
// counts the request in (unless the server drains), lets parse read the request's
// inputs, checks and decodes them (adding them and the outputs to h), queues the request
// and waits for its answer. The reply's outputs follow the model's output order. While
// parse runs, the model's batches know a request is arriving.
func (s *Server) inferHeld(ctx context.Context, h *hold, name, version string, parse func(m *servedModel) ([]wireInput, error)) (*servedModel, *reply, error) {
	m, err := s.lookup(name, version)
	if err != nil {
		s.metrics.rejected(unknownModel, err)
		return nil, nil, err
	}
	if err := m.notServed(); err != nil {
		s.metrics.rejected(m.name, err)
		return m, nil, err
	}
	if err := s.accept(); err != nil {
		s.metrics.rejected(m.name, err)
		return m, nil, err
	}
	defer s.done()
	m.begun.Add(1)
	ins, err := parse(m)
	var r *request
	if err == nil {
		r, err = s.decode(ctx, m, ins, h)
	}
	if err != nil {
		m.ended.Add(1)
		m.q.signal() // a batch may be waiting for this request
		s.metrics.rejected(m.name, err)
		return m, nil, err
	}
	// Queued before it counts as arrived, so that no batch that waits for it leaves
	// without it. The handler then runs the model's next batch itself when it is due
	// and the device for it is free: a lone request runs at once, without the
	// hand-offs to the batcher and a device's worker. The batcher is told of what is
	// left.
	m.q.push(r)
	m.ended.Add(1)
	nb := s.next(m, nil)
	m.q.signalIfWaiting()
	if nb.dev != nil {
		s.execute(nb.dev, nb.job)
	}
	rep := <-r.done
	s.metrics.answered(m.name, r, rep)
	if rep.err != nil {
		return m, nil, rep.err
	}
	return m, rep, nil
}

// decode turns a request's inputs into a queued request's data.
// Nothing is allocated for an input before its data is known to hold its shape's
// values and h has taken the bytes.
func (s *Server) decode(ctx context.Context, m *servedModel, ins []wireInput, h *hold) (*request, error) {
	r := &request{model: m, ctx: ctx, inputs: make([][]float32, len(m.inputs)), done: make(chan *reply, 1), items: -1}
	// A request's elements are bounded by its bytes: at least one per element, in
	// any encoding.
	maxElems := s.opts.MaxBodyBytes
	for _, in := range ins {
		i, err := m.inputIndex(in.name)
		if err != nil {
			return nil, err
		}
		if r.inputs[i] != nil {
			return nil, errorf(KindInvalid, "input %q is given twice", in.name)
		}
		items, elems, err := m.checkInput(i, in.datatype, in.shape, maxElems)
		if err != nil {
			return nil, err
		}
		if r.items >= 0 && items != r.items {
			return nil, errorf(KindInvalid, "input %q: batch of %d, other inputs have %d (dim 0 must agree)", in.name, items, r.items)
		}
		r.items = items
		if err := in.holds(elems); err != nil {
			return nil, err
		}
		data := in.view(elems)
		if data == nil {
			if err := h.take(4 * int64(elems)); err != nil {
				return nil, err
			}
			data = make([]float32, elems)
			if err := in.fill(data); err != nil {
				return nil, errorf(KindInvalid, "%v", err)
			}
		}
		r.inputs[i] = data
	}
	for i, t := range m.inputs {
		if r.inputs[i] == nil {
			return nil, errorf(KindInvalid, "input %q (%s %v) is missing", t.name, t.datatype, t.metaShape(m.batched))
		}
	}
	// The outputs, split from the batch's per request.
	var out int64
	for _, t := range m.outputs {
		out += int64(t.row)
	}
	if err := h.take(4 * out * int64(max(r.items, 1))); err != nil {
		return nil, err
	}
	r.arrived = time.Now()
	return r, nil
}
