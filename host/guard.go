package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/clhost/clhost/cl"
)

// Guard zones: every tensor a custom kernel reads or writes (its activations, the
// reorder buffers it takes, the constants it reads) lies in one guarded buffer of the
// network's own, between guard regions filled with a pattern, and no built-in tensor
// shares that memory. Tensors of one size that the same custom types take, and whose
// lifetimes do not overlap, share a place there; neighbouring places share the guard
// between them, and where a change lies tells whose it is. After each inference the guards
// are compared with the pattern (by the host on CPU devices, else by one check kernel whose
// flags come back with the outputs), noting per region the farthest word changed from
// either edge and how many were. A kernel's stray write so lands in memory clhost owns
// and checks, not in another tensor or the host's heap, and the inference fails with the
// layer, kernel, argument and distance named
// (docs/debugging-custom-layers.md#guard-zones).

// DefaultGuardBytes is the guard on each side of a guarded tensor. A write that runs on
// from a tensor's edge (one tensor's length past its end, say) starts inside a guard
// and is caught however far it goes; a single stray write is caught within this
// distance.
const DefaultGuardBytes = 64 << 10

// guardPattern fills every guard: a quiet NaN with a payload no arithmetic produces.
const guardPattern uint32 = 0x7FC1A5E3

// guardRegion is one guard, in words of the guarded buffer: it lies past the end of
// the tensor below it and before the start of the one above it ("" at the buffer's
// ends).
type guardRegion struct {
	start, words           int
	below, above           string
	belowBytes, aboveBytes int
}

// guardUser is one custom-layer argument bound to a guarded tensor.
type guardUser struct {
	tensor string
	step   int
	what   string // "output 0", "input 1", `Data "weights"`
	output bool
}

// guards is a network's guarded memory and its check.
type guards struct {
	size    int // bytes each side (Options.GuardBytes)
	buf     *cl.Buffer
	regions []guardRegion
	offset  map[string]int // each guarded tensor's byte offset in buf
	users   map[string][]guardUser
	// members are the tensors of each guarded place, by the first one's name: tensors of
	// one size whose lifetimes do not overlap share a place and its guards.
	members map[string][]string
	table   *cl.Buffer
	flags   *cl.Buffer
	kernel  *cl.Kernel
	global  []int
	// host receives the flags: per region, the farthest word changed from its start and
	// from its end (from 1), and how many words changed.
	host  *cl.HostBuffer
	event *cl.Event // the check's, on queues with events
	// mem is the guarded buffer's storage where the device computes in host memory (a
	// CPU device): the host then checks the guards itself after the inference, which
	// costs less than a launch, and there is no kernel.
	mem     []byte
	pattern []byte // the pattern over the longest region, for host checks
}

// guardBytes is the guard size each side, or 0 when guards are off.
func (e *Engine) guardBytes() int {
	switch g := e.opts.GuardBytes; {
	case g < 0:
		return 0
	case g == 0:
		return DefaultGuardBytes
	default:
		return g
	}
}

// guardLayout places the guarded tensors (name → bytes, in order) end to end, with a
// guard of guard bytes before the first, between each two and after the last, offsets
// aligned to align, and returns their offsets, the regions and the buffer's size. Before
// the first guard and after the last lies unchecked padding, just enough (up to
// maxGuard) that a write running a whole tensor's length before its start or past its
// end still lands in memory of the network's own; inside, such a write crosses the guard
// it starts in.
func guardLayout(names []string, bytes map[string]int, guard, align int) (map[string]int, []guardRegion, int) {
	offsets := map[string]int{}
	var regions []guardRegion
	g := alignUp(guard, align)
	// end is the end of the tensor below the next guard, which starts there.
	end, below, belowBytes := 0, "", 0
	for _, name := range names {
		off := alignUp(end, align) + g
		regions = append(regions, guardRegion{start: end, words: off - end, below: below, belowBytes: belowBytes, above: name, aboveBytes: bytes[name]})
		offsets[name] = off
		end, below, belowBytes = off+bytes[name], name, bytes[name]
	}
	top := alignUp(end, align) + g
	regions = append(regions, guardRegion{start: end, words: top - end, below: below, belowBytes: belowBytes})
	padBefore, padAfter := 0, 0
	for _, name := range names {
		off, size := offsets[name], bytes[name]
		padBefore = max(padBefore, size-off)
		padAfter = max(padAfter, off+2*size-top)
	}
	padBefore = alignUp(min(padBefore, maxGuard), align)
	padAfter = alignUp(min(padAfter, maxGuard), align)
	for name := range offsets {
		offsets[name] += padBefore
	}
	// Regions are kept in words.
	for i := range regions {
		regions[i].start = (regions[i].start + padBefore) / 4
		regions[i].words /= 4
	}
	return offsets, regions, padBefore + top + padAfter
}

