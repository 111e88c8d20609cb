package onnx

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

// dropoutInference accepts Dropout's training_mode input (opset 12 on) when the node is
// the identity: training_mode a constant false, or a constant ratio of 0, which drops
// nothing even in training (PyTorch exports attention dropout of p=0 so). A ratio left
// out is ONNX's default 0.5, which drops at random in training: that is refused.
func (im *importer) dropoutInference(ratio, training string) error {
	if r := im.consts[ratio]; r != nil {
		fs, is, err := tensorValues(r)
		if err == nil && (len(fs) == 1 && fs[0] == 0 || len(is) == 1 && is[0] == 0) {
			return nil
		}
	}
	c := im.consts[training]
	if c == nil {
		return fmt.Errorf("training_mode (input %q) must be a constant false when the model loads, or the ratio a constant 0; clhost runs inference only", training)
	}
	is, err := c.Int64s()
	if err != nil || len(is) != 1 || is[0] != 0 {
		return fmt.Errorf("training_mode (input %q) is true and the ratio is not a constant 0: training is not supported; export the model for inference", training)
	}
	return nil
}

// dropoutMask imports an inference Dropout whose mask is read: the output is its input
// (an alias), and the mask, true everywhere at inference, is Shape → ConstantOfShape →
// Cast to bool, which fold when the input's shape is known. No kernel is needed for it.
func (im *importer) dropoutMask(desc string, n *nodeProto) error {
	x, y, mask := n.inputs[0], n.outputs[0], n.outputs[1]
	if err := im.produce(y, desc); err != nil {
		return err
	}
	im.alias[y] = x
	im.aliasNode[y] = n.name
	if err := im.produce(mask, desc); err != nil {
		return err
	}
	base := n.name
	if base == "" {
		base = "Dropout"
	}
	shape, ones := uniqueConst(im, mask+"/shape"), uniqueConst(im, mask+"/ones")
	layers := []model.Layer{
		{Name: uniqueName(im, base+"/mask_shape"), Type: "Shape", Inputs: []string{x}, Outputs: []string{shape}},
		{Name: uniqueName(im, base+"/mask_ones"), Type: "ConstantOfShape", Inputs: []string{shape}, Outputs: []string{ones},
			Attrs: []model.Attr{{Name: "value", Kind: model.AttrInts, Ints: []int64{1}}}},
		{Name: uniqueName(im, base+"/mask"), Type: "Cast", Inputs: []string{ones}, Outputs: []string{mask},
			Attrs: []model.Attr{{Name: "to", Kind: model.AttrInt, Int: dtBool}}},
	}
	for _, l := range layers {
		im.layerOf[l.Outputs[0]] = len(im.layers)
		im.layers = append(im.layers, l)
	}
	return nil
}
