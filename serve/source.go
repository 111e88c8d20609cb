package serve

import (
	"fmt"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/onnx"
	"github.com/clhost/clhost/internal/openvino"
	"github.com/clhost/clhost/model"
)

// Source is a model the server loads: its name, the custom-layer configurations it
// needs, and how to read it at a batch size.
type Source struct {
	// Name is the model's name in URLs and RPCs.
	Name string
	// Platform is what model metadata reports ("onnx_onnxv1", "clhost_clm", ...).
	Platform string
	// Configs are custom-layer configuration files for this model, loaded after the
	// server's own (Options.Engine.Configs).
	Configs []string
	// Load returns the model with batch size batch: dim 0 of every input and output.
	// Batch 0 asks for the model as stored. A model that cannot take another batch
	// returns an error, and the server runs it at its own shapes only. layers are the
	// custom layers the model will run with: an importer passes nodes of their types
	// through as written (host.LoadOptions.Layers).
	Load func(batch int, layers *customlayer.Registry) (*model.Model, error)
	// InputTypes, where set, are the element types clients send for inputs whose type
	// the loaded model does not keep: an ONNX model's integer inputs (token ids), which
	// import as float32 like every activation.
	InputTypes map[string]model.DataType
	// Path and Weights are the model file and an IR's weights file ("" beside it), for a
	// Source that FileSource, IRSource or DirSources made; "" for one built otherwise.
	// Options.IsolatedCheck reads them.
	Path, Weights string
	// err, when set, is why the model cannot load (a repository model reading outside
	// its folder): the server reports it without reading anything.
	err error
}

// Model file extensions the server reads.
const (
	extCLM  = ".clm"
	extJSON = ".json"
	extONNX = ".onnx"
	extIR   = ".xml" // an OpenVINO IR when its root element is <net>
)

func isModelFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case extCLM, extJSON, extONNX:
		return true
	case extIR:
		return host.IsIR(path)
	}
	return false
}

// FileSource is the Source of a model file (.clm, .json, .onnx, or an OpenVINO IR .xml
// with its .bin beside it), named after the file without its extension. An ONNX model or
// an IR with a dynamic batch dimension is read at each batch size; other models are read
// once and their batch dimension rewritten (Rebatch).
func FileSource(path string, configs []string) Source { return IRSource(path, "", configs) }

// IRSource is FileSource with an OpenVINO IR's weights read from the file weights ("":
// the .bin beside the .xml). A weights file given for another format fails its load.
func IRSource(path, weights string, configs []string) Source {
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	ext := strings.ToLower(filepath.Ext(path))
	platform := "clhost_" + strings.TrimPrefix(ext, ".")
	if ext == extONNX {
		platform = "onnx_onnxv1"
	}
	if ext == extIR {
		platform = "openvino"
	}
	var once sync.Once
	var stored *model.Model
	var storedErr error
	read := func(layers *customlayer.Registry) (*model.Model, error) {
		once.Do(func() {
			switch ext {
			case extCLM:
				stored, storedErr = model.Load(path)
			case extJSON:
				stored, storedErr = model.LoadJSON(path)
			case extONNX, extIR:
				stored, storedErr = host.LoadOptions{Layers: layers, Weights: weights}.Load(path)
			default:
				storedErr = fmt.Errorf("%s: unknown model format %q: use %s, %s, %s or %s (OpenVINO IR)", path, filepath.Ext(path), extCLM, extJSON, extONNX, extIR)
			}
		})
		return stored, storedErr
	}
	load := func(batch int, layers *customlayer.Registry) (*model.Model, error) {
		m, err := read(layers)
		if err != nil || batch == 0 {
			return m, err
		}
		if ext == extONNX || ext == extIR {
			// The importer gives a dynamic batch dimension its size everywhere it
			// appears; a model whose batch is fixed comes back unchanged and is
			// rewritten like a native one.
			mb, err := host.LoadOptions{Batch: batch, Layers: layers, Weights: weights}.Load(path)
			if err != nil {
				return nil, err
			}
			if b, ok := graph.BatchOf(mb); ok && b == batch {
				return mb, nil
			}
			m = mb
		}
		r, err := graph.Rebatch(m, batch, layers.Implements)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return r, nil
	}
	src := Source{Name: name, Platform: platform, Configs: slices.Clone(configs), Load: load, Path: path, Weights: weights}
	switch ext {
	case extONNX:
		src.InputTypes = onnxIntegerInputs(path)
	case extIR:
		src.InputTypes = irIntegerInputs(path)
	}
	return src
}