// guardCheckSource is the check kernel: work-item (i, r) scans every size0-th word of
// region r from i, and raises the region's flags to the farthest word changed counted
// from the region's start and from its end (from 1), and by the number changed.
const guardCheckSource = `
__kernel void guard_check(__global const uint* mem, __global const uint* table, uint pattern, __global uint* flags)
{
    const uint r = get_global_id(1);
    const uint start = table[2 * r], words = table[2 * r + 1];
    uint fromStart = 0, fromEnd = 0, changed = 0;
    for (uint j = get_global_id(0); j < words; j += get_global_size(0)) {
        if (mem[start + j] != pattern) {
            fromStart = max(fromStart, j + 1);
            fromEnd = max(fromEnd, words - j);
            changed++;
        }
    }
    if (changed) {
        atomic_max(&flags[3 * r], fromStart);
        atomic_max(&flags[3 * r + 1], fromEnd);
        atomic_add(&flags[3 * r + 2], changed);
    }
}
`

// armGuards builds the check, once every layer is bound (a failed compile builds
// nothing), and fills the guards.
func (n *Network) armGuards() error {
	g, e := n.guard, n.engine
	if g == nil {
		return nil
	}
	longest := 0
	for _, r := range g.regions {
		longest = max(longest, r.words)
	}
	if err := n.fillGuards(nil); err != nil {
		return err
	}
	if g.mem != nil {
		g.pattern = make([]byte, 4*longest)
		for i := 0; i < len(g.pattern); i += 4 {
			binary.LittleEndian.PutUint32(g.pattern[i:], guardPattern)
		}
		// The device's fill must show in the host's memory, or the driver keeps a copy of
		// its own and the check is the device's.
		if n.hostGuardHits() == nil {
			return nil
		}
		g.mem, g.pattern = nil, nil
	}
	var err error
	table := make([]byte, guardFlagBytes*len(g.regions))
	for i, r := range g.regions {
		binary.LittleEndian.PutUint32(table[8*i:], uint32(r.start))
		binary.LittleEndian.PutUint32(table[8*i+4:], uint32(r.words))
	}
	if g.table, err = e.ctx.NewBufferFrom(cl.MemReadOnly, table); err != nil {
		return fmt.Errorf("guard table: %w", err)
	}
	n.owned = append(n.owned, g.table)
	// The flags start at zero: the check only raises them, and fillGuards ran before
	// they existed.
	if g.flags, err = e.ctx.NewBufferFrom(cl.MemReadWrite, make([]byte, guardFlagBytes*len(g.regions))); err != nil {
		return fmt.Errorf("guard flags: %w", err)
	}
	n.owned = append(n.owned, g.flags)
	if g.host, err = e.queue.NewHostBuffer(guardFlagBytes * len(g.regions)); err != nil {
		return fmt.Errorf("guard flags: %w", err)
	}
	p, err := e.programs.get("clhost.GuardCheck", guardCheckSource, "")
	if err != nil {
		return fmt.Errorf("guard check: %w", err)
	}
	if g.kernel, err = p.prog.Kernel("guard_check"); err != nil {
		return fmt.Errorf("guard check: %w", err)
	}
	n.kernels = append(n.kernels, g.kernel)
	pat := make([]byte, 4)
	binary.LittleEndian.PutUint32(pat, guardPattern)
	for i, err := range []error{g.kernel.SetArgBuffer(0, g.buf), g.kernel.SetArgBuffer(1, g.table),
		g.kernel.SetArgBytes(2, pat), g.kernel.SetArgBuffer(3, g.flags)} {
		if err != nil {
			return fmt.Errorf("guard check: argument %d: %w", i, err)
		}
	}
	// A GPU takes a wide sweep of each region; a CPU one work-group's worth.
	width := 1024
	if e.device.IsCPU() {
		width = 64
	}
	g.global = []int{min(width, alignUp(longest, 64)), len(g.regions)}
	return nil
}

