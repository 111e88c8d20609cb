package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// The sanitizer runs a custom layer's kernel alone, on copies of the inputs it had in an
// inference, with every buffer (inputs, outputs, Data) an allocation of its own that holds
// the tensor between two guard regions: the kernel sees a sub-buffer, so what it writes
// before or after its tensor lands in a guard. Outputs start filled with a sentinel. It
// runs the kernel three times: twice the same (results must be bit-identical), and once
// with other guard bytes and another sentinel (results must not change: a kernel whose
// output does reads memory it never wrote). Any device runs it at the kernel's own speed.

// FindingKind classifies a sanitizer finding.
type FindingKind string

// Finding kinds.
const (
	// Unwritten: output elements the kernel never wrote.
	Unwritten FindingKind = "unwritten output"
	// OutOfBounds: bytes written before or past the end of a buffer.
	OutOfBounds FindingKind = "write outside a buffer"
	// InputWritten: the kernel changed one of its inputs or Data blobs.
	InputWritten FindingKind = "input written"
	// Nondeterministic: two runs on the same inputs gave different outputs.
	Nondeterministic FindingKind = "nondeterministic"
	// NonFinite: NaN or infinity in an output computed from finite inputs.
	NonFinite FindingKind = "non-finite output"
	// ReadsUnwritten: the output depends on memory the kernel should not read — past
	// the end of a buffer, or output elements before anything wrote them.
	ReadsUnwritten FindingKind = "reads memory it should not"
)

// Finding is one problem the sanitizer found in a custom layer.
type Finding struct {
	Layer, Type string
	Kind        FindingKind
	// Msg says what happened, e.g. "3,072 of 6,144 output elements never written;
	// first [0,4,0,0]".
	Msg string
	// Entry is the kernel, Where the CustomLayer's XML file:line, Global and Local the
	// work sizes it ran with (Local empty: chosen by the driver).
	Entry, Where  string
	Global, Local []int
	// Tensor is the tensor of the model the finding concerns (the input a kernel
	// writes into, the output it leaves unwritten), or the Data blob's name.
	Tensor string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s (kernel %s, %s, global %s, local %s)", f.Layer, f.Msg, f.Entry, f.Where, joinSizes(f.Global), localText(f.Local))
}

