package host

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/model"
)

// preparedLayer is a layer with its implementation chosen and, for a built-in, its
// launch plan computed: enough to plan memory before any buffer exists.
type preparedLayer struct {
	l      *model.Layer
	custom *customlayer.Layer
	plan   *builtinkernels.Plan
	// halfPlan says plan stores the layer's tensors as half (storage.go).
	halfPlan bool
	// half, where set, is the plan of half the batch that the layer runs twice in its
	// place (split.go).
	half *builtinkernels.Plan
}

// prepare chooses a layer's implementation and plans a built-in's launches.
func (n *Network) prepare(l *model.Layer) (*preparedLayer, error) {
	im := n.res.layer(l)
	if im.custom != nil {
		return &preparedLayer{l: l, custom: im.custom}, nil
	}
	op := im.op
	inShapes, outShapes, err := n.layerShapes(l)
	if err != nil {
		return nil, err
	}
	if n.engine.storeHalf() {
		plan, ok, err := n.planHalf(l, op, inShapes, outShapes)
		if err != nil {
			return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
		}
		if ok {
			return &preparedLayer{l: l, plan: plan, halfPlan: true}, nil
		}
	}
	plan, err := n.floatPlan(l, op, inShapes, outShapes)
	if err != nil {
		return nil, err
	}
	return &preparedLayer{l: l, plan: plan}, nil
}

// planFloat plans a built-in layer with float storage, as prepare does without fp16.
func (n *Network) planFloat(l *model.Layer) (*builtinkernels.Plan, error) {
	im := n.res.layer(l)
	if im.op == nil {
		return nil, fmt.Errorf("layer %q (%s): no built-in op", l.Name, l.Type)
	}
	inShapes, outShapes, err := n.layerShapes(l)
	if err != nil {
		return nil, err
	}
	return n.floatPlan(l, im.op, inShapes, outShapes)
}

// floatPlan is a built-in layer's float plan: the tuner's choice among a Tunable op's
// candidates, else the op's own.
func (n *Network) floatPlan(l *model.Layer, op builtinkernels.Op, inShapes, outShapes [][]int) (*builtinkernels.Plan, error) {
	var plan *builtinkernels.Plan
	var err error
	if tun, ok := op.(builtinkernels.Tunable); ok && n.engine.opts.Tune != Off {
		plan, err = n.engine.tuner.plan(l, op, tun, inShapes, outShapes)
	} else {
		plan, err = op.Plan(l, inShapes, outShapes, n.engine.planDevice())
	}
	if err != nil {
		return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
	}
	return plan, nil
}

// layerShapes returns the shapes of a layer's inputs (nil for an omitted one) and outputs.
func (n *Network) layerShapes(l *model.Layer) (in, out [][]int, err error) {
	in = make([][]int, len(l.Inputs))
	for i, name := range l.Inputs {
		if name == "" {
			continue
		}
		t := n.Model.Tensor(name)
		if t == nil || t.Shape == nil {
			return nil, nil, fmt.Errorf("layer %q (%s): input %q has no known shape", l.Name, l.Type, name)
		}
		in[i] = t.Shape
	}
	out = make([][]int, len(l.Outputs))
	for i, name := range l.Outputs {
		t := n.Model.Tensor(name)
		if t == nil || t.Shape == nil {
			return nil, nil, fmt.Errorf("layer %q (%s): output %q has no known shape", l.Name, l.Type, name)
		}
		out[i] = t.Shape
	}
	return in, out, nil
}

