package main

import (
	"fmt"
	"strings"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host"
)

// shapeHint adds to a model's load error that the -i files gave the input shapes, when
// they are what it is about: a model that fails the same way without them (a damaged
// file, an unknown op) is reported as it is, since the hint would send the user to the
// wrong place. The second read happens only on this error path.
func (ef *engineFlags) shapeHint(err error, layers *customlayer.Registry) error {
	if len(ef.inputFiles) == 0 || len(ef.inputShapes) == 0 {
		return err
	}
	_, plain := host.LoadOptions{Batch: *ef.batch, Layers: layers, Weights: *ef.weights}.Load(*ef.model)
	if plain != nil && plain.Error() == err.Error() {
		return err
	}
	return fmt.Errorf("%w (input shapes taken from -i %s)", err, strings.Join(ef.inputFiles, ", -i "))
}