func joinSizes(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func localText(v []int) string {
	if len(v) == 0 {
		return "chosen by the driver"
	}
	return joinSizes(v)
}

// customCall is what the sanitizer needs to run a custom layer's kernel alone: its
// configuration and the program text, work sizes and layouts it was bound with.
type customCall struct {
	cfg  *customlayer.Layer
	prog *jit.Program
}

// Sanitizer patterns: the guard bytes and output sentinels of the first two runs and
// of the third. The first sentinel is a signalling NaN, which no arithmetic produces;
// the second is finite, so that a result computed from either differs.
const (
	guardA, guardC = 0xA5, 0x5A
	sentinelA      = 0x7FA5A5A5
	sentinelC      = 0x4A5A5A5A
	// maxGuard bounds each guard region; a guard is as large as its buffer up to it,
	// so a kernel that runs as far again past its end is still caught. minGuard is
	// large enough that a stray access a megabyte from a small tensor (an index scaled
	// by the wrong size) lands in a guard rather than in memory clhost does not watch.
	minGuard, maxGuard = 2 << 20, 64 << 20
)

// sanArg is one kernel argument of a sanitizer run.
type sanArg struct {
	what    string // "input 0", "output 0", `Data "weights"`
	tensor  string // the model's tensor
	kind    customlayer.TensorKind
	data    bool
	layout  *jit.Layout // tensors
	payload []byte      // what inputs and Data hold
	size    int         // bytes of the tensor
	guard   int
	buf     *cl.Buffer
	sub     *cl.Buffer
}

func (a *sanArg) release() {
	a.sub.Release()
	a.buf.Release()
}

// sanRun is one run's setting: guard byte and output sentinel, and whether the inputs'
// values are perturbed (their lowest bit flipped), so that a kernel that writes into an
// input what it already holds — the main inference may have written it there — still
// shows.
type sanRun struct {
	guard    byte
	sentinel uint32
	perturb  bool
}

// sanitizeStep runs one custom layer's kernel under the sanitizer; read gives the
// device's values of its inputs from the inference that just ran.
func (n *Network) sanitizeStep(s *step, read func(string) (*builtinkernels.HostTensor, error)) ([]Finding, error) {
	l := n.layer(s.layer)
	if s.call == nil || s.prog == nil || l == nil {
		return nil, fmt.Errorf("layer %q: no custom kernel bound", s.layer)
	}
	cfg, prog := s.call.cfg, s.call.prog
	where := fmt.Sprintf("layer %q (%s)", l.Name, l.Type)
	args, err := n.sanitizerArgs(l, cfg, prog, read)
	defer func() {
		for _, a := range args {
			a.release()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	k, err := s.prog.prog.Kernel(prog.Entry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	defer k.Release()
	for i, a := range args {
		if err := k.SetArgBuffer(i, a.sub); err != nil {
			return nil, fmt.Errorf("%s: argument %d: %w", where, i, err)
		}
	}
	// A kernel that strays past even these guards faults here, outside any inference:
	// the fault report names the layer being sanitized.
	note := cl.NewCrashNote("the sanitizer's run of " + n.describeStep(s))
	note.Start()
	defer note.Free()
	run := func(r sanRun) ([][]byte, error) {
		q := n.engine.queue
		for _, a := range args {
			if err := q.Write(a.buf, 0, a.image(r), nil); err != nil {
				return nil, fmt.Errorf("%s: writing %s: %w", where, a.what, err)
			}
		}
		ev, err := q.EnqueueNDRange(k, prog.Global, prog.Local, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: kernel %s: %w", where, prog.Entry, err)
		}
		defer ev.Release()
		if err := q.Finish(); err != nil {
			return nil, fmt.Errorf("%s: kernel %s: %w", where, prog.Entry, err)
		}
		if _, err := ev.Status(); err != nil {
			return nil, fmt.Errorf("%s: kernel %s: %w", where, prog.Entry, err)
		}
		out := make([][]byte, len(args))
		for i, a := range args {
			out[i] = make([]byte, a.buf.Size())
			if err := q.Read(a.buf, 0, out[i], nil); err != nil {
				return nil, fmt.Errorf("%s: reading %s: %w", where, a.what, err)
			}
		}
		return out, nil
	}
	first, other, perturbed := sanRun{guardA, sentinelA, false}, sanRun{guardC, sentinelC, false}, sanRun{guardA, sentinelA, true}
	var runs [4][][]byte
	for i, r := range []sanRun{first, first, other, perturbed} {
		if runs[i], err = run(r); err != nil {
			return nil, err
		}
	}
	ra, rb, rc, re := runs[0], runs[1], runs[2], runs[3]
	var found []Finding
	add := func(a *sanArg, kind FindingKind, format string, v ...any) {
		found = append(found, Finding{Layer: l.Name, Type: l.Type, Kind: kind, Msg: fmt.Sprintf(format, v...),
			Entry: prog.Entry, Where: cfg.Where(), Global: prog.Global, Local: prog.Local, Tensor: a.tensor})
	}
	type dependence struct {
		a   *sanArg
		msg string
	}
	var depends []dependence // per output: where the runs with other guards and sentinel differ
	for i, a := range args {
		for _, msg := range a.guardWrites([][]byte{ra[i], rc[i]}, []sanRun{first, other}) {
			add(a, OutOfBounds, "%s", msg)
		}
		if a.data || a.kind == customlayer.Input {
			c, at := a.changed(ra[i], first)
			if c2, at2 := a.changed(re[i], perturbed); c2 > c {
				c, at = c2, at2
			}
			if c > 0 {
				add(a, InputWritten, "wrote into its %s: %s of %s elements changed; first %s", a.what, thousands(c), thousands(a.elements()), at)
			}
			continue
		}
		st := a.compareOutputs(ra[i], rb[i], rc[i])
		if st.unwritten > 0 {
			add(a, Unwritten, "%s of %s elements of %s never written; first %s", thousands(st.unwritten), thousands(a.elements()), a.what, st.firstUnwritten)
		}
		if st.nondet > 0 {
			add(a, Nondeterministic, "two runs on the same inputs differ in %s of %s elements of %s; first %s (a race between work-items, or a read of memory it never wrote)",
				thousands(st.nondet), thousands(a.elements()), a.what, st.firstNondet)
		} else if st.depends > 0 {
			depends = append(depends, dependence{a, fmt.Sprintf("%s of %s elements of %s; first %s", thousands(st.depends), thousands(a.elements()), a.what, st.firstDepends)})
		}
	}
	if len(depends) > 0 {
		// Which memory it reads: rerun with the other guards but the first sentinel.
		rd, err := run(sanRun{guardC, sentinelA, false})
		if err != nil {
			return nil, err
		}
		guards := false
		for i, a := range args {
			if !a.data && a.kind == customlayer.Output && !bytes.Equal(a.payloadOf(ra[i]), a.payloadOf(rd[i])) {
				guards = true
			}
		}
		what := "it reads output elements before they are written (a race between work-items, or a read of uninitialized memory)"
		if guards {
			what = "it reads past the end (or before the start) of a buffer"
		}
		for _, d := range depends {
			add(d.a, ReadsUnwritten, "the output changes with memory the kernel should not read (%s): %s", d.msg, what)
		}
	}
	return found, nil
}

// sanitizerArgs lays out each kernel argument of a custom layer in a guarded buffer of
// its own: inputs hold the device's values in the layout the kernel takes.
func (n *Network) sanitizerArgs(l *model.Layer, cfg *customlayer.Layer, prog *jit.Program, read func(string) (*builtinkernels.HostTensor, error)) ([]*sanArg, error) {
	align := max(n.engine.device.BaseAlignBytes, 64)
	var args []*sanArg
	for _, arg := range cfg.Args() {
		a := &sanArg{}
		switch {
		case arg.Data != nil:
			name, err := n.matchData(l, arg.Data.Name)
			if err != nil {
				return args, err
			}
			a.what, a.data, a.tensor = fmt.Sprintf("Data %q", arg.Data.Name), true, name
			a.payload = constBytes(n.Model.Tensor(name))
			a.size = len(a.payload)
		case arg.Tensor.Kind == customlayer.Input:
			t := arg.Tensor
			a.what, a.kind = fmt.Sprintf("input %d", t.Port), customlayer.Input
			if t.Port >= len(prog.Inputs) || t.Port >= len(l.Inputs) {
				return args, fmt.Errorf("input port %d is not bound", t.Port)
			}
			lay := prog.Inputs[t.Port]
			a.layout = &lay
			name := l.Inputs[t.Port]
			a.tensor = name
			if n.isConstant(name) {
				a.payload = constBytes(n.Model.Tensor(name))
				a.layout = nil
			} else {
				v, err := read(name)
				if err != nil {
					return args, err
				}
				a.payload = toLayout(v.Data, lay)
			}
			a.size = len(a.payload)
		default:
			t := arg.Tensor
			a.what, a.kind = fmt.Sprintf("output %d", t.Port), customlayer.Output
			if t.Port >= len(prog.Outputs) {
				return args, fmt.Errorf("output port %d is not bound", t.Port)
			}
			lay := prog.Outputs[t.Port]
			a.layout = &lay
			a.size = 4 * lay.Size()
			if t.Port < len(l.Outputs) {
				a.tensor = l.Outputs[t.Port]
			}
		}
		if a.size == 0 {
			return args, fmt.Errorf("%s is empty", a.what)
		}
		a.guard = roundUp(min(max(a.size, minGuard), maxGuard), align)
		buf, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, 2*a.guard+roundUp(a.size, 4))
		if err != nil {
			return args, fmt.Errorf("%s: %w", a.what, err)
		}
		sub, err := buf.Sub(cl.MemReadWrite, a.guard, a.size)
		if err != nil {
			buf.Release()
			return args, fmt.Errorf("%s: %w", a.what, err)
		}
		a.buf, a.sub = buf, sub
		args = append(args, a)
	}
	return args, nil
}

func roundUp(v, m int) int { return (v + m - 1) / m * m }

// toLayout places a BFYX tensor's values where layout lay keeps them.
func toLayout(src []float32, lay jit.Layout) []byte {
	dst := make([]float32, lay.Size())
	d := lay.Dims
	i := 0
	for b := 0; b < d[0]; b++ {
		for f := 0; f < d[1]; f++ {
			for y := 0; y < d[2]; y++ {
				for x := 0; x < d[3]; x++ {
					if i < len(src) {
						dst[lay.Index(b, f, y, x)] = src[i]
					}
					i++
				}
			}
		}
	}
	return float32Bytes(dst)
}

// constBytes is a constant's data as the network uploads it (half widened to float).
func constBytes(t *model.Tensor) []byte {
	if t == nil {
		return nil
	}
	if t.Type == model.Float16 {
		return halfToFloatBytes(t.Data)
	}
	return append([]byte(nil), t.Data...)
}

// image is the buffer's content before run r: guards, then the tensor.
func (a *sanArg) image(r sanRun) []byte {
	img := make([]byte, a.buf.Size())
	for i := range img {
		img[i] = r.guard
	}
	p := img[a.guard : a.guard+a.size]
	if a.payload != nil {
		copy(p, a.given(r))
	} else {
		for i := 0; i+4 <= len(p); i += 4 {
			binary.LittleEndian.PutUint32(p[i:], r.sentinel)
		}
	}
	return img
}

func (a *sanArg) payloadOf(img []byte) []byte { return img[a.guard : a.guard+a.size] }

// given is what the argument holds before run r: its payload, perturbed where r says
// so for activations (float inputs with a layout; constants stay as they are).
func (a *sanArg) given(r sanRun) []byte {
	if !r.perturb || a.data || a.layout == nil || a.kind != customlayer.Input {
		return a.payload
	}
	p := append([]byte(nil), a.payload...)
	for i := 0; i < len(p); i += 4 {
		p[i] ^= 1
	}
	return p
}

func (a *sanArg) elements() int {
	if a.layout != nil {
		d := a.layout.Dims
		return d[0] * d[1] * d[2] * d[3]
	}
	return a.size / 4
}

// guardWrites describes the writes each run left in the guards.
func (a *sanArg) guardWrites(imgs [][]byte, runs []sanRun) []string {
	before, after := 0, 0 // farthest byte written, counted from the buffer's edge
	beforeN, afterN := 0, 0
	for k, img := range imgs {
		g := runs[k].guard
		b, bn := 0, 0
		for i := 0; i < a.guard; i++ {
			if img[i] != g {
				bn++
				b = max(b, a.guard-i)
			}
		}
		e, en := 0, 0
		tail := img[a.guard+a.size:]
		for i, v := range tail {
			if v != g {
				en++
				e = i + 1
			}
		}
		if b > before {
			before, beforeN = b, bn
		}
		if e > after {
			after, afterN = e, en
		}
	}
	var out []string
	describe := func(extent, count int, where string) string {
		s := fmt.Sprintf("wrote %s bytes %s %s", thousands(extent), where, a.what)
		if count != extent {
			s = fmt.Sprintf("wrote %s bytes as far as %s bytes %s %s", thousands(count), thousands(extent), where, a.what)
		}
		if extent >= a.guard {
			s += fmt.Sprintf(" (at least: the guard ends there, %s bytes)", thousands(a.guard))
		}
		return s
	}
	if before > 0 {
		out = append(out, describe(before, beforeN, "before the start of"))
	}
	if after > 0 {
		out = append(out, describe(after, afterN, "past the end of"))
	}
	return out
}

// changed counts the elements of an input that differ after run r from what it was
// given.
func (a *sanArg) changed(img []byte, r sanRun) (int, string) {
	p, given := a.payloadOf(img), a.given(r)
	if bytes.Equal(p, given) {
		return 0, ""
	}
	count, first := 0, ""
	a.each(func(at int, c [4]int) {
		if at+4 <= len(p) && !bytes.Equal(p[at:at+4], given[at:at+4]) {
			if count == 0 {
				first = coordText(c)
			}
			count++
		}
	})
	return count, first
}

// each visits the tensor's elements in logical (C) order: the byte offset in the payload
// and the coordinates (B, F, Y, X; a flat index for tensors without a layout).
func (a *sanArg) each(f func(at int, c [4]int)) {
	if a.layout == nil {
		for i := 0; i < a.size/4; i++ {
			f(4*i, [4]int{i, -1})
		}
		return
	}
	d := a.layout.Dims
	for b := 0; b < d[0]; b++ {
		for fe := 0; fe < d[1]; fe++ {
			for y := 0; y < d[2]; y++ {
				for x := 0; x < d[3]; x++ {
					f(4*a.layout.Index(b, fe, y, x), [4]int{b, fe, y, x})
				}
			}
		}
	}
}

// coordText writes coordinates from each: [b,f,y,x], or [i] for a flat index.
func coordText(c [4]int) string {
	if c[1] < 0 {
		return fmt.Sprintf("[%d]", c[0])
	}
	return fmt.Sprintf("[%d,%d,%d,%d]", c[0], c[1], c[2], c[3])
}

// outputStats compares an output over the three runs.
type outputStats struct {
	unwritten, nondet, depends                int
	firstUnwritten, firstNondet, firstDepends string
}

func (a *sanArg) compareOutputs(ra, rb, rc []byte) outputStats {
	var st outputStats
	pa, pb, pc := a.payloadOf(ra), a.payloadOf(rb), a.payloadOf(rc)
	le := binary.LittleEndian
	a.each(func(at int, c [4]int) {
		va, vb, vc := le.Uint32(pa[at:]), le.Uint32(pb[at:]), le.Uint32(pc[at:])
		wa, wc := va != sentinelA, vc != sentinelC
		switch {
		case !wa && !wc:
			if st.unwritten == 0 {
				st.firstUnwritten = coordText(c)
			}
			st.unwritten++
		case va != vb:
			if st.nondet == 0 {
				st.firstNondet = coordText(c)
			}
			st.nondet++
		case wa != wc || va != vc:
			if st.depends == 0 {
				st.firstDepends = coordText(c)
			}
			st.depends++
		}
	})
	return st
}

// thousands writes n with comma separators: 6,144.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