// planBuffers decides which activations share device buffers (by liveness) and
// allocates those buffers. Graph outputs live to the end of the inference; graph inputs
// are rewritten by every inference, so their buffers are free once read. With
// Options.KeepIntermediates (tensor dumps, --check) nothing is shared.
func (n *Network) planBuffers(layers []*preparedLayer) error {
	m := n.Model
	root := map[string]string{} // alias → the tensor whose buffer it views
	find := func(name string) string {
		for {
			r, ok := root[name]
			if !ok {
				return name
			}
			name = r
		}
	}
	keep := n.engine.opts.KeepIntermediates || n.engine.opts.DumpTensors != ""
	byName := map[string]*memTensor{}
	var ts []*memTensor
	add := func(name string, def int, pinned bool) error {
		t := m.Tensor(name)
		if t == nil || t.Shape == nil {
			return fmt.Errorf("tensor %q has no known shape", name)
		}
		if !floatHeld(t.Type) {
			return fmt.Errorf("tensor %q is %s: activations must be float32 or integers (held as float32 values)", name, t.Type)
		}
		size := n.elemBytes(find(name)) * t.Elements()
		if size <= 0 {
			return fmt.Errorf("tensor %q has an empty shape %v", name, t.Shape)
		}
		mt := &memTensor{name: name, def: def, lastUse: def, bytes: size, pinned: pinned}
		byName[name] = mt
		ts = append(ts, mt)
		n.SumBytes += int64(size)
		return nil
	}
	for _, name := range m.Inputs {
		if err := add(name, -1, keep); err != nil {
			return fmt.Errorf("graph input: %w", err)
		}
	}
	for si, p := range layers {
		l := p.l
		for _, in := range l.Inputs {
			if t := byName[find(in)]; t != nil {
				t.lastUse = max(t.lastUse, si)
				t.consumer = append(t.consumer, si)
				t.custom = t.custom || p.custom != nil
			}
		}
		if p.plan != nil && p.plan.AliasInput >= 0 && len(p.plan.Launches) == 0 {
			if p.plan.AliasInput < len(l.Inputs) {
				for _, out := range l.Outputs {
					root[out] = l.Inputs[p.plan.AliasInput]
				}
			}
			continue
		}
		for _, out := range l.Outputs {
			if err := add(out, si, keep); err != nil {
				return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
			}
			byName[out].custom = p.custom != nil
		}
		for _, sc := range n.stepScratch(p) {
			mt := &memTensor{name: sc.name, def: si, lastUse: si, bytes: sc.bytes, pinned: keep, custom: sc.custom}
			ts = append(ts, mt)
			n.SumBytes += int64(sc.bytes)
		}
	}
	for _, out := range m.Outputs {
		if t := byName[find(out)]; t != nil {
			t.lastUse = math.MaxInt
		}
	}
	// Borrowed inputs lie in the caller's memory, not the network's; those a custom
	// kernel takes stay in guarded memory instead.
	guardOn := n.engine.guardBytes() > 0
	n.planBorrowedInputs(find, func(name string) bool { return guardOn && byName[name] != nil && byName[name].custom })
	ts = slices.DeleteFunc(ts, func(t *memTensor) bool {
		if n.borrowed[t.name] == nil {
			return false
		}
		n.SumBytes -= int64(t.bytes)
		return true
	})
	var parts map[string]partOf
	if !keep && n.engine.useArena() {
		ts, parts = n.concatInPlace(layers, ts, byName, func(name string) bool { return find(name) != name })
	}
	// A plan that spreads its output's images apart writes past a tensor of its own.
	for _, p := range layers {
		if p.plan != nil && p.plan.OutputBatchStride != 0 {
			if _, folded := parts[p.l.Outputs[0]]; !folded {
				return fmt.Errorf("layer %q (%s): planned to write its output inside a Concat's, which is not in place (an internal error)", p.l.Name, p.l.Type)
			}
		}
	}
	defer func() {
		// A folded input lies inside its Concat's output, whatever the plan.
		if n.slotBuf == nil {
			return
		}
		for name, p := range parts {
			n.slotBuf[name] = n.slotBuf[p.whole]
			n.slotOff[name] = n.slotOff[p.whole] + p.off
		}
	}()
	// Offsets keep a kernel's widest vector (float16, 64 bytes) aligned, and a custom
	// kernel's view valid as a sub-buffer.
	align := max(n.engine.device.BaseAlignBytes, 64)
	n.PeakLiveBytes = int64(peakLive(ts, len(layers)))
	all := ts
	ts, guardTotal := n.planGuards(layers, ts, align)
	arena := planOffsets(ts, align)
	n.slotBuf = map[string]*cl.Buffer{}
	n.slotOff = map[string]int{}
	n.slotView = map[string]*cl.Buffer{}
	n.mem, n.align = ts, align
	if len(ts) == 0 {
		return n.placeGuarded(all, guardTotal)
	}
	if !n.engine.useArena() {
		if err := n.bufferPerSlot(ts, align); err != nil {
			return err
		}
		return n.placeGuarded(all, guardTotal)
	}
	// One arena; built-in kernels take each tensor as the arena and its offset.
	whole, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, arena)
	if err != nil {
		return fmt.Errorf("activation memory of %d bytes (largest: %s): %w", arena, planLabel(largest(ts).name), err)
	}
	n.owned = append(n.owned, whole)
	n.PlannedBytes = int64(arena)
	for _, t := range ts {
		n.slotBuf[t.name] = whole
		n.slotOff[t.name] = t.offset / n.elemBytes(t.name)
		if !t.custom || t.offset == 0 {
			continue
		}
		// Custom kernels take their tensors at a buffer's start: a sub-buffer.
		sub, err := n.engine.subBuffer(whole, t.offset, t.bytes)
		if err != nil {
			// A driver that refuses sub-buffers still runs the network, with a buffer per
			// tensor: more memory, same results.
			n.engine.logf("sub-buffers refused (%v): one buffer per activation instead, without guard zones", err)
			n.guard = nil
			return n.bufferPerTensor(all)
		}
		n.owned = append(n.owned, sub)
		n.slotView[t.name] = sub
	}
	return n.placeGuarded(all, guardTotal)
}

