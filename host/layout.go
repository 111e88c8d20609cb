package host

import (
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// Layout is a model as it is read and ordered before any compilation, for tools that
// show a model (clhost inspect) without a device.
type Layout struct {
	Model *model.Model
	// Levels holds the layers (indices into Model.Layers) by dependency level: the
	// layers of a level take their inputs from earlier levels and the graph's inputs
	// only, so a level's layers could run at once.
	Levels [][]int
	// ShapeError says why shape inference stopped (a custom layer with undeclared
	// outputs, a shape mismatch); nil when every shape is known. The shapes inferred
	// before it are filled in all the same.
	ShapeError error
}

// LoadLayout loads the model file at path with the custom layers layers defines (nil:
// none; see LoadOptions.Layers), infers the shapes the file leaves out and orders its
// layers; a custom layer keeps the shapes the model declares. Only a model that cannot be loaded or whose graph cannot be
// ordered (a cycle, an input nothing produces) is an error; a shape inference failure
// is kept in ShapeError, so that what is known can still be shown.
func LoadLayout(path string, layers *customlayer.Registry) (*Layout, error) {
	m, err := LoadOptions{Layers: layers}.Load(path)
	if err != nil {
		return nil, err
	}
	shapeErr := graph.InferShapesExcept(m, newResolver(layers).isCustom)
	g, err := graph.Build(m)
	if err != nil {
		return nil, err
	}
	return &Layout{Model: m, Levels: g.Levels(), ShapeError: shapeErr}, nil
}