// fillGuards writes the pattern into the regions (all when only is nil) and zeroes the
// flags.
func (n *Network) fillGuards(only []int) error {
	g, q := n.guard, n.engine.queue
	pat := make([]byte, 4)
	binary.LittleEndian.PutUint32(pat, guardPattern)
	var evs []*cl.Event
	defer func() {
		for _, ev := range evs {
			ev.Release()
		}
	}()
	fill := func(r guardRegion) error {
		ev, err := q.Fill(g.buf, pat, 4*r.start, 4*r.words, nil)
		if err != nil {
			return fmt.Errorf("filling the guard at word %d: %w", r.start, err)
		}
		evs = append(evs, ev)
		return nil
	}
	if only == nil {
		for _, r := range g.regions {
			if err := fill(r); err != nil {
				return err
			}
		}
	}
	for _, i := range only {
		if err := fill(g.regions[i]); err != nil {
			return err
		}
	}
	if g.flags != nil {
		if err := q.Write(g.flags, 0, make([]byte, guardFlagBytes*len(g.regions)), nil); err != nil {
			return fmt.Errorf("clearing the guard flags: %w", err)
		}
	}
	return q.Finish()
}

// enqueueGuardRead enqueues the read of the check's flags (the chain's last launch:
// buildChain) into host memory that needs no further copy.
func (n *Network) enqueueGuardRead(q *cl.Queue) error {
	g := n.guard
	var wait []*cl.Event
	if g.event != nil {
		wait = []*cl.Event{g.event}
	}
	if err := q.ReadInto(g.host, 0, g.flags, 0, len(g.host.Bytes), wait); err != nil {
		return fmt.Errorf("reading the guard flags: %w", err)
	}
	return nil
}

// readGuards looks at the flags once the queue has drained and returns the violations
// as a *GuardError, after restoring the guards they touched.
func (n *Network) readGuards() error {
	g := n.guard
	var hit []int
	if g.mem != nil {
		hit = n.hostGuardHits()
	} else {
		for i := range g.regions {
			if binary.LittleEndian.Uint32(g.host.Bytes[guardFlagBytes*i+8:]) != 0 {
				hit = append(hit, i)
			}
		}
	}
	if len(hit) == 0 {
		return nil
	}
	ge := &GuardError{}
	for _, i := range hit {
		ge.Violations = append(ge.Violations, n.guardViolations(i)...)
	}
	if err := n.fillGuards(hit); err != nil {
		return fmt.Errorf("%w; restoring the guards: %v", ge, err)
	}
	return ge
}

// GuardViolation is one guard a custom kernel wrote into.
type GuardViolation struct {
	// Layer, Type, Entry and Where (the config's file:line) name the custom layer
	// whose kernel takes the tensor: its writer when a custom layer writes it, else
	// its custom reader (Others lists the other custom layers that take it).
	Layer, Type, Entry, Where string
	// Arg is the argument ("output 0", "input 1", `Data "w"`), Tensor the model's
	// tensor and TensorBytes its size.
	Arg, Tensor string
	TensorBytes int
	// After says past the end (else before the start); Bytes is how far the farthest
	// changed word lies from that edge, Words how many words of the guard changed;
	// Whole says the farthest is the guard's far end, so the write may go farther.
	After        bool
	Bytes, Words int
	Whole        bool
	// Either says the changed words touch neither of the guard's edges, so the write
	// is this tensor's or the other neighbour's (the violation next to it).
	Either bool
	// Candidates are the other layers of the same kernel whose outputs share this
	// tensor's memory at other times: the check after the inference cannot tell which
	// of them, or Layer, wrote.
	Candidates []string
	// Global and Local are the kernel's work sizes (Local empty: the driver's choice).
	Global, Local []int
	Others        []string
}

