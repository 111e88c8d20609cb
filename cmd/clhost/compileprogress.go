package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progressDelay is how long compiling runs before progress is shown: a warm start shows
// nothing. Tests shorten it.
var progressDelay = time.Second

// compileProgress shows host.Options.Progress on stderr once compiling has taken longer
// than progressDelay: one updating line on a terminal, otherwise a plain line at most
// once a second and at each phase's end.
type compileProgress struct {
	w     io.Writer
	tty   bool
	start time.Time
	mu    sync.Mutex
	timer *time.Timer
	// done, total and what are the last report; shown says a line went out, at last.
	done, total int
	what        string
	shown       bool
	last        time.Time
	stopped     bool
}

func newCompileProgress(w io.Writer, tty bool) *compileProgress {
	p := &compileProgress{w: w, tty: tty, start: time.Now()}
	p.timer = time.AfterFunc(progressDelay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.stopped && p.total > 0 {
			p.print(true)
		}
	})
	return p
}

// stderrIsTerminal says whether stderr takes a line rewritten with \r.
func stderrIsTerminal() bool {
	st, err := realStderr().Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update is the host.Options.Progress callback.
func (p *compileProgress) update(done, total int, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	phaseEnd := done == total
	p.done, p.total, p.what = done, total, what
	if time.Since(p.start) < progressDelay {
		return
	}
	switch {
	case p.tty && (phaseEnd || time.Since(p.last) >= 100*time.Millisecond):
		p.print(false)
	case !p.tty && (phaseEnd || time.Since(p.last) >= time.Second):
		p.print(false)
	}
}

// print writes the current report; the caller holds mu.
func (p *compileProgress) print(first bool) {
	line := fmt.Sprintf("clhost: %s %d/%d %s", verbOf(p.what), p.done, p.total, nounOf(p.what))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown, p.last = true, time.Now()
}

func verbOf(what string) string {
	if what == "layers tuned" {
		return "tuning"
	}
	return "compiling"
}

func nounOf(what string) string {
	if what == "layers tuned" {
		return "layers"
	}
	return what
}

// finish ends the display: where progress was shown, a last line says how long
// compiling took.
func (p *compileProgress) finish() {
	if p == nil {
		return
	}
	p.timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	if !p.shown {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "clhost: compiled in %.1f s\n", time.Since(p.start).Seconds())
}

// slowNote prints note on w if the work that stop ends runs longer than progressDelay:
// a first inference on PoCL compiles every kernel for its launch size, seconds in all.
func slowNote(w io.Writer, note string) (stop func()) {
	if w == nil {
		return func() {}
	}
	t := time.AfterFunc(progressDelay, func() { fmt.Fprintln(w, "clhost: "+note) })
	return func() { t.Stop() }
}
