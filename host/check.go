package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host/model"
)

// LayerError compares one built-in layer's device output with its CPU reference computed
// from the same device inputs, so the first layer that goes wrong stands out even when
// errors upstream would blur a whole-network comparison.
type LayerError struct {
	Layer, Type string
	OutputError
}

// OutputError compares one graph output of the device with the CPU reference.
type OutputError struct {
	Output string
	MaxAbs float64 // largest |device - reference|
	MaxRel float64 // largest |device - reference| / max(|reference|, 1e-6)
	// Worst is the flat index of the largest absolute error.
	Worst int
}

// Check runs one inference on the device and the same model on the CPU references of
// the built-in layers, and returns the largest errors per graph output. A custom layer
// has no CPU reference: the CPU path takes the device's result for it, so the comparison
// measures the built-in layers around it.
//
// The engine must have been opened with Options.KeepIntermediates, so that the outputs
// of custom layers are still in their buffers when the inference ends.
func (n *Network) Check(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, []OutputError, error) {
	outs, report, _, err := n.CheckLayers(ctx, inputs)
	return outs, report, err
}

// CheckLayers is Check that also compares every built-in layer on its own: its device
// output against its CPU reference run on the device's values of its inputs.
func (n *Network) CheckLayers(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, []OutputError, []LayerError, error) {
	if !n.engine.opts.KeepIntermediates && n.engine.opts.DumpTensors == "" && len(n.CustomLayers()) > 0 {
		return nil, nil, nil, fmt.Errorf("Check needs an engine opened with KeepIntermediates: custom-layer outputs would be overwritten by buffer reuse")
	}
	outs, err := n.Infer(ctx, inputs)
	if err != nil {
		return nil, nil, nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
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
		if s.custom {
			// Take the device's output, read back now (the network's buffers still hold
			// this inference).
			for _, name := range l.Outputs {
				t := n.tensors[name]
				data := make([]float32, elements(t.shape))
				if err := n.engine.queue.Read(t.buf, t.byteOff(), float32Bytes(data), nil); err != nil {
					return nil, nil, nil, fmt.Errorf("layer %q: reading its output %q: %w", l.Name, name, err)
				}
				values[name] = &builtinkernels.HostTensor{Shape: t.shape, Data: data}
			}
			continue
		}
		op, _ := builtinkernels.Lookup(l.Type)
		ins := make([]*builtinkernels.HostTensor, len(l.Inputs))
		for i, name := range l.Inputs {
			if name == "" {
				continue
			}
			v, err := get(name)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("layer %q: %w", l.Name, err)
			}
			ins[i] = v
		}
		outShapes := make([][]int, len(l.Outputs))
		for i, name := range l.Outputs {
			outShapes[i] = n.Model.Tensor(name).Shape
		}
		res, err := op.Reference(l, ins, outShapes)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("layer %q (%s): CPU reference: %w", l.Name, l.Type, err)
		}
		for i, name := range l.Outputs {
			if i < len(res) {
				values[name] = res[i]
			}
		}
	}
	var report []OutputError
	for _, t := range n.outputs {
		ref, ok := values[t.name]
		if !ok {
			return nil, nil, nil, fmt.Errorf("output %q: no CPU reference value", t.name)
		}
		report = append(report, compare(t.name, outs[t.name].Data, ref.Data))
	}
	layers, err := n.checkEachLayer(get)
	if err != nil {
		return nil, nil, nil, err
	}
	return outs, report, layers, nil
}

// checkEachLayer runs each built-in layer's reference on the device's values of its
// inputs and compares with the device's output. It needs every activation still in its
// buffer (KeepIntermediates).
func (n *Network) checkEachLayer(constant func(string) (*builtinkernels.HostTensor, error)) ([]LayerError, error) {
	if !n.engine.opts.KeepIntermediates && n.engine.opts.DumpTensors == "" {
		return nil, nil
	}
	device := map[string]*builtinkernels.HostTensor{}
	read := func(name string) (*builtinkernels.HostTensor, error) {
		if v, ok := device[name]; ok {
			return v, nil
		}
		t, ok := n.tensors[name]
		if !ok || t.buf == nil || n.isConstant(name) {
			return constant(name)
		}
		data := make([]float32, elements(t.shape))
		if err := n.engine.queue.Read(t.buf, t.byteOff(), float32Bytes(data), nil); err != nil {
			return nil, fmt.Errorf("reading %q: %w", name, err)
		}
		v := &builtinkernels.HostTensor{Shape: t.shape, Data: data}
		device[name] = v
		return v, nil
	}
	var out []LayerError
	for _, s := range n.steps {
		l := n.layer(s.layer)
		if s.custom || l == nil || len(s.launches) == 0 {
			continue
		}
		op, _ := builtinkernels.Lookup(l.Type)
		ins := make([]*builtinkernels.HostTensor, len(l.Inputs))
		for i, name := range l.Inputs {
			if name == "" {
				continue
			}
			v, err := read(name)
			if err != nil {
				return nil, fmt.Errorf("layer %q: %w", l.Name, err)
			}
			ins[i] = v
		}
		shapes := make([][]int, len(l.Outputs))
		for i, name := range l.Outputs {
			shapes[i] = n.Model.Tensor(name).Shape
		}
		ref, err := op.Reference(l, ins, shapes)
		if err != nil {
			return nil, fmt.Errorf("layer %q (%s): CPU reference: %w", l.Name, l.Type, err)
		}
		for i, name := range l.Outputs {
			got, err := read(name)
			if err != nil || i >= len(ref) {
				continue
			}
			out = append(out, LayerError{Layer: l.Name, Type: l.Type, OutputError: compare(name, got.Data, ref[i].Data)})
		}
	}
	return out, nil
}

func (n *Network) layer(name string) *model.Layer {
	for i := range n.Model.Layers {
		if n.Model.Layers[i].Name == name {
			return &n.Model.Layers[i]
		}
	}
	return nil
}

func compare(name string, got, want []float32) OutputError {
	e := OutputError{Output: name, Worst: -1}
	if len(got) != len(want) {
		e.MaxAbs, e.MaxRel = math.Inf(1), math.Inf(1)
		return e
	}
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > e.MaxAbs || e.Worst < 0 {
			e.MaxAbs, e.Worst = d, i
		}
		if r := d / math.Max(math.Abs(float64(want[i])), 1e-6); r > e.MaxRel {
			e.MaxRel = r
		}
	}
	return e
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