// bufferPerSlot allocates a buffer per reuse slot (planSlots): tensors whose lifetimes
// do not overlap share a buffer, and no sub-buffer is made.
func (n *Network) bufferPerSlot(ts []*memTensor, align int) error {
	sizes := planSlots(ts, align)
	bufs := make(map[int]*cl.Buffer, len(sizes)) // by the slot's offset
	n.PlannedBytes = 0
	for s, base := 0, 0; s < len(sizes); base, s = base+sizes[s], s+1 {
		b, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, sizes[s])
		if err != nil {
			return fmt.Errorf("activation buffer of %d bytes: %w", sizes[s], err)
		}
		n.owned = append(n.owned, b)
		bufs[base] = b
		n.PlannedBytes += int64(sizes[s])
	}
	for _, t := range ts {
		n.slotBuf[t.name] = bufs[t.offset]
	}
	return nil
}

// bufferPerTensor gives every activation a buffer of its own, nothing shared.
func (n *Network) bufferPerTensor(ts []*memTensor) error {
	n.PlannedBytes = 0
	clear(n.slotOff)
	clear(n.slotView)
	for _, t := range ts {
		t.offset, t.pinned = 0, true
		b, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, t.bytes)
		if err != nil {
			return fmt.Errorf("%s (%d bytes): %w", planLabel(t.name), t.bytes, err)
		}
		n.owned = append(n.owned, b)
		n.slotBuf[t.name] = b
		n.PlannedBytes += int64(t.bytes)
	}
	// Nothing shares memory now, so no reuse ordering applies.
	n.mem = nil
	return nil
}

func largest(ts []*memTensor) *memTensor {
	l := ts[0]
	for _, t := range ts {
		if t.bytes > l.bytes {
			l = t
		}
	}
	return l
}

// addReuseDeps orders each writer of arena memory after every reader (or, unread, the
// writer) of any earlier tensor that held part of the same memory: on an out-of-order
// queue nothing else would stop a kernel from overwriting data another still reads.
func (n *Network) addReuseDeps() {
	for _, cur := range n.mem {
		if cur.def < 0 || cur.def >= len(n.steps) {
			continue
		}
		writers := cur.writers
		if len(writers) == 0 {
			writers = []int{cur.def}
		}
		for _, w := range writers {
			st := n.steps[w]
			for _, prev := range n.mem {
				if prev == cur || prev.lastUse >= cur.def || !sharesMemory(prev, cur, n.align) {
					continue
				}
				// The readers already wait on the writer, so they alone suffice.
				extra := prev.consumer
				if len(extra) == 0 && prev.def >= 0 {
					extra = []int{prev.def}
				}
				for _, d := range extra {
					if d == w {
						continue
					}
					// A lane of a split step must wait on every lane of the steps whose
					// memory it reuses, not only on its own lane of its data's producers.
					st.reuse = append(st.reuse, d)
					if !containsInt(st.deps, d) {
						st.deps = append(st.deps, d)
					}
				}
			}
			sortInts(st.deps)
		}
	}
}

