package host

import (
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
)

// StandInShape is the shape every tensor of a custom layer takes when the layer is built
// without a model (StandInProgram): small, but 4-D, so that every format and work-size
// formula has each dimension to read.
func StandInShape() []int { return []int{1, 16, 16, 16} }

// StandInProgram generates the program of layer l as a configuration alone gives it:
// every input and output of StandInShape in the layer's declared formats, each define
// at its default. A define read from a parameter without a default takes 1 (1.0, {1}
// for lists), and defaulted names those, as LAYER.DEFINE, whether or not generating
// succeeds.
func StandInProgram(l *customlayer.Layer) (prog *jit.Program, defaulted []string, err error) {
	params := jit.ParamMap{}
	for _, d := range l.Defines {
		if d.Param != "" && !d.HasDefault {
			params[d.Param] = standIn(d.Type)
			defaulted = append(defaulted, l.Name+"."+d.Name)
		}
	}
	inst := jit.Instance{Name: l.Name, Params: params}
	for _, t := range l.Tensors {
		dst := &inst.Inputs
		if t.Kind == customlayer.Output {
			dst = &inst.Outputs
		}
		for len(*dst) <= t.Port {
			*dst = append(*dst, jit.Tensor{Shape: StandInShape(), Format: customlayer.ANY})
		}
	}
	prog, err = jit.Generate(l, inst)
	return prog, defaulted, err
}

// standIn is the value of a define without a default, by its type.
func standIn(t customlayer.DefineType) jit.Value {
	switch t {
	case customlayer.Float:
		return jit.Float(1)
	case customlayer.IntArray:
		return jit.Ints(1)
	case customlayer.FloatArray:
		return jit.Floats(1)
	}
	return jit.Int(1)
}
