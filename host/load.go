package host

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/internal/onnx"
	"github.com/clhost/clhost/internal/openvino"
	"github.com/clhost/clhost/model"
)

// Model file forms, told apart by the file's extension (in any case).
const (
	FormatCLM  = model.FileExt // the native FlatBuffers form
	FormatJSON = ".json"       // the native form as JSON
	FormatONNX = ".onnx"       // an ONNX model, imported on load
	FormatIR   = ".xml"        // an OpenVINO IR (.xml with its .bin), read on load
)

// ModelFormat returns the form of the model file at path by its extension: FormatCLM,
// FormatJSON, FormatONNX or FormatIR, or "" for an extension clhost does not read. An
// .xml may also be a custom-layer configuration; IsIR tells them apart by content.
func ModelFormat(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case FormatCLM, FormatJSON, FormatONNX, FormatIR:
		return ext
	}
	return ""
}

// IsIR says whether the .xml file at path is an OpenVINO IR (its root element is <net>)
// rather than, say, a custom-layer configuration.
func IsIR(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	// The decoder reads no further than the root element: a long comment before it (a
	// licence) does not hide an IR, and a configuration is not read whole.
	return openvino.ReaderIsIR(bufio.NewReader(f))
}

// LoadOptions give the shapes of a model's dynamic dimensions. The zero value keeps the
// model's own.
type LoadOptions struct {
	// Batch is the size of an ONNX model's dynamic batch dimension; 0 keeps the model's,
	// or 1. A native model is rebatched to it (graph.Rebatch, as serve does); one whose
	// constants fix the batch refuses it.
	Batch int
	// InputShapes are whole shapes of graph inputs, for instance those of the files
	// they will be fed from: an ONNX model's dynamic dimensions take them, a native
	// model must already have them. The key "" stands for the only input of a
	// single-input model.
	InputShapes map[string][]int
	// Layers are the custom layers the model will run with (an Engine's Layers, or what
	// LoadConfigs returns). An ONNX node whose type one of them implements is imported as
	// written, with none of the rewrites that give it a built-in's semantics, so that the
	// user's kernel gets the node's own inputs and attributes. Nil: no custom layers.
	Layers *customlayer.Registry
	// Log, if set, receives "clhost: ..." lines, such as a native model rebatched to
	// the batch its inputs are given at.
	Log io.Writer
	// Weights is an OpenVINO IR's .bin file; "" takes the one beside the .xml.
	Weights string
	// KeepUnknown reads an IR's layers of types nothing implements as layers of that
	// type, with the shapes their ports declare, as an ONNX model's unknown nodes are
	// read, instead of refusing the model: inspect shows a model before its
	// configurations exist. Compiling it still refuses those types.
	KeepUnknown bool
}

// LoadModel reads a model in any form clhost reads (see ModelFormat), ONNX models
// imported with their default batch; errors name the file.
func LoadModel(path string) (*model.Model, error) { return LoadOptions{}.Load(path) }

// Load reads a model in any form clhost reads, with the shapes o gives.
func (o LoadOptions) Load(path string) (*model.Model, error) {
	if o.Batch < 0 {
		return nil, fmt.Errorf("%s: batch size %d is negative", path, o.Batch)
	}
	format := ModelFormat(path)
	if o.Weights != "" && format != FormatIR {
		return nil, fmt.Errorf("%s: a weights file (%s) is given, but only OpenVINO IR (.xml) models take one", path, o.Weights)
	}
	if format == FormatONNX {
		return o.loadONNX(path)
	}
	var m *model.Model
	var err error
	switch format {
	case FormatIR:
		// An IR's dynamic dims take the batch and shapes given; a fixed batch is kept,
		// and rebatched below like a native model's.
		opt := openvino.Options{Batch: o.Batch, InputShapes: maps.Clone(o.InputShapes), Weights: o.Weights, KeepUnknown: o.KeepUnknown}
		if o.Layers != nil {
			opt.Custom = newResolver(o.Layers).isCustom
		}
		m, err = opt.Load(path)
	case FormatCLM:
		m, err = model.Load(path)
	case FormatJSON:
		m, err = model.LoadJSON(path)
	default:
		return nil, fmt.Errorf("%s: unknown model format %q: use %s, %s, %s or %s (OpenVINO IR)", path, filepath.Ext(path), FormatCLM, FormatJSON, FormatONNX, FormatIR)
	}
	if err != nil {
		return nil, err
	}
	// serve rebatches a native model (graph.Rebatch) to the batch it is asked for, so
	// run does the same for input shapes that differ from the model's only in the batch;
	// one whose constants fix the batch fails Rebatch and is refused by checkFixed.
	if b := o.rebatchTo(m); b > 0 {
		var custom func(string) bool
		if o.Layers != nil {
			custom = o.Layers.Implements
		}
		if r, err := graph.Rebatch(m, b, custom); err == nil {
			if o.Log != nil {
				fmt.Fprintf(o.Log, "clhost: %s: the model's fixed batch %d rebatched to %d, the batch of its inputs\n", path, m.Tensor(m.Inputs[0]).Shape[0], b)
			}
			m = r
		}
	}
	if err := o.checkFixed(m, path); err != nil {
		return nil, err
	}
	return m, nil
}

