// Package onnx imports ONNX models (opset 1 to 21) into clhost's in-memory model.
//
// Initializers become constant tensors, nodes become layers whose type is the ONNX
// operator name (a node of another domain than the default one keeps it in a string
// attribute "domain"), and node attributes become typed layer attributes. Constant nodes
// become constant tensors; Identity and Dropout are folded away. Clip's constant min and
// max inputs (opset 11 and later) become float attributes "min" and "max", the form of
// opsets before 11, so both reach the runtime the same way; Softmax, LogSoftmax and
// Hardmax always carry an explicit "axis". A BatchNormalization stays a layer: the engine
// folds it into the Conv before it (internal/graph's FoldBatchNorm), as for any model.
//
// Shapes come from the graph inputs, value_info and graph outputs, then from the
// built-in shape inference of internal/graph. Only the batch dimension may be dynamic: dim 0
// of a graph input that is symbolic, 0, -1 or absent takes Options.Batch (1 by default),
// and every other occurrence of the same symbol takes the same size. Options.InputShapes
// sets an input's whole shape, for instance from the .npy file it will be fed with.
//
// Shapes are static, so what decides them is computed when the model loads: layers whose
// inputs are constants and that do shape arithmetic (Shape → Gather → Unsqueeze →
// Concat → Reshape, as PyTorch's exporter writes them; ConstantOfShape, Range, Cast, ...)
// become constants, and inputs that later opsets added in place of attributes (Slice's
// starts, Pad's pads, Resize's scales, a reduction's axes) become those attributes again;
// such an input computed at run time is refused. Options.Constants fixes graph inputs
// that decide shapes (Summary.LoadTimeInputs lists them).
//
// Element types without a direct counterpart in clhost are converted when constants are
// read: DOUBLE and BFLOAT16 become float32, BOOL becomes uint8, INT16 and UINT16 become
// int32, UINT32 and UINT64 become int64. Every activation is float32: integer, bool and
// float16 graph inputs are fed as float32 values, integer constants kernels read become
// float32 copies, and integer ops whose float result would differ (Div, Mod, Pow) are
// refused. Opsets before 7 are read with their element-wise broadcast and PRelu slope
// rules rewritten into numpy's.
//
// The importer accepts operator types clhost has no kernel for, since a custom layer may
// supply one at run time; UnsupportedOps lists those the runtime does not know.
package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// Options tune how a model is imported. The zero value is the default.
type Options struct {
	// Batch is the size of a dynamic batch dimension: dim 0 of a graph input given as a
	// symbol (dim_param), 0, -1 or not at all. Zero means 1. A fixed batch dimension in
	// the model is kept, since its constants (Reshape shapes) may depend on it.
	Batch int
	// InputShapes replaces the declared shape of the named graph inputs. A symbol the
	// model uses in such an input takes the size given here wherever else it appears.
	InputShapes map[string][]int
	// Custom says which operator types a user's custom layer implements (host passes its
	// loaded configurations). Nodes of those types, like nodes of other domains than the
	// default one, are imported as written: no constant folding, no load-time inputs made
	// attributes, no opset rewrites, so the user's kernel gets the node's own inputs and
	// attributes. Their output shapes come from the model or, where it declares none, from
	// the built-in operator's shape rule when that applies.
	Custom func(typ string) bool
	// Constants fixes the values of the named graph inputs at load time: each becomes a
	// constant tensor of the model. Shapes are static in clhost, so an input whose values
	// decide shapes or attributes (a Reshape's target shape, a Slice's starts; Inspect lists
	// them as Summary.LoadTimeInputs) must be given here.
	Constants map[string]model.Tensor
}

// Load imports the ONNX model at path with default options. External data files are
// looked up in the model's folder.
func Load(path string) (*model.Model, error) { return Options{}.Load(path) }

// Decode imports an ONNX model held in memory with default options. dir is the folder of
// external data files ("" when the model may not have any); name labels errors.
func Decode(data []byte, dir, name string) (*model.Model, error) {
	return Options{}.Decode(data, dir, name)
}

// Load imports the ONNX model at path.
func (o Options) Load(path string) (*model.Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return o.Decode(data, filepath.Dir(path), path)
}

// Decode imports an ONNX model held in memory. dir is the folder of external data files
// ("" when the model may not have any); name labels errors and names the model when its
// graph has no name.
func (o Options) Decode(data []byte, dir, name string) (*model.Model, error) {
	if name == "" {
		name = "ONNX model"
	}
	m, err := o.decode(data, dir, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

func (o Options) decode(data []byte, dir, name string) (*model.Model, error) {
	if o.Batch < 0 {
		return nil, fmt.Errorf("batch size %d is negative", o.Batch)
	}
	mp, err := decodeModel(data)
	if err != nil {
		return nil, fmt.Errorf("not a readable ONNX file: %w", err)
	}
	if mp.graph == nil {
		return nil, fmt.Errorf("no graph in the file (is it an ONNX model?)")
	}
	opset := int64(-1)
	for _, op := range mp.opsets {
		if op.domain == "" || op.domain == "ai.onnx" {
			opset = op.version
		}
	}
	if opset < 0 {
		return nil, fmt.Errorf("the model imports no opset of the default ONNX domain")
	}
	if opset < 1 || opset > 21 {
		return nil, fmt.Errorf("opset %d is outside the range clhost reads (1 to 21); convert the model with onnx.version_converter", opset)
	}
	im := &importer{
		opt:       o,
		dir:       dir,
		opset:     opset,
		g:         mp.graph,
		consts:    map[string]*model.Tensor{},
		declared:  map[string]*model.Tensor{},
		producer:  map[string]string{},
		alias:     map[string]string{},
		aliasNode: map[string]string{},
		legacy:    map[string]bool{},
		layerOf:   map[string]int{},
		names:     map[string]bool{},
		params:    map[string]int{},
	}
	m, err := im.run()
	if err != nil {
		return nil, err
	}
	if m.Name == "" {
		m.Name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	if err := checkDeclared(m, im.isCustom); err != nil {
		return nil, err
	}
	if err := graph.InferShapesExcept(m, im.customTypes(m)); err != nil {
		return nil, err
	}
	if err := im.rewriteLegacySoftmax(m); err != nil {
		return nil, err
	}
	pruneTensors(m)
	if err := model.Validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkDeclared makes sure every output of a layer type without built-in shape inference
// (a custom operator) has a shape from the model, and names every one that has not, with
// the ONNX places a shape can be declared.
func checkDeclared(m *model.Model, custom func(*model.Layer) bool) error {
	declared := map[string]bool{}
	for i := range m.Tensors {
		declared[m.Tensors[i].Name] = true
	}
	var missing []string
	for i := range m.Layers {
		l := &m.Layers[i]
		if !custom(l) && graph.HasShape(l.Type) {
			continue
		}
		for _, o := range l.Outputs {
			if !declared[o] {
				missing = append(missing, fmt.Sprintf("node %q (%s): output %q", l.Name, l.Type, o))
			}
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s has no declared shape; clhost infers shapes of built-in operators only, so declare it in the graph's value_info or outputs", missing[0])
	}
	return fmt.Errorf("%d outputs have no declared shape (clhost infers shapes of built-in operators only, so declare them in the graph's value_info or outputs): %s",
		len(missing), strings.Join(missing, "; "))
}