func (v GuardViolation) String() string {
	side := "past the end of"
	if !v.After {
		side = "before the start of"
	}
	dist := thousands(v.Bytes) + " bytes"
	if v.Whole {
		dist = "at least " + dist + " (the whole guard)"
	}
	who := fmt.Sprintf("layer %q", v.Layer)
	if len(v.Candidates) > 0 {
		var names []string
		for _, c := range v.Candidates {
			names = append(names, strconv.Quote(c))
		}
		who = fmt.Sprintf("layer %q or %s (their outputs share this memory at different times)", v.Layer, strings.Join(names, " or "))
	}
	s := fmt.Sprintf("%s (%s, kernel %s, %s): wrote %s %s %s (%s, %s bytes; %s words of the guard changed), global %s, local %s",
		who, v.Type, v.Entry, v.Where, dist, side, v.Arg, planLabel(v.Tensor), thousands(v.TensorBytes),
		thousands(v.Words), joinSizes(v.Global), localText(v.Local))
	if len(v.Others) > 0 {
		s += fmt.Sprintf("; also bound to %s", strings.Join(v.Others, ", "))
	}
	if v.Either {
		s += "; the changed words lie inside the guard between two tensors, so the write is this one's or its neighbour's, the line beside"
	}
	return s
}

// GuardError is an inference that a custom kernel's stray writes ended: its results are
// discarded, and the guards are restored for the next inference.
type GuardError struct {
	Violations []GuardViolation
}

func (e *GuardError) Error() string {
	var b strings.Builder
	b.WriteString("a custom kernel wrote outside its buffer; the inference's results are discarded:")
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	b.WriteString("\n  (--sanitize runs each custom layer alone, with guards of at least 2 MiB, as large as its buffers up to 64 MiB, and names every fault it finds there)")
	return b.String()
}

// guardFlagBytes are a region's flags: the farthest word changed from its start, from
// its end, and the count.
const guardFlagBytes = 12

// guardViolations describes region i's flags as the violation of the tensor whose edge
// the changed words touch: one past the end of the tensor below when they start at the
// region's start, before the start of the one above when they end at its end; both,
// marked Either, when they touch neither edge or both.
func (n *Network) guardViolations(i int) []GuardViolation {
	g := n.guard
	r := g.regions[i]
	var fromStart, fromEnd, changed int
	if g.mem != nil {
		fromStart, fromEnd, changed = hostGuardScan(g.mem[4*r.start : 4*(r.start+r.words)])
	} else {
		f := g.host.Bytes[guardFlagBytes*i:]
		fromStart, fromEnd, changed = int(binary.LittleEndian.Uint32(f)), int(binary.LittleEndian.Uint32(f[4:])), int(binary.LittleEndian.Uint32(f[8:]))
	}
	atStart, atEnd := fromEnd == r.words, fromStart == r.words
	var out []GuardViolation
	if r.below != "" && (atStart || !atEnd || r.above == "") {
		out = append(out, n.guardViolation(r.below, r.belowBytes, true, fromStart, changed, r.words))
	}
	if r.above != "" && (atEnd || !atStart || r.below == "") {
		out = append(out, n.guardViolation(r.above, r.aboveBytes, false, fromEnd, changed, r.words))
	}
	if len(out) == 2 {
		out[0].Either, out[1].Either = true, true
	}
	return out
}

// guardViolation names the custom kernel that takes the tensor at slot (a guarded
// place, key of guards.members) for a write far words past its end (after) or before its
// start, into a guard of words words. Where tensors of disjoint lifetimes share the
// place, the first writer is named and the others listed: the check after the inference
// cannot tell which of them wrote.
func (n *Network) guardViolation(slot string, tensorBytes int, after bool, far, changed, words int) GuardViolation {
	g := n.guard
	v := GuardViolation{Tensor: slot, TensorBytes: tensorBytes, After: after, Bytes: 4 * far, Words: changed, Whole: far == words}
	var users []guardUser
	for _, t := range g.members[slot] {
		users = append(users, g.users[t]...)
	}
	best := -1
	for j, u := range users {
		if best < 0 || u.output && !users[best].output {
			best = j
		}
	}
	for j, u := range users {
		s := n.steps[u.step]
		if j != best {
			if u.output && users[best].output && s.typ == n.steps[users[best].step].typ {
				v.Candidates = append(v.Candidates, s.layer)
				continue
			}
			if u.tensor == users[best].tensor {
				v.Others = append(v.Others, fmt.Sprintf("layer %q (%s)", s.layer, u.what))
			} else {
				v.Others = append(v.Others, fmt.Sprintf("layer %q (%s, %s, which holds this memory at another time)", s.layer, u.what, planLabel(u.tensor)))
			}
			continue
		}
		v.Layer, v.Type, v.Arg, v.Tensor = s.layer, s.typ, u.what, u.tensor
		if s.call != nil {
			v.Entry, v.Where = s.call.prog.Entry, s.call.cfg.Where()
			v.Global, v.Local = s.call.prog.Global, s.call.prog.Local
		}
	}
	return v
}

