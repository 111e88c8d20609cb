package graph

import (
	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// ConvGeometry checks a Conv layer's shapes against its attributes and resolves its window:
// the Conv op's rule (builtinkernels.ConvGeometry), kept here for the passes that read it.
func ConvGeometry(l *model.Layer, x, w []int) (opspec.Window, error) {
	return builtinkernels.ConvGeometry(l, x, w)
}

// PoolGeometry resolves a MaxPool or AveragePool layer's window: the pooling ops' rule
// (builtinkernels.PoolGeometry).
func PoolGeometry(l *model.Layer, x []int) (opspec.Window, error) {
	return builtinkernels.PoolGeometry(l, x)
}

// MaxPoolOf is the MaxPool a Conv carries under FusedMaxPoolPrefix, as a layer of its
// own, and whether it carries one (builtinkernels.MaxPoolOf).
func MaxPoolOf(l *model.Layer) (*model.Layer, bool) { return builtinkernels.MaxPoolOf(l) }
