package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/model"
)

// FuzzDecode feeds arbitrary bytes to the importer: it must return a model or an error,
// never panic or hang, and a model it returns must be valid.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.onnx"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(onnxModel(13, relu1())))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, "testdata", "fuzz.onnx")
		if err != nil {
			return
		}
		if err := model.Validate(m); err != nil {
			t.Fatalf("imported model is invalid: %v", err)
		}
	})
}

// Every fixture that imports converts to the native format and back unchanged, as
// `clhost convert model.onnx model.clm` does.
func TestNativeRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.onnx"))
	n := 0
	for _, name := range files {
		m, err := Load(name)
		if err != nil {
			continue // the fixtures made to fail
		}
		n++
		data, err := model.Encode(m)
		if err != nil {
			t.Errorf("%s: encode: %v", name, err)
			continue
		}
		back, err := model.Decode(data, name+".clm")
		if err != nil {
			t.Errorf("%s: decode: %v", name, err)
			continue
		}
		if len(back.Layers) != len(m.Layers) || len(back.Tensors) != len(m.Tensors) {
			t.Errorf("%s: %d layers and %d tensors came back, want %d and %d", name, len(back.Layers), len(back.Tensors), len(m.Layers), len(m.Tensors))
		}
	}
	if n < 10 {
		t.Errorf("only %d fixtures imported", n)
	}
}