// addGuardUser records that custom step's argument what takes a tensor, when it is
// guarded.
func (n *Network) addGuardUser(tensor string, step int, what string, output bool) {
	if n.guard == nil {
		return
	}
	if _, ok := n.guard.offset[tensor]; !ok {
		return
	}
	n.guard.users[tensor] = append(n.guard.users[tensor], guardUser{tensor: tensor, step: step, what: what, output: output})
}

// planGuards takes the tensors custom kernels read or write out of the memory plan's
// list (ts) into the guarded layout, with the constants custom layers read, and returns
// the rest and the guarded buffer's size (0: nothing guarded, or guards off).
func (n *Network) planGuards(layers []*preparedLayer, ts []*memTensor, align int) ([]*memTensor, int) {
	minGuard := n.engine.guardBytes()
	if minGuard == 0 {
		return ts, 0
	}
	var names []string
	bytes := map[string]int{}
	members := map[string][]*memTensor{}
	kinds := guardKinds(layers)
	rest := ts[:0:0]
	for _, t := range ts {
		if !t.custom {
			rest = append(rest, t)
			continue
		}
		if place := sharedGuardPlace(names, bytes, members, kinds, t); place != "" {
			members[place] = append(members[place], t)
			continue
		}
		names = append(names, t.name)
		bytes[t.name] = t.bytes
		members[t.name] = []*memTensor{t}
	}
	for _, p := range layers {
		if p.custom == nil {
			continue
		}
		for _, in := range p.l.Inputs {
			if _, seen := bytes[in]; seen || !n.isConstant(in) {
				continue
			}
			if size := len(constantBytes(n.Model.Tensor(in))); size > 0 {
				names = append(names, in)
				bytes[in] = size
			}
		}
	}
	if len(names) == 0 {
		return ts, 0
	}
	offsets, regions, total := guardLayout(names, bytes, minGuard, align)
	n.guard = &guards{size: alignUp(minGuard, align), offset: offsets, regions: regions, users: map[string][]guardUser{}, members: map[string][]string{}}
	for _, place := range names {
		n.guard.members[place] = []string{place}
		for _, t := range members[place] {
			if t.name != place {
				offsets[t.name] = offsets[place]
				n.guard.members[place] = append(n.guard.members[place], t.name)
			}
		}
	}
	return rest, total
}

// guardKinds gives each tensor that custom layers take the custom types that take it,
// written "Type>" for a writer and ">Type" for a reader, sorted and joined.
func guardKinds(layers []*preparedLayer) map[string]string {
	sets := map[string][]string{}
	for _, p := range layers {
		if p.custom == nil {
			continue
		}
		for _, in := range p.l.Inputs {
			sets[in] = append(sets[in], ">"+p.l.Type)
		}
		for _, out := range p.l.Outputs {
			sets[out] = append(sets[out], p.l.Type+">")
		}
	}
	kinds := make(map[string]string, len(sets))
	for name, set := range sets {
		slices.Sort(set)
		kinds[name] = strings.Join(slices.Compact(set), " ")
	}
	return kinds
}

// sharedGuardPlace returns a guarded place t can share: one of t's own size none of whose
// tensors is alive with it, so that the guards still lie at t's edges, and whose tensors
// the same custom types take (kinds), so that a violation there names one kernel; "" if
// none. A network whose every ReLU is custom would otherwise hold each activation apart,
// several times the memory of the plan without guards.
func sharedGuardPlace(places []string, bytes map[string]int, members map[string][]*memTensor, kinds map[string]string, t *memTensor) string {
	if t.pinned || kinds[t.name] == "" {
		return ""
	}
	for _, p := range places {
		if bytes[p] != t.bytes || kinds[p] != kinds[t.name] {
			continue
		}
		free := true
		for _, m := range members[p] {
			if overlapsInTime(m, t) {
				free = false
				break
			}
		}
		if free {
			return p
		}
	}
	return ""
}

