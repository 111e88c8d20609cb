package host

import (
	"sync"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/model"
)

// impl is what one layer type runs as: the custom layer a loaded configuration defines
// for it, or else the built-in op of that name. At most one of the two is set; neither
// means nothing implements the type.
type impl struct {
	custom *customlayer.Layer
	op     builtinkernels.Op
}

// builtin says whether the layer runs a built-in op.
func (i impl) builtin() bool { return i.custom == nil && i.op != nil }

// resolver is the one place that decides whether a layer is custom or built-in: every
// phase of a compile (shape inference, fusion, planning, binding, checks) asks it, so
// none can decide differently. A user's configuration always wins over a built-in of the
// same type, whatever the layer's attributes or domain. Each type is looked up once and
// kept, so a registry changed while a network compiles cannot split its decisions.
type resolver struct {
	layers *customlayer.Registry
	mu     sync.Mutex
	memo   map[string]impl
}

func newResolver(layers *customlayer.Registry) *resolver {
	return &resolver{layers: layers, memo: map[string]impl{}}
}

// of resolves layer type typ.
func (r *resolver) of(typ string) impl {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.memo[typ]; ok {
		return i
	}
	var i impl
	if r.layers != nil {
		if cfg, ok := r.layers.Lookup(typ); ok {
			i.custom = cfg
		}
	}
	if i.custom == nil {
		i.op, _ = builtinkernels.Lookup(typ)
	}
	r.memo[typ] = i
	return i
}

// layer resolves a model layer.
func (r *resolver) layer(l *model.Layer) impl { return r.of(l.Type) }

// isCustom says whether typ runs a user's kernel; it has the signature the graph passes
// and the importer take.
func (r *resolver) isCustom(typ string) bool { return r.of(typ).custom != nil }

// shadows says whether a custom layer replaces a built-in of the same type.
func (r *resolver) shadows(typ string) bool {
	if !r.isCustom(typ) {
		return false
	}
	_, ok := builtinkernels.Lookup(typ)
	return ok
}
