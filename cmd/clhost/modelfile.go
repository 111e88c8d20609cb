package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/clhost/clhost/host/model"
	"github.com/clhost/clhost/host/onnx"
)

// Model files are told apart by extension, the same way for every command.
const (
	extCLM  = ".clm"
	extJSON = ".json"
	extONNX = ".onnx"
)

func modelExt(path string) string { return strings.ToLower(filepath.Ext(path)) }

// loadModel reads a model in any format clhost reads: the native .clm, its .json form, or
// an ONNX file, imported with default options.
func loadModel(path string) (*model.Model, error) {
	switch modelExt(path) {
	case extCLM:
		return model.Load(path)
	case extJSON:
		return model.LoadJSON(path)
	case extONNX:
		return onnx.Load(path)
	}
	return nil, fmt.Errorf("%s: unknown model format %q: use %s, %s or %s", path, filepath.Ext(path), extCLM, extJSON, extONNX)
}

// saveModel writes a model as .clm or .json, by the extension of path.
func saveModel(m *model.Model, path string) error {
	switch modelExt(path) {
	case extCLM:
		return model.Save(m, path)
	case extJSON:
		return model.SaveJSON(m, path)
	}
	return fmt.Errorf("%s: cannot write models as %q: use %s or %s", path, filepath.Ext(path), extCLM, extJSON)
}
