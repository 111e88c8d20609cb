package main

import (
	"fmt"

	"clhost/host/model"
	"clhost/host/onnx"
)

// loadModelBatch is loadModel with a batch size for the dynamic batch dimension of an
// ONNX model; 0 keeps the model's own. Native models have fixed shapes, so a batch that
// differs from theirs is refused rather than silently ignored.
func loadModelBatch(path string, batch int) (*model.Model, error) {
	if modelExt(path) == extONNX {
		return onnx.Options{Batch: batch}.Load(path)
	}
	m, err := loadModel(path)
	if err != nil || batch == 0 {
		return m, err
	}
	for _, in := range m.Inputs {
		t := m.Tensor(in)
		if t != nil && len(t.Shape) > 0 && t.Shape[0] != batch {
			return nil, fmt.Errorf("%s: -batch %d: input %q has the fixed shape %v; only ONNX models with a dynamic batch take -batch", path, batch, in, t.Shape)
		}
	}
	return m, nil
}
