package onnx

import (
	"strconv"

	"github.com/clhost/clhost/model"
)

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
