package host

import (
	"maps"
	"os"

	"github.com/clhost/clhost/internal/onnx"
	"github.com/clhost/clhost/model"
)

// IntegerInputTypes are the graph inputs of model m, loaded from the file at path, that
// hold integers: those the model keeps as integers and, in an ONNX file, those it
// declares as integers (they import as float32, as every activation, but their values
// are token ids and the like, which random data would put out of range). A file that
// cannot be read again adds nothing.
func IntegerInputTypes(m *model.Model, path string) map[string]model.DataType {
	out := map[string]model.DataType{}
	for _, in := range m.Inputs {
		if t := m.Tensor(in); t != nil && t.Type.IsInteger() {
			out[in] = t.Type
		}
	}
	if ModelFormat(path) == FormatONNX {
		if data, err := os.ReadFile(path); err == nil {
			if sum, err := onnx.Inspect(data); err == nil {
				maps.Copy(out, sum.IntegerInputs())
			}
		}
	}
	return out
}
