package main

import (
	"fmt"

	"github.com/clhost/clhost/host/model"
	"github.com/clhost/clhost/host/onnx"
)

// loadModelBatch is loadModel with a batch size for the dynamic batch dimension of an
// ONNX model; 0 keeps the model's own. Native models have fixed shapes, so a batch that
// differs from theirs is refused rather than silently ignored.
//
// inputShapes (may be nil) gives the shapes of inputs the user supplies as files: an ONNX
// model's dynamic dimensions take them, so the batch follows the input given at run time.
// The key "" stands for the only input of a single-input model.
func loadModelBatch(path string, batch int, inputShapes map[string][]int) (*model.Model, error) {
	if modelExt(path) == extONNX {
		o := onnx.Options{Batch: batch}
		if len(inputShapes) > 0 {
			o.InputShapes = map[string][]int{}
			for k, v := range inputShapes {
				o.InputShapes[k] = v
			}
			if shape, ok := o.InputShapes[""]; ok {
				delete(o.InputShapes, "")
				m, err := onnx.Options{Batch: batch}.Load(path)
				if err != nil {
					return nil, err
				}
				if len(m.Inputs) == 1 {
					o.InputShapes[m.Inputs[0]] = shape
				}
			}
		}
		return o.Load(path)
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
