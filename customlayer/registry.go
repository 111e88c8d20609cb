package customlayer

import (
	"fmt"
	"io/fs"
	"sync"
)

// Registry holds the custom layers in force, by type name. It is built from an ordered
// list of configurations — the global one first, then each user file — and a later
// definition of a type replaces the earlier one. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]*Layer
	order  []string
	logf   func(string)
}

// NewRegistry returns an empty registry. logf, if not nil, receives one line for each
// layer that replaces an earlier definition.
func NewRegistry(logf func(string)) *Registry {
	return &Registry{byName: map[string]*Layer{}, logf: logf}
}

// LoadRegistry loads the configuration files at paths in order into a new registry.
// It reads every file even after a failing one and returns the problems of all of
// them together (an Errors), so one run shows everything to fix.
func LoadRegistry(logf func(string), paths ...string) (*Registry, error) {
	r := NewRegistry(logf)
	var all Errors
	for _, p := range paths {
		if err := r.Load(p); err != nil {
			all = append(all, asErrors(p, err)...)
		}
	}
	if len(all) > 0 {
		return r, all
	}
	return r, nil
}

func asErrors(file string, err error) Errors {
	if es, ok := err.(Errors); ok {
		return es
	}
	return Errors{{File: file, Msg: err.Error()}}
}

// Load adds the layers of the configuration file at path.
func (r *Registry) Load(path string) error {
	layers, err := Load(path)
	if err != nil {
		return err
	}
	r.Add(layers...)
	return nil
}

// LoadFS adds the layers of the configuration file name in fsys.
func (r *Registry) LoadFS(fsys fs.FS, name string) error {
	layers, err := LoadFS(fsys, name)
	if err != nil {
		return err
	}
	r.Add(layers...)
	return nil
}

// Parse adds the layers of a configuration held in memory (see Parse).
func (r *Registry) Parse(name string, data []byte, opt Options) error {
	layers, err := Parse(name, data, opt)
	if err != nil {
		return err
	}
	r.Add(layers...)
	return nil
}

// Add registers layers in order; each replaces any earlier layer of the same name,
// and the replacement is logged.
func (r *Registry) Add(layers ...*Layer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range layers {
		if l == nil {
			continue
		}
		if prev, ok := r.byName[l.Name]; ok {
			if r.logf != nil {
				r.logf(fmt.Sprintf("custom layer %q from %s replaces the one from %s", l.Name, l.Where(), prev.Where()))
			}
		} else {
			r.order = append(r.order, l.Name)
		}
		r.byName[l.Name] = l
	}
}

// Lookup returns the layer implementing type typ.
func (r *Registry) Lookup(typ string) (*Layer, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	l, ok := r.byName[typ]
	return l, ok
}

// Implements says whether a custom layer implements type typ, which then replaces any
// built-in of that name. A nil registry implements nothing.
func (r *Registry) Implements(typ string) bool {
	if r == nil {
		return false
	}
	_, ok := r.Lookup(typ)
	return ok
}

// Layers returns every layer in force, in the order their types were first defined;
// each Layer's Origin says which file its definition came from.
func (r *Registry) Layers() []*Layer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Layer, len(r.order))
	for i, n := range r.order {
		out[i] = r.byName[n]
	}
	return out
}

// Len returns the number of layer types defined.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.order)
}