// irIntegerInputs are the inputs an IR's Parameters declare as integers, by name; nil
// when there are none or the file cannot be read (loading it reports that).
func irIntegerInputs(path string) map[string]model.DataType {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return openvino.IntegerInputs(data)
}

// onnxIntegerInputs are the graph inputs an ONNX file declares as 8-, 32- or 64-bit
// integers (the types the protocol and clhost name alike), by name; nil when there are
// none or the file cannot be read (loading it reports that).
func onnxIntegerInputs(path string) map[string]model.DataType {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	sum, err := onnx.Inspect(data)
	if err != nil {
		return nil
	}
	return sum.IntegerInputs()
}

// DirSources reads a model repository: dir and each folder directly inside it hold model
// files, every model file being one model whose configurations are the XML files of its
// folder (their kernels beside them), after the configs given here. Names must be unique.
// A model whose file, folder configurations or their kernel sources lie outside its
// folder (symlinks resolved) is one that fails to load, with the reason (confined).
func DirSources(dir string, configs []string) ([]Source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder: %w", err)
	}
	folders := []string{dir}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			folders = append(folders, filepath.Join(dir, e.Name()))
		}
	}
	var out []Source
	seen := map[string]string{}
	for _, f := range folders {
		files, err := os.ReadDir(f)
		if err != nil {
			return nil, fmt.Errorf("model folder: %w", err)
		}
		var xmls, models []string
		for _, e := range files {
			if e.IsDir() {
				continue
			}
			p := filepath.Join(f, e.Name())
			switch {
			case strings.EqualFold(filepath.Ext(p), ".xml") && !host.IsIR(p):
				xmls = append(xmls, p)
			case isModelFile(p):
				models = append(models, p)
			}
		}
		sort.Strings(xmls)
		sort.Strings(models)
		for _, p := range models {
			var s Source
			if err := confined(f, p, xmls); err != nil {
				base := filepath.Base(p)
				s = Source{Name: strings.TrimSuffix(base, filepath.Ext(base)), err: err}
			} else {
				s = IRSource(p, besideWeights(p), append(slices.Clone(configs), xmls...))
			}
			if prev, dup := seen[s.Name]; dup {
				return nil, fmt.Errorf("model folder %s: two models are named %q (%s and %s)", dir, s.Name, prev, p)
			}
			seen[s.Name] = p
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("model folder %s: no model file (%s, %s, %s, or an OpenVINO IR %s with its .bin) in it or in a folder directly inside it", dir, extCLM, extJSON, extONNX, extIR)
	}
	return out, nil
}

// besideWeights is the .bin of a repository's IR: the file beside it, under its name.
// It is given explicitly, so that a missing one is reported as that file, with no
// advice about flags a repository does not take. "" for other formats.
func besideWeights(path string) string {
	if !strings.EqualFold(filepath.Ext(path), extIR) {
		return ""
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".bin"
}

// withShapes is a copy of m with the shape of every tensor inferred; the layers of the
// types custom says are custom keep their declared shapes.
func withShapes(m *model.Model, custom func(string) bool) (*model.Model, error) {
	c := m.Clone()
	if err := graph.InferShapesExcept(c, custom); err != nil {
		return nil, err
	}
	return c, nil
}
