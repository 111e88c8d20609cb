package host

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// The CPU side of a check: reading the device's values after an inference, each built-in
// layer's reference on them, and the whole network computed by the references.

// checker reads the device's values of tensors after an inference (each once).
type checker struct {
	n      *Network
	tol    Tolerance
	device map[string]*builtinkernels.HostTensor
}

// read returns a tensor's value: the device's for activations, the model's for constants.
func (c *checker) read(name string) (*builtinkernels.HostTensor, error) {
	if v, ok := c.device[name]; ok {
		return v, nil
	}
	n := c.n
	t, ok := n.tensors[name]
	if !ok || t.buf == nil || n.isConstant(name) {
		mt := n.Model.Tensor(name)
		if mt == nil || !mt.IsConst() {
			return nil, fmt.Errorf("tensor %q has no value on the device", name)
		}
		v := &builtinkernels.HostTensor{Shape: mt.Shape, Data: constFloats(mt)}
		c.device[name] = v
		return v, nil
	}
	data, err := n.readFloats(t)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", name, err)
	}
	v := &builtinkernels.HostTensor{Shape: t.shape, Data: data}
	c.device[name] = v
	return v, nil
}

// readAsLayer is read for layer l's input: a constant that l's half plan reads is
// rounded to half first, as the device holds it (fp16), so that the layer's reference
// computes on the weights its kernels had.
func (c *checker) readAsLayer(l *model.Layer, name string) (*builtinkernels.HostTensor, error) {
	v, err := c.read(name)
	if err != nil || !c.n.halfLayers[l.Name] {
		return v, err
	}
	if mt := c.n.Model.Tensor(name); mt == nil || !mt.IsConst() || !(mt.Type == model.Float32 || mt.Type == model.Float16) {
		return v, nil
	}
	key := "\x00half\x00" + name
	if h, ok := c.device[key]; ok {
		return h, nil
	}
	h := &builtinkernels.HostTensor{Shape: v.Shape, Data: make([]float32, len(v.Data))}
	for i, f := range v.Data {
		h.Data[i] = model.HalfToFloat32(model.Float32ToHalf(f))
	}
	c.device[key] = h
	return h, nil
}

// refJob is one built-in layer's CPU reference with the device's values of its inputs
// and outputs, read beforehand so that jobs run in parallel.
type refJob struct {
	at       int // the layer's index in CheckReport.Layers
	l        *model.Layer
	op       builtinkernels.Op
	ins, got []*builtinkernels.HostTensor
	shapes   [][]int
}

// referenceJob reads what layer l's reference needs from the device.
func (c *checker) referenceJob(l *model.Layer, at int) (*refJob, error) {
	im := c.n.res.layer(l)
	if !im.builtin() {
		return nil, fmt.Errorf("layer %q (%s) runs no built-in", l.Name, l.Type)
	}
	op := im.op
	j := &refJob{at: at, l: l, op: op, ins: make([]*builtinkernels.HostTensor, len(l.Inputs))}
	for i, name := range l.Inputs {
		if name == "" {
			continue
		}
		v, err := c.readAsLayer(l, name)
		if err != nil {
			return nil, err
		}
		j.ins[i] = v
	}
	for _, name := range l.Outputs {
		j.shapes = append(j.shapes, c.n.Model.Tensor(name).Shape)
		v, err := c.read(name)
		if err != nil {
			return nil, err
		}
		j.got = append(j.got, v)
	}
	return j, nil
}

// run computes the layer's CPU reference and compares each output with the device's.
func (j *refJob) run(tol Tolerance) ([]OutputError, error) {
	ref, err := j.op.Reference(j.l, j.ins, j.shapes)
	if err != nil {
		return nil, fmt.Errorf("CPU reference: %v", err)
	}
	var out []OutputError
	for i, name := range j.l.Outputs {
		if i >= len(ref) {
			break
		}
		out = append(out, compare(name, j.got[i].Data, ref[i].Data, j.got[i].Shape, tol))
	}
	return out, nil
}

