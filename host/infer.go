package host

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clhost/clhost/cl"
)

// depsOf returns the distinct steps producing the given tensors.
func depsOf(ts []*deviceTensor) []int {
	var deps []int
	for _, t := range ts {
		if t.ready < 0 {
			continue
		}
		dup := false
		for _, d := range deps {
			dup = dup || d == t.ready
		}
		if !dup {
			deps = append(deps, t.ready)
		}
	}
	sort.Ints(deps)
	return deps
}

func containsInt(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func sortInts(l []int) { sort.Ints(l) }

// Infer runs one inference. Every graph input must be given with the model's shape. On
// a CPU device the kernels may read the inputs' Data where it lies (Options.CopyInputs),
// so it must not change until Infer returns.
func (n *Network) Infer(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.released {
		return nil, errors.New("network is released (its engine was closed)")
	}
	if err := n.checkInputs(inputs); err != nil {
		return nil, err
	}
	outs, err := n.run(ctx, inputs)
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// Pending is an inference started by InferAsync.
type Pending struct {
	done    chan struct{}
	outputs map[string]*Tensor
	err     error
}

// Wait blocks until the inference ends and returns its outputs.
func (p *Pending) Wait() (map[string]*Tensor, error) {
	<-p.done
	return p.outputs, p.err
}

// InferAsync starts an inference and returns at once; Wait on the result. The inputs
// must not change until Wait returns.
func (n *Network) InferAsync(ctx context.Context, inputs map[string]*Tensor) *Pending {
	p := &Pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.outputs, p.err = n.Infer(ctx, inputs)
	}()
	return p
}

func (n *Network) checkInputs(inputs map[string]*Tensor) error {
	var problems []string
	known := map[string]bool{}
	for _, t := range n.inputs {
		known[t.name] = true
		in, ok := inputs[t.name]
		if !ok || in == nil {
			problems = append(problems, fmt.Sprintf("input %q %v is missing", t.name, t.shape))
			continue
		}
		if !slices.Equal(in.Shape, t.shape) {
			problems = append(problems, fmt.Sprintf("input %q has shape %v, the model wants %v", t.name, in.Shape, t.shape))
			continue
		}
		if len(in.Data) != elements(t.shape) {
			problems = append(problems, fmt.Sprintf("input %q has %d values for shape %v (%d)", t.name, len(in.Data), t.shape, elements(t.shape)))
		}
	}
	for name := range inputs {
		if !known[name] {
			problems = append(problems, fmt.Sprintf("%q is not an input of the model (inputs: %s)", name, strings.Join(n.inputNames(), ", ")))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func (n *Network) inputNames() []string {
	var s []string
	for _, t := range n.inputs {
		s = append(s, t.name)
	}
	return s
}

// run writes the inputs (or binds the borrowed ones), enqueues every step after its
// producers, and reads the outputs. A guard violation returns the outputs with its
// *GuardError.
func (n *Network) run(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	if te := n.engine.stuck.Load(); te != nil {
		return nil, &StuckError{Cause: te}
	}
	q := n.engine.queue
	n.crashNote.Start()
	defer func() {
		if n.stuck == nil {
			n.crashNote.Stop()
		}
	}()
	pin := new(runtime.Pinner)
	finished := false // the queue is drained: no command reads the caller's memory
	wrapped, err := n.bindCallerInputs(inputs, pin)
	defer func() {
		if wrapped == nil && n.borrowed == nil {
			return
		}
		if n.stuck != nil {
			// A kernel may still read the caller's memory: it stays pinned for good.
			n.stuckPins = append(n.stuckPins, pin)
			return
		}
		if !finished {
			_ = q.Finish()
		}
		_ = n.unbindCallerInputs()
		for _, b := range wrapped {
			b.Release()
		}
		pin.Unpin()
	}()
	if err != nil {
		return nil, err
	}
	if err := n.writeInputs(q, inputs); err != nil {
		_ = q.Finish()
		return nil, err
	}
	deadline, timed := ctx.Deadline()
	started := time.Now()
	useEvents := q.OutOfOrder || q.Profiling || timed
	events, err := n.submit(q, useEvents)
	defer func() {
		if n.stuck != nil {
			return // a read still to be enqueued after a late kernel waits on them
		}
		for _, evs := range events {
			for _, e := range evs {
				e.Release()
			}
		}
		if n.guard != nil && n.guard.event != nil {
			n.guard.event.Release()
			n.guard.event = nil
		}
	}()
	if err != nil {
		return nil, err
	}
	if n.guard != nil && n.guard.kernel != nil {
		if err := n.enqueueGuardRead(q); err != nil {
			_ = q.Finish()
			return nil, err
		}
	}
	if err := q.Flush(); err != nil {
		return nil, err
	}
	outs := make(map[string]*Tensor, len(n.outputs))
	// The blocking reads and the Finish after them are what waits for the kernels: a
	// deadline bounds that wait itself rather than one for a marker before it, which
	// cost a second round trip to the driver per inference.
	readAll := func() error {
		datas := make([][]float32, len(n.outputs))
		for i, t := range n.outputs {
			var wait []*cl.Event
			if useEvents && t.ready >= 0 {
				for li, e := range events[t.ready] {
					if e != nil && n.steps[t.ready].isFinal(li) {
						wait = append(wait, e)
					}
				}
			}
			data := make([]float32, elements(t.shape))
			if err := n.readOutput(q, i, data, wait); err != nil {
				_ = q.Finish()
				return fmt.Errorf("output %q: %w", t.name, err)
			}
			datas[i] = data
			outs[t.name] = &Tensor{Shape: append([]int(nil), t.shape...), Data: data}
		}
		if err := q.Finish(); err != nil {
			return err
		}
		for i, data := range datas {
			n.copyStagedOutput(i, data)
		}
		return nil
	}
	if timed {
		err = n.awaitDeadline(events, started, deadline, readAll)
	} else {
		err = readAll()
	}
	if err != nil {
		return nil, err
	}
	finished = true
	if n.guard != nil {
		if err := n.readGuards(); err != nil {
			return outs, err // the outputs, for Check's report; Infer discards them
		}
	}
	for _, t := range n.emptyOutputs {
		outs[t.Name] = &Tensor{Shape: slices.Clone(t.Shape), Data: []float32{}}
	}
	if err := n.checkEvents(events); err != nil {
		return nil, err
	}
	if q.Profiling {
		n.recordProfile(events)
	}
	if dir := n.engine.opts.DumpTensors; dir != "" {
		if err := n.dumpTensors(dir); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// buildChain lays out every launch of the inference for the queue's SubmitChain: each
// step's first launch waits on the last launch of each step it depends on, and later
// launches of a step on the one before. A split step's lanes (split.go) are two such
// sequences, each waiting on its own lane of the producers of its data (on the whole
// launch of a producer that did not split) and on every lane of the steps whose memory
// it reuses. With profiling every event is kept for its timestamps; otherwise only the
// final ones of steps nothing waits on (the graph outputs' producers, which the output
// reads wait on).
func (n *Network) buildChain(q *cl.Queue) error {
	var launches []cl.ChainLaunch
	var keep []bool
	n.launchAt = make([][2]int, 0, len(n.steps))
	// done is, per step, the launches whose completion is the step's: its last one (one
	// per lane), or for a step that launches nothing (an in-place Concat), its
	// dependencies' own; laneDone is the same per lane of the batch.
	done := make([][]int, len(n.steps))
	laneDone := make([][2][]int, len(n.steps))
	union := func(dst []int, src []int) []int {
		for _, w := range src {
			if !containsInt(dst, w) {
				dst = append(dst, w)
			}
		}
		return dst
	}
	for si, s := range n.steps {
		if len(s.launches) == 0 {
			for _, d := range s.deps {
				done[si] = union(done[si], done[d])
				for h := range laneDone[si] {
					laneDone[si][h] = union(laneDone[si][h], laneDone[d][h])
				}
			}
			continue
		}
		last := [3]int{-1, -1, -1} // per lane: the step's launch before, as a chain index
		for li, la := range s.launches {
			lane := s.laneOf(li)
			cur := cl.ChainLaunch{Kernel: la.kernel, Global: la.global, Local: la.local}
			if last[lane] >= 0 {
				cur.Wait = []int{last[lane]}
			} else {
				for _, d := range s.deps {
					if lane == laneWhole || containsInt(s.reuse, d) {
						cur.Wait = union(cur.Wait, done[d])
					} else {
						cur.Wait = union(cur.Wait, laneDone[d][lane-1])
					}
				}
			}
			launches = append(launches, cur)
			last[lane] = len(launches) - 1
			// Kept: every event when profiling; else a step's final ones when no later
			// step releases them (graph outputs' producers, which the reads wait on, and
			// dead ends).
			unreleased := n.lastWaiter[si] < 0 || n.lastWaiter[si] >= len(n.steps)
			// A custom step's final ones, too: a deadline's report names the custom
			// layer that has not finished (awaitDeadline).
			keep = append(keep, q.Profiling || s.isFinal(li) && (unreleased || s.custom))
			n.launchAt = append(n.launchAt, [2]int{si, li})
		}
		for lane, l := range last {
			if l >= 0 {
				done[si] = append(done[si], l)
			}
			if lane != laneWhole && l >= 0 {
				laneDone[si][lane-1] = []int{l}
			}
		}
		if last[laneWhole] >= 0 {
			laneDone[si] = [2][]int{done[si], done[si]}
		}
	}
	if n.guard != nil && n.guard.kernel != nil {
		// The guard check runs once every custom kernel has; on an out-of-order queue the
		// rest of the network runs beside it.
		check := cl.ChainLaunch{Kernel: n.guard.kernel, Global: n.guard.global}
		for si, s := range n.steps {
			if s.custom {
				check.Wait = union(check.Wait, done[si])
			}
		}
		launches = append(launches, check)
		keep = append(keep, true)
	}
	c, err := cl.NewChain(launches, keep)
	if err != nil {
		return err
	}
	n.chain = c
	return nil
}

// laneOf is the lane of the step's launch li.
func (s *step) laneOf(li int) int {
	if s.lanes == nil {
		return laneWhole
	}
	return s.lanes[li]
}

// isFinal says whether launch li is the last of its lane in the step.
func (s *step) isFinal(li int) bool {
	for j := li + 1; j < len(s.launches); j++ {
		if s.laneOf(j) == s.laneOf(li) {
			return false
		}
	}
	return true
}

// submit enqueues every step after its producers in one call (buildChain) and returns
// the events still held, per step and per launch (nil where released early). Without
// events (an in-order queue, no profiling) it returns nil. On error the caller still
// releases what it returns.
func (n *Network) submit(q *cl.Queue, useEvents bool) ([][]*cl.Event, error) {
	var evs []*cl.Event
	failed, err := -1, error(nil)
	if useEvents && !q.OutOfOrder && !q.Profiling {
		// Events for a deadline's report and the reads alone: in order, the queue runs
		// each launch after the one before without an event and a wait list for each.
		evs, failed, err = q.SubmitChainKept(n.chain)
	} else {
		evs, failed, err = q.SubmitChain(n.chain, useEvents)
	}
	var events [][]*cl.Event
	if evs != nil {
		if n.events == nil {
			n.events = make([][]*cl.Event, len(n.steps))
			for si, s := range n.steps {
				n.events[si] = make([]*cl.Event, len(s.launches))
			}
		}
		events = n.events
		for i, e := range evs {
			if i >= len(n.launchAt) {
				n.guard.event = e // the guard check, the chain's last launch
				continue
			}
			at := n.launchAt[i]
			events[at[0]][at[1]] = e
		}
	}
	if err != nil {
		_ = q.Finish()
		if failed == len(n.launchAt) && n.guard != nil {
			return events, fmt.Errorf("guard check: %w", err)
		}
		if failed < 0 || failed >= len(n.launchAt) {
			return events, err
		}
		s := n.steps[n.launchAt[failed][0]]
		return events, fmt.Errorf("layer %q (%s): %w", s.layer, s.typ, err)
	}
	return events, nil
}

// checkEvents reports a kernel that ended with an error status.
func (n *Network) checkEvents(events [][]*cl.Event) error {
	for si, evs := range events {
		for _, e := range evs {
			if e == nil {
				continue
			}
			if _, err := e.Status(); err != nil {
				return fmt.Errorf("layer %q (%s): %w", n.steps[si].layer, n.steps[si].typ, err)
			}
		}
	}
	return nil
}
