package openvino

import "github.com/clhost/clhost/model"

// inputParams names, for standard ops, the scalar inputs that a custom layer replacing
// the op also gets as a parameter, under the name the op's specification gives the
// input. Swish-4 takes beta as an input, while clhost's global configuration (and
// kernels written for ONNX-style nodes) read it as a parameter: without this, such a
// kernel would silently run with its default beta.
var inputParams = map[string]map[int]string{
	"Swish": {1: "beta"},
}

// constInputParams are the parameters inputParams gives layer c, for each such input
// that is a constant of one value and is not already a <data> attribute.
func (c *lctx) constInputParams() []model.Attr {
	if !isStdOpset(c.l.Version) {
		return nil // an extension op of the same name is the user's own
	}
	var out []model.Attr
	for k, name := range inputParams[c.l.Type] {
		if k >= len(c.ins) || c.ins[k].c == nil || c.has(name) {
			continue
		}
		if a := toArr(c.ins[k].c); len(a.v) == 1 {
			out = append(out, aFloat(name, float32(a.v[0])))
		}
	}
	return out
}
