package host

import (
	"fmt"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// SingleLayerModel is a model of the one instance inst of the custom layer type layer,
// to run that layer alone on given data (clhost jit --run): graph inputs input0, input1…
// of inst's input shapes, a constant per Data blob of the layer, named after it and
// holding blobs[name], outputs output0, output1… of inst's output shapes, and inst's
// parameters (a jit.ParamLister) as the layer's attributes, of the same kinds. Every
// tensor is float32.
func SingleLayerModel(layer *customlayer.Layer, inst jit.Instance, blobs map[string]*Tensor) (*model.Model, error) {
	b := model.NewBuilder(inst.Name)
	var ins []string
	for i, t := range inst.Inputs {
		ins = append(ins, b.Input(fmt.Sprintf("input%d", i), model.Float32, t.Shape...))
	}
	for _, d := range layer.Data {
		blob, ok := blobs[d.Name]
		if !ok {
			return nil, fmt.Errorf("layer type %q: no values given for its Data %q", layer.Name, d.Name)
		}
		ins = append(ins, b.ConstFloat32(d.Name, blob.Shape, blob.Data))
	}
	var outs []string
	for i, t := range inst.Outputs {
		outs = append(outs, b.Tensor(fmt.Sprintf("output%d", i), model.Float32, t.Shape...))
	}
	var attrs []model.Attr
	if inst.Params != nil {
		// The attributes are written out, so the parameters must be enumerable.
		pl, ok := inst.Params.(jit.ParamLister)
		if !ok {
			return nil, fmt.Errorf("layer %q: its parameters cannot be listed (give a jit.ParamLister, such as a jit.ParamMap)", inst.Name)
		}
		for _, name := range pl.ParamNames() {
			v, _ := pl.Param(name)
			attrs = append(attrs, attrOf(name, v))
		}
	}
	b.LayerOutputs(layer.Name, inst.Name, ins, outs, attrs...)
	b.Output(outs...)
	return b.Build()
}

// attrOf turns a layer parameter into a model attribute of the same kind.
func attrOf(name string, v jit.Value) model.Attr {
	switch v.Kind {
	case jit.KindInt:
		return model.IntAttr(name, v.Ints[0])
	case jit.KindFloat:
		return model.FloatAttr(name, float32(v.Floats[0]))
	case jit.KindIntList:
		return model.IntsAttr(name, v.Ints...)
	case jit.KindFloatList:
		f := make([]float32, len(v.Floats))
		for i, x := range v.Floats {
			f[i] = float32(x)
		}
		return model.FloatsAttr(name, f...)
	}
	return model.StringAttr(name, v.Str)
}