// wholeNetwork computes the graph outputs on the CPU path — built-in layers by their
// references, custom layers by their expected values or else the device's — and
// compares them with the device's outputs.
func (c *checker) wholeNetwork(r *CheckReport, inputs, outs map[string]*Tensor, expect map[string]*Tensor) error {
	n := c.n
	values := map[string]*builtinkernels.HostTensor{}
	for name, t := range inputs {
		values[name] = &builtinkernels.HostTensor{Shape: t.Shape, Data: t.Data}
	}
	get := func(name string) (*builtinkernels.HostTensor, error) {
		if v, ok := values[name]; ok {
			return v, nil
		}
		t := n.Model.Tensor(name)
		if t == nil || !t.IsConst() {
			return nil, fmt.Errorf("tensor %q has no value on the CPU path", name)
		}
		v := &builtinkernels.HostTensor{Shape: t.Shape, Data: constFloats(t)}
		values[name] = v
		return v, nil
	}
	for _, s := range n.steps {
		l := n.layer(s.layer)
		if l == nil {
			continue
		}
		if s.custom {
			all := true
			for _, name := range l.Outputs {
				_, ok := expect[name]
				all = all && ok
			}
			for _, name := range l.Outputs {
				if all {
					e := expect[name]
					values[name] = &builtinkernels.HostTensor{Shape: n.Model.Tensor(name).Shape, Data: e.Data}
					continue
				}
				v, err := c.read(name)
				if err != nil {
					return fmt.Errorf("layer %q: %w", l.Name, err)
				}
				values[name] = v
			}
			if all {
				r.FromExpected = append(r.FromExpected, l.Name)
			} else {
				r.FromDevice = append(r.FromDevice, l.Name)
			}
			continue
		}
		op := n.res.layer(l).op
		if op == nil {
			return fmt.Errorf("layer %q (%s) runs no built-in", l.Name, l.Type)
		}
		ins := make([]*builtinkernels.HostTensor, len(l.Inputs))
		for i, name := range l.Inputs {
			if name == "" {
				continue
			}
			v, err := get(name)
			if err != nil {
				return fmt.Errorf("layer %q: %w", l.Name, err)
			}
			ins[i] = v
		}
		outShapes := make([][]int, len(l.Outputs))
		for i, name := range l.Outputs {
			outShapes[i] = n.Model.Tensor(name).Shape
		}
		res, err := op.Reference(l, ins, outShapes)
		if err != nil {
			return fmt.Errorf("layer %q (%s): CPU reference: %w", l.Name, l.Type, err)
		}
		for i, name := range l.Outputs {
			if i < len(res) {
				values[name] = res[i]
			}
		}
	}
	for _, t := range n.outputs {
		ref, ok := values[t.name]
		if !ok {
			return fmt.Errorf("output %q: no CPU reference value", t.name)
		}
		r.Outputs = append(r.Outputs, compare(t.name, outs[t.name].Data, ref.Data, t.shape, r.OutputTolerance))
	}
	return nil
}

// constFloats converts a constant tensor's data to float32, whatever its element type.
func constFloats(t *model.Tensor) []float32 {
	n := t.Elements()
	out := make([]float32, n)
	d := t.Data
	for i := 0; i < n; i++ {
		switch t.Type {
		case model.Float32:
			if 4*i+4 <= len(d) {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
			}
		case model.Float16:
			if 2*i+2 <= len(d) {
				out[i] = model.HalfToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
			}
		case model.Int8:
			if i < len(d) {
				out[i] = float32(int8(d[i]))
			}
		case model.Uint8:
			if i < len(d) {
				out[i] = float32(d[i])
			}
		case model.Int32:
			if 4*i+4 <= len(d) {
				out[i] = float32(int32(binary.LittleEndian.Uint32(d[4*i:])))
			}
		case model.Int64:
			if 8*i+8 <= len(d) {
				out[i] = float32(int64(binary.LittleEndian.Uint64(d[8*i:])))
			}
		}
	}
	return out
}

// nonFinite reports the outputs of a custom layer that hold NaN or infinity although
// every input is finite: such values are the kernel's own (a division by zero, the log
// of a negative number), and the layers after it take them as they are. Elements still
// holding the check's fill pattern are unwritten, which the comparisons report.
func (c *checker) nonFinite(s *step, l *model.Layer) ([]Finding, error) {
	for _, name := range l.Inputs {
		if name == "" {
			continue
		}
		t, err := c.read(name)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", l.Name, err)
		}
		for _, v := range t.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, nil // not the kernel's own
			}
		}
	}
	var found []Finding
	for port, name := range l.Outputs {
		t, err := c.read(name)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", l.Name, err)
		}
		count, first := 0, -1
		for i, v := range t.Data {
			if math.Float32bits(v) == unwrittenBits {
				continue
			}
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				if first < 0 {
					first = i
				}
				count++
			}
		}
		if count == 0 {
			continue
		}
		f := Finding{Layer: l.Name, Type: l.Type, Kind: NonFinite, Tensor: name,
			Msg: fmt.Sprintf("%s of %s elements of output %d are NaN or infinite from finite inputs; first %s = %v",
				thousands(count), thousands(len(t.Data)), port, coords(t.Shape, first), t.Data[first])}
		if s.call != nil {
			f.Entry, f.Where, f.Global, f.Local = s.call.prog.Entry, s.call.cfg.Where(), s.call.prog.Global, s.call.prog.Local
		}
		found = append(found, f)
	}
	return found, nil
}
