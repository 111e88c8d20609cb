package onnx

import (
	"fmt"

	"github.com/clhost/clhost/model"
)

// DecodeTensor reads one serialized TensorProto, such as the input_N.pb and output_N.pb
// files of ONNX's backend test data, converting its element type as Load converts
// initializers. External data is not allowed.
func DecodeTensor(data []byte) (model.Tensor, error) {
	tp, err := decodeTensor(data)
	if err != nil {
		return model.Tensor{}, fmt.Errorf("not a readable TensorProto: %w", err)
	}
	t, err := convertTensor(&tp, nil)
	if err != nil {
		return model.Tensor{}, fmt.Errorf("tensor %q: %w", tp.name, err)
	}
	if t.Data == nil {
		t.Data = []byte{}
	}
	return t, nil
}
