package host

import (
	"sync"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// progress passes Compile's advance to Options.Progress: done of total steps of what.
// A nil *progress reports nothing, so callers need no checks.
type progress struct {
	fn          func(done, total int, what string)
	what        string
	mu          sync.Mutex
	done, total int
}

func (e *Engine) progress(what string, total int) *progress {
	if e.opts.Progress == nil || total <= 0 {
		return nil
	}
	p := &progress{fn: e.opts.Progress, what: what, total: total}
	p.fn(0, total, what)
	return p
}

func (p *progress) step() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+1, p.total)
	p.fn(p.done, p.total, p.what)
}

// tunableLayers counts the layers whose plans the tuner times (Tune On), for progress.
func (e *Engine) tunableLayers(res *resolver, m *model.Model, order []int) int {
	if !e.measuring() {
		return 0
	}
	count := 0
	for _, li := range order {
		if e.tunable(res, &m.Layers[li]) {
			count++
		}
	}
	return count
}

// tunable says whether a layer runs a built-in op that offers several plans.
func (e *Engine) tunable(res *resolver, l *model.Layer) bool {
	im := res.layer(l)
	if !im.builtin() {
		return false
	}
	_, ok := im.op.(builtinkernels.Tunable)
	return ok
}

// prebuild builds the distinct programs of the network's built-in layers at once
// (buildThreads), before the layers are bound one after another. A custom layer's
// program depends on the formats its inputs are bound in, so it is built while binding;
// it counts in the progress, which bind advances. A failed build is reported against the
// first layer in execution order that needs the program, as binding would have.
func (n *Network) prebuild(prepared []*preparedLayer) (*progress, error) {
	e := n.engine
	var reqs []buildRequest
	seen := map[string]bool{}
	custom := 0
	for si, p := range prepared {
		if p.custom != nil {
			custom++
			continue
		}
		plan := p.plan
		if p.half != nil {
			plan = p.half
		}
		if plan == nil || n.inPlace[si] || plan.AliasInput >= 0 && len(plan.Launches) == 0 {
			continue
		}
		key := e.programs.key(plan.Source, plan.Options)
		if seen[key] || e.programs.built(plan.Source, plan.Options) {
			continue
		}
		seen[key] = true
		reqs = append(reqs, buildRequest{layer: p.l.Name, layerType: p.l.Type, source: plan.Source, options: plan.Options})
	}
	if len(reqs) > 0 {
		n.precompile(prepared)
	}
	prog := e.progress("programs", len(reqs)+custom)
	for i, err := range e.programs.buildAll(reqs, buildThreads(), prog.step) {
		if err != nil {
			return nil, buildErrorf(reqs[i].layer, reqs[i].layerType, err)
		}
	}
	n.markBuilt(prepared)
	return prog, nil
}