func (o LoadOptions) loadONNX(path string) (*model.Model, error) {
	opt := onnx.Options{Batch: o.Batch, InputShapes: maps.Clone(o.InputShapes)}
	if o.Layers != nil {
		opt.Custom = newResolver(o.Layers).isCustom
	}
	if _, ok := opt.InputShapes[""]; ok {
		// The only input's name is read from the graph's interface: importing the model
		// to learn it would fail for the dimensions this very shape fixes.
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		s, err := onnx.Inspect(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if opt.InputShapes, err = o.named(s.Inputs, path); err != nil {
			return nil, err
		}
	}
	return opt.Load(path)
}

// named returns InputShapes with the key "" replaced by the name of the model's only
// input.
func (o LoadOptions) named(inputs []string, path string) (map[string][]int, error) {
	shapes := maps.Clone(o.InputShapes)
	if shape, ok := shapes[""]; ok {
		if len(inputs) != 1 {
			return nil, fmt.Errorf("%s: a shape is given for the only input, but the model has %d inputs (%q): name the input", path, len(inputs), inputs)
		}
		delete(shapes, "")
		shapes[inputs[0]] = shape
	}
	return shapes, nil
}

// rebatchTo returns the batch o gives a native model that differs from its own, when
// every given input shape differs from the model's only in dim 0 and agrees on it; 0
// otherwise.
func (o LoadOptions) rebatchTo(m *model.Model) int {
	batch := o.Batch
	shapes, err := o.named(m.Inputs, "")
	if err != nil {
		return 0
	}
	for name, want := range shapes {
		t := m.Tensor(name)
		if t == nil || len(t.Shape) == 0 || len(want) != len(t.Shape) || !slices.Equal(want[1:], t.Shape[1:]) {
			return 0
		}
		if batch != 0 && want[0] != batch {
			return 0
		}
		batch = want[0]
	}
	if batch <= 0 || len(m.Inputs) == 0 {
		return 0
	}
	if t := m.Tensor(m.Inputs[0]); t == nil || len(t.Shape) == 0 || t.Shape[0] == batch {
		return 0
	}
	return batch
}

// checkFixed refuses a batch or input shape that a native model, whose shapes are
// fixed, does not have, rather than silently ignoring it.
func (o LoadOptions) checkFixed(m *model.Model, path string) error {
	if o.Batch != 0 {
		for _, in := range m.Inputs {
			t := m.Tensor(in)
			if t != nil && len(t.Shape) > 0 && t.Shape[0] != o.Batch {
				return fmt.Errorf("%s: batch %d: input %q has the fixed shape %v: the model's batch is fixed by its layers (a Reshape to a constant shape, say), and only a dynamic batch (ONNX, OpenVINO IR) or layers that leave it free take another", path, o.Batch, in, t.Shape)
			}
		}
	}
	shapes, err := o.named(m.Inputs, path)
	if err != nil {
		return err
	}
	for _, in := range slices.Sorted(maps.Keys(shapes)) {
		t := m.Tensor(in)
		if t == nil || !slices.Contains(m.Inputs, in) {
			return fmt.Errorf("%s: a shape is given for %q, which is not a graph input (inputs: %q)", path, in, m.Inputs)
		}
		if !slices.Equal(t.Shape, shapes[in]) {
			return fmt.Errorf("%s: input %q has the fixed shape %v, not %v", path, in, t.Shape, shapes[in])
		}
	}
	return nil
}

// LoadLayout is LoadLayout with the shapes and weights file o gives.
func (o LoadOptions) LoadLayout(path string) (*Layout, error) {
	m, err := o.Load(path)
	if err != nil {
		return nil, err
	}
	shapeErr := graph.InferShapesExcept(m, newResolver(o.Layers).isCustom)
	g, err := graph.Build(m)
	if err != nil {
		return nil, err
	}
	return &Layout{Model: m, Levels: g.Levels(), ShapeError: shapeErr}, nil
}

// SaveModel writes a model as .clm or .json, by the extension of path.
func SaveModel(m *model.Model, path string) error {
	switch ModelFormat(path) {
	case FormatCLM:
		return model.Save(m, path)
	case FormatJSON:
		return model.SaveJSON(m, path)
	}
	return fmt.Errorf("%s: cannot write models as %q: use %s or %s", path, filepath.Ext(path), FormatCLM, FormatJSON)
}
