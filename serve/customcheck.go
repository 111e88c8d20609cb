package serve

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"time"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/model"
)

// A model with custom layers is checked once at load, before it is served: its batch-1
// network runs on the first device in an engine that keeps every tensor, on a seeded
// random input, with outputs filled with a NaN pattern first, guard zones around every
// tensor the custom kernels take and the sanitizer on each custom layer. A layer that
// leaves output unwritten, writes outside its buffers or into its inputs, or gives other
// results on the same input keeps the model from being served: its requests are refused
// and its readiness is false, with the reason, rather than answered with garbage.

// customCheckTimeout bounds the check's inference: a kernel that never finishes is a
// reason not to serve the model, not a server that never starts.
const customCheckTimeout = time.Minute

// checkCustomLayers returns why the model must not be served, or "" when it may (or has
// no custom layer). On a device left running a kernel, the model's engines stay open.
func (s *Server) checkCustomLayers(m *servedModel, src Source, mb *model.Model) string {
	in := m.instances[0]
	if in == nil || len(in.nets[m.sizes[0]].CustomLayers()) == 0 {
		return ""
	}
	o := s.opts.Engine
	o.Device = strconv.Itoa(in.dev.cl.Index)
	o.Configs = append(o.Configs[:len(o.Configs):len(o.Configs)], src.Configs...)
	o.KeepIntermediates = true
	e, err := host.NewEngine(o)
	if err != nil {
		return fmt.Sprintf("the check of its custom layers could not open an engine: %v", err)
	}
	n, err := e.Compile(mb)
	if err != nil {
		e.Close()
		return fmt.Sprintf("the check of its custom layers could not compile it: %v", err)
	}
	rng := rand.New(rand.NewSource(1))
	inputs := map[string]*host.Tensor{}
	for i, t := range n.Inputs() {
		v := make([]float32, elements(t.Shape))
		for k := range v {
			if i < len(m.inputs) && m.inputs[i].datatype != "FP32" {
				v[k] = float32(rng.Intn(8))
			} else {
				v[k] = float32(rng.NormFloat64())
			}
		}
		inputs[t.Name] = &host.Tensor{Shape: t.Shape, Data: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), customCheckTimeout)
	defer cancel()
	r, _, err := n.Check(ctx, inputs, host.CheckOptions{Sanitize: true, NoReferences: true})
	var te *host.TimeoutError
	if !errors.As(err, &te) {
		e.Close()
	}
	if err != nil {
		return err.Error()
	}
	for _, f := range r.Findings() {
		if f.Kind == host.NonFinite {
			s.logf("model %q: custom layer %s: %s (served: the inputs were random)", m.name, f.Layer, f.Msg)
			continue
		}
		return fmt.Sprintf("custom layer %s: %s", f.Layer, f)
	}
	return ""
}
