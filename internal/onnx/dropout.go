package onnx

import "fmt"

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
