package serve

import (
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/model"
)

// A kernel on a CPU device runs on the driver's threads inside the server's process. One
// that writes far outside its buffers, past any guard, ends that process (SIGSEGV), and
// every model with it; the in-process check at load cannot prevent that, since the
// first inference that runs the kernel is the one that crashes. So a model with custom
// layers is first run, and sanitized, in a process of its own (Options.IsolatedCheck,
// which `clhost serve` sets to a `clhost run --sanitize` of the model): a crash or a
// finding there keeps the model from being served before its kernels run here.

// isolatedCheck returns why src must not be served, or "" when it may: it has no
// custom layer, no device is a CPU, no hook is set, or the hook found nothing.
func (s *Server) isolatedCheck(src Source, m *model.Model, layers *customlayer.Registry) string {
	if s.opts.IsolatedCheck == nil || src.Path == "" || !hasCustomLayer(m, layers) {
		return ""
	}
	for _, d := range s.opts.Devices {
		if d.IsCPU() {
			return s.opts.IsolatedCheck(src, d)
		}
	}
	return ""
}

// hasCustomLayer says whether a layer of m runs a user's kernel.
func hasCustomLayer(m *model.Model, layers *customlayer.Registry) bool {
	for _, l := range m.Layers {
		if layers.Implements(l.Type) {
			return true
		}
	}
	return false
}
