package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sync"
	"time"

	"github.com/clhost/clhost/cl"
)

// PoCL's compiler, clang inside this process, prints a bare "1 warning generated." to file
// descriptor 2 from C, naming no file or line; clhost shows the warnings themselves from
// the build log, so the command passes fd 2 through a filter that drops such lines.

// tallyHold is how long a partial line that may still become a tally is held back before
// it is written anyway: clang writes a tally in several pieces, microseconds apart.
const tallyHold = 100 * time.Millisecond

var stderrFilter struct {
	once   sync.Once
	stderr *os.File // os.Stderr when the filter was put on
	orig   *os.File // the real stderr, behind the filter
	flush  func()
}

// filterStderr puts the filter on fd 2, once per process, and returns the function that
// takes it off again: it puts the real stderr back on fd 2 and waits until everything
// written before is copied there. Call it before the process exits. Where the filter
// cannot be installed, stderr stays as it is.
func filterStderr() (flush func()) {
	stderrFilter.once.Do(func() {
		stderrFilter.flush = func() {}
		if f, err := installStderrFilter(); err == nil {
			stderrFilter.flush = sync.OnceFunc(f)
		}
	})
	return stderrFilter.flush
}

// realStderr is the file that stderr is to the user: the one behind the filter, where
// os.Stderr writes to it.
func realStderr() *os.File {
	if o := stderrFilter.orig; o != nil && os.Stderr == stderrFilter.stderr {
		return o
	}
	return os.Stderr
}

func installStderrFilter() (func(), error) {
	origFd, err := dupCloseOnExec(2)
	if err != nil {
		return nil, err
	}
	orig := os.NewFile(uintptr(origFd), "/dev/stderr")
	r, w, err := os.Pipe()
	if err != nil {
		orig.Close()
		return nil, err
	}
	// Fd puts the write end in blocking mode, which fd 2 shares: C code writing to it must
	// wait when the pipe is full, not lose its text.
	if err := dupFd(int(w.Fd()), 2); err != nil {
		r.Close()
		w.Close()
		orig.Close()
		return nil, err
	}
	w.Close()
	// A crash report goes to the real stderr as well, since the copying stops with it.
	debug.SetCrashOutput(orig, debug.CrashOptions{})
	cl.SetCrashOutput(int(orig.Fd()))
	stderrFilter.stderr, stderrFilter.orig = os.Stderr, orig
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyFiltered(orig, r)
	}()
	return func() {
		// Putting the real stderr back closes the pipe's last write end, so the copy ends
		// once it has drained the pipe. A child still holding the pipe would keep it open:
		// wait a while, not forever.
		if dupFd(origFd, 2) != nil {
			return
		}
		debug.SetCrashOutput(nil, debug.CrashOptions{})
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}, nil
}

// copyFiltered copies r to w through a tallyFilter until r ends.
func copyFiltered(w io.Writer, r *os.File) {
	f := &tallyFilter{w: w}
	buf := make([]byte, 32<<10)
	held := false
	for {
		n, err := r.Read(buf)
		f.Write(buf[:n])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			f.Flush()
		} else if err != nil {
			f.Flush()
			return
		}
		if h := f.holding(); h != held {
			held = h
			var deadline time.Time
			if h {
				deadline = time.Now().Add(tallyHold)
			}
			r.SetReadDeadline(deadline)
		}
	}
}

// tallyFilter writes what it is given to w, less the lines that are compiler tallies.
// Text of a line that cannot become one is written at once, so prompts and progress
// lines rewritten with \r show as they come.
type tallyFilter struct {
	w       io.Writer
	pending []byte // the start of a line that may yet be a tally
	passing bool   // the current line has been written in part: write the rest
}

// tallyPrefix matches every start of a tally line, and a little more.
var tallyPrefix = regexp.MustCompile(`^[0-9]+( [a-z0-9 ]*\.?)?$`)

func (f *tallyFilter) Write(p []byte) (int, error) {
	n := len(p)
	var out []byte
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if f.passing {
				out = append(out, p...)
			} else if f.pending = append(f.pending, p...); len(f.pending) > 64 || !tallyPrefix.Match(f.pending) {
				out = append(out, f.pending...)
				f.pending, f.passing = f.pending[:0], true
			}
			break
		}
		line := p[:i+1]
		p = p[i+1:]
		if f.passing {
			out = append(out, line...)
			f.passing = false
			continue
		}
		whole := append(f.pending, line...)
		f.pending = whole[:0]
		if !cl.IsCompilerTally(string(bytes.TrimRight(whole, "\r\n"))) {
			out = append(out, whole...)
		}
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return n, err
		}
	}
	return n, nil
}

// holding says whether the filter holds back the start of a line.
func (f *tallyFilter) holding() bool { return len(f.pending) > 0 }

// Flush writes the line start held back, if any.
func (f *tallyFilter) Flush() error {
	if len(f.pending) == 0 {
		return nil
	}
	_, err := f.w.Write(f.pending)
	f.pending, f.passing = f.pending[:0], true
	return err
}