// stepScratch is a layer's scratch memory that one inference writes and reads within
// the layer's own step: a built-in's padded or subsampled copy of the input, an
// intermediate of fused kernels, split-K partial sums; a custom layer's tensors
// reordered into the format its kernel declares (customReorders). Such buffers are
// planned like activations that live for that step alone, one per half of a split
// layer, so they share the arena with tensors not alive meanwhile and count in its
// figures. Scratch a setup launch writes (packed weights) keeps a buffer of its own: it
// lives as long as the network.
type stepScratch struct {
	name   string // the plan's key in slotBuf and slotOff (scratchKey)
	bytes  int
	custom bool // a custom kernel takes it: it needs a buffer of its own start
}

func (n *Network) stepScratch(p *preparedLayer) []stepScratch {
	if p.custom != nil {
		var out []stepScratch
		for i, bytes := range n.customReorders(p.l, p.custom) {
			out = append(out, stepScratch{name: scratchKey(p.l.Name, i, 0), bytes: bytes, custom: true})
		}
		return out
	}
	plan, lanes := p.plan, 1
	if plan == nil || plan.AliasInput >= 0 && len(plan.Launches) == 0 {
		return nil
	}
	if p.half != nil {
		plan, lanes = p.half, 2
	}
	setupWritten := setupScratch(plan)
	var out []stepScratch
	for i, size := range plan.Scratch {
		if setupWritten[i] || size <= 0 || slices.Contains(plan.Counters, i) {
			continue
		}
		for lane := range lanes {
			out = append(out, stepScratch{name: scratchKey(p.l.Name, i, lane), bytes: size})
		}
	}
	return out
}

// newScratch makes a scratch buffer of its own for scratch i of plan: zeroed where the
// plan keeps counters in it.
func (n *Network) newScratch(plan *builtinkernels.Plan, i int) (*cl.Buffer, error) {
	size := plan.Scratch[i]
	b, err := n.engine.ctx.NewBuffer(cl.MemReadWrite, size)
	if err != nil {
		return nil, fmt.Errorf("scratch buffer of %d bytes: %w", size, err)
	}
	n.owned = append(n.owned, b)
	if slices.Contains(plan.Counters, i) {
		if err := n.engine.queue.Write(b, 0, make([]byte, size), nil); err != nil {
			return nil, fmt.Errorf("zeroing counters: %w", err)
		}
	}
	return b, nil
}

// setupScratch marks the scratch buffers a plan's setup launches write.
func setupScratch(plan *builtinkernels.Plan) map[int]bool {
	marked := map[int]bool{}
	for _, la := range plan.Setup {
		for _, a := range la.Args {
			if a.Kind == builtinkernels.ArgScratch {
				marked[a.Index] = true
			}
		}
	}
	return marked
}

// scratchKey names scratch buffer i of a layer's lane (0: the whole batch or its first
// half; 1: the second half) in the memory plan. The NULs keep it apart from tensor
// names, which the plan shares its maps with; errors print it through planLabel.
func scratchKey(layer string, i, lane int) string {
	return fmt.Sprintf("\x00%s\x00%d\x00%d", layer, i, lane)
}

// planLabel is how errors name a planned tensor or scratch buffer.
func planLabel(name string) string {
	if parts := strings.Split(name, "\x00"); len(parts) == 4 && parts[0] == "" {
		return fmt.Sprintf("layer %q's scratch buffer %s (lane %s)", parts[1], parts[2], parts[3])
	}
	return fmt.Sprintf("tensor %q", name)
}

// scratchRef is where the plan put a layer lane's scratch buffer i, if it did.
func (n *Network) scratchRef(layer string, i, lane int) (builtinkernels.BufferRef, bool) {
	b, ok := n.slotBuf[scratchKey(layer, i, lane)]
	if !ok {
		return builtinkernels.BufferRef{}, false
	}
	return builtinkernels.BufferRef{Buf: b, Off: n.slotOff[scratchKey(layer, i, lane)]}, true
}

// floatHeld says whether activations of a type live on the device as float32 values:
// floats, and integers, which the built-in layers hold as float32 values as Cast writes
// them (exact to 2^24; the server refuses integer inputs beyond).
func floatHeld(t model.DataType) bool { return t == model.Float32 || t.IsInteger() }
