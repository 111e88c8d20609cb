package host

import (
	"fmt"
	"strings"
	"time"

	"github.com/clhost/clhost/cl"
)

// An inference whose context has a deadline waits for its kernels until then, not for
// ever: a kernel that never finishes (a loop whose bound the kernel never reaches) ends
// the inference with a *TimeoutError naming the custom layer still running. OpenCL can
// neither stop a kernel nor release what it uses, so the network and its engine are
// left as they are and refuse further work; the process, or a server's other devices,
// go on.

// TimeoutError is an inference that had not finished by its deadline.
type TimeoutError struct {
	// After is the time from the inference's first enqueue to the deadline's passing.
	After time.Duration
	// Layers are the custom layers whose kernels had not finished, each as
	// `layer "x" (Type, kernel k, file.xml:3, global 16,16, local chosen by the driver)`;
	// empty when every custom kernel had (a built-in layer, or a driver that is slow).
	Layers []string
}

func (e *TimeoutError) Error() string {
	what, has := "the inference", "has"
	if len(e.Layers) > 0 {
		what = strings.Join(e.Layers, " and ")
	}
	if len(e.Layers) > 1 {
		has = "have"
	}
	return fmt.Sprintf("%s %s not finished after %s; OpenCL cannot stop a running kernel, so this device runs nothing more in this process", what, has, e.After.Round(10*time.Millisecond))
}

// Stuck reports whether an inference ran past its deadline with a kernel still
// running: the engine then refuses every inference (its queue would never drain).
func (e *Engine) Stuck() bool { return e.stuck.Load() != nil }

// StuckError is an inference refused because an earlier one on the same engine ran past
// its deadline with a kernel still running (Cause): the device's queue never drains, so
// nothing more runs there.
type StuckError struct {
	Cause *TimeoutError
}

func (e *StuckError) Error() string {
	what := "an earlier inference"
	if len(e.Cause.Layers) > 0 {
		what += "'s " + strings.Join(e.Cause.Layers, " and ")
	}
	return fmt.Sprintf("the device is out of service: %s has not finished after %s, and OpenCL cannot stop a running kernel", what, e.Cause.After.Round(10*time.Millisecond))
}

// awaitDeadline runs finish, which blocks until every command enqueued so far has
// completed (the output reads and a Finish), until the deadline passes; then it marks
// the network stuck and names the custom steps not finished. finish goes on in its own
// goroutine, which a kernel that never ends holds for good.
func (n *Network) awaitDeadline(events [][]*cl.Event, started, deadline time.Time, finish func() error) error {
	q := n.engine.queue
	done := make(chan error, 1)
	go func() { done <- finish() }()
	wait := time.Until(deadline)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	te := &TimeoutError{After: time.Since(started)}
	var running []string
	for si, s := range n.steps {
		if !s.custom || events == nil || len(events[si]) == 0 {
			continue
		}
		ev := events[si][len(events[si])-1]
		if ev == nil {
			continue
		}
		if st, err := ev.Status(); err == nil && st != cl.Complete {
			te.Layers = append(te.Layers, n.describeStep(s))
			if st == cl.Running {
				running = append(running, n.describeStep(s))
			}
			if !q.OutOfOrder {
				break // in order: the first unfinished one is the one running
			}
		}
	}
	if len(running) > 0 {
		// Out of order, the layers after a stuck one wait for it without running:
		// name the ones the device says are running.
		te.Layers = running
	}
	n.stuck = te
	n.engine.stuck.Store(te)
	return te
}

// describeStep names a custom step with its kernel, config file:line and work sizes.
func (n *Network) describeStep(s *step) string {
	if s.call == nil {
		return fmt.Sprintf("layer %q (%s)", s.layer, s.typ)
	}
	return fmt.Sprintf("layer %q (%s, kernel %s, %s, global %s, local %s)", s.layer, s.typ, s.call.prog.Entry,
		s.call.cfg.Where(), joinSizes(s.call.prog.Global), localText(s.call.prog.Local))
}

// crashText is the network's line in the fault report (cl.CrashNote): its custom layers,
// the likely cause of a fault, since the built-in kernels are tested.
func (n *Network) crashText() string {
	var custom []string
	for _, s := range n.steps {
		if s.custom {
			custom = append(custom, n.describeStep(s))
		}
	}
	name := n.Model.Name
	if len(custom) == 0 {
		return fmt.Sprintf("model %q: built-in layers only", name)
	}
	const shown = 8
	text := fmt.Sprintf("model %q, whose custom kernels are the likely cause (--sanitize or oclgrind finds the line): %s", name, strings.Join(custom[:min(len(custom), shown)], ", "))
	if len(custom) > shown {
		text += fmt.Sprintf(" and %d more", len(custom)-shown)
	}
	return text
}