// placeGuarded allocates the guarded buffer and gives each guarded activation its place
// and view there (constants get theirs when uploaded: Network.input).
func (n *Network) placeGuarded(all []*memTensor, total int) error {
	g := n.guard
	if g == nil {
		return nil
	}
	var buf *cl.Buffer
	var err error
	if n.engine.device.IsCPU() && !n.engine.guardCheckKernel {
		buf, g.mem, err = n.engine.ctx.NewSharedBuffer(cl.MemReadWrite, total)
	} else {
		buf, err = n.engine.ctx.NewBuffer(cl.MemReadWrite, total)
	}
	if err != nil {
		return fmt.Errorf("guarded memory of %d bytes for custom layers: %w", total, err)
	}
	n.owned = append(n.owned, buf)
	g.buf = buf
	n.PlannedBytes += int64(total)
	for _, t := range all {
		off, ok := g.offset[t.name]
		if !ok {
			continue
		}
		view, err := n.engine.subBuffer(g.buf, off, t.bytes)
		if err != nil {
			n.engine.logf("sub-buffers refused (%v): one buffer per activation instead, without guard zones", err)
			n.guard = nil
			return n.bufferPerTensor(all)
		}
		n.owned = append(n.owned, view)
		n.slotBuf[t.name], n.slotOff[t.name], n.slotView[t.name] = g.buf, off/4, view
	}
	return nil
}

// guardedConstant uploads a constant a custom layer reads into its guarded place.
func (n *Network) guardedConstant(name string, data []byte) (*deviceTensor, bool, error) {
	if n.guard == nil {
		return nil, false, nil
	}
	off, ok := n.guard.offset[name]
	if !ok {
		return nil, false, nil
	}
	if err := n.engine.queue.Write(n.guard.buf, off, data, nil); err != nil {
		return nil, true, fmt.Errorf("constant %q: %w", name, err)
	}
	view, err := n.guard.buf.Sub(cl.MemReadOnly, off, len(data))
	if err != nil {
		return nil, true, fmt.Errorf("constant %q: guarded view: %w", name, err)
	}
	n.owned = append(n.owned, view)
	t := n.Model.Tensor(name)
	return &deviceTensor{name: name, shape: append([]int(nil), t.Shape...), buf: n.guard.buf, off: off / 4, view: view, ready: -1}, true, nil
}

// guardFindings are the violations of layer's kernel as findings of the check's report.
func guardFindings(ge *GuardError, layer string) []Finding {
	var out []Finding
	for _, v := range ge.Violations {
		if v.Layer != layer {
			continue
		}
		side := "past the end of"
		if !v.After {
			side = "before the start of"
		}
		out = append(out, Finding{Layer: v.Layer, Type: v.Type, Kind: OutOfBounds,
			Msg:   fmt.Sprintf("wrote %s bytes %s %s (caught by its guard zone)", thousands(v.Bytes), side, v.Arg),
			Entry: v.Entry, Where: v.Where, Global: v.Global, Local: v.Local, Tensor: v.Tensor})
	}
	return out
}

// hostGuardHits lists the regions whose bytes in host memory differ from the pattern.
// Past half a megabyte of guards the regions are compared on several threads at once:
// the comparison is bound by memory bandwidth, which one core does not fill.
func (n *Network) hostGuardHits() []int {
	g := n.guard
	differs := make([]bool, len(g.regions))
	check := func(i int) {
		r := g.regions[i]
		differs[i] = !bytes.Equal(g.mem[4*r.start:4*(r.start+r.words)], g.pattern[:4*r.words])
	}
	total := 0
	for _, r := range g.regions {
		total += 4 * r.words
	}
	workers := min(runtime.GOMAXPROCS(0), len(g.regions), total/(256<<10))
	if workers <= 1 {
		for i := range g.regions {
			check(i)
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(g.regions); i += workers {
					check(i)
				}
			}()
		}
		wg.Wait()
	}
	var hit []int
	for i, d := range differs {
		if d {
			hit = append(hit, i)
		}
	}
	return hit
}

// hostGuardScan is the check kernel's count on the host: the farthest word changed from
// the region's start and from its end (from 1), and how many are.
func hostGuardScan(mem []byte) (fromStart, fromEnd, changed int) {
	words := len(mem) / 4
	for j := 0; j < words; j++ {
		if binary.LittleEndian.Uint32(mem[4*j:]) != guardPattern {
			changed++
			fromStart = max(fromStart, j+1)
			fromEnd = max(fromEnd, words-j)
		}
	}
	return fromStart, fromEnd, changed
}
