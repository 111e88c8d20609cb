package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/builtin_kernels/opspec"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/host/cl"
	"github.com/clhost/clhost/host/graph"
	"github.com/clhost/clhost/host/model"
)

// Tensor is a float32 tensor in host memory: its Shape, and its Data in C order. The
// built-in ops' CPU references take the same type.
type Tensor = builtinkernels.HostTensor

// launch is one prepared NDRange: kernel with its arguments already set.
type launch struct {
	kernel        *cl.Kernel
	global, local []int
}

// step is one layer bound to its kernels.
type step struct {
	layer    string
	typ      string
	custom   bool
	launches []launch
	// lanes is, per launch, the part of the batch it computes (laneWhole, or a half of
	// a split layer: split.go); nil when every launch takes the whole batch.
	lanes []int
	// deps are the steps whose completion this one waits on (producers of its inputs).
	deps []int
	// reuse are the deps this step waits on because it writes memory they used.
	reuse []int
	prog  *program
	// shapes and work sizes, for the kernel dump and error messages
	desc string
	// flops is the arithmetic of one run (multiply-adds count two), for the profile.
	flops float64
	// call is a custom layer's configuration and program, for the sanitizer.
	call *customCall
}

// deviceTensor is a tensor living in a device buffer.
type deviceTensor struct {
	name  string
	shape []int
	buf   *cl.Buffer
	// off is the element offset at which the tensor begins in buf: activations share
	// one arena buffer, each at its planned offset.
	off int
	// view is the tensor as a buffer of its own (a sub-buffer at off), for custom
	// kernels, which take their tensors at the buffer's start; nil when off is 0.
	view *cl.Buffer
	// ready is the step whose completion makes the tensor readable; -1 for graph inputs
	// and constants.
	ready int
	// format is the layout the buffer holds: BFYX, unless a custom layer wrote another
	// that all its readers take.
	format customlayer.Format
}

func (t *deviceTensor) byteOff() int { return 4 * t.off }

func (t *deviceTensor) ref() builtinkernels.BufferRef {
	return builtinkernels.BufferRef{Buf: t.buf, Off: t.off}
}

// whole returns the tensor as a buffer that starts where it does, as custom kernels
// take it.
func (t *deviceTensor) whole() (*cl.Buffer, error) {
	switch {
	case t.off == 0:
		return t.buf, nil
	case t.view != nil:
		return t.view, nil
	}
	return nil, fmt.Errorf("tensor %q lies at offset %d of a shared buffer and has no view of its own", t.name, t.off)
}

// Network is a model compiled for one engine: buffers allocated, programs built, kernel
// arguments set. See the package documentation for its concurrency model.
type Network struct {
	engine  *Engine
	Model   *model.Model
	steps   []*step
	levels  [][]int
	tensors map[string]*deviceTensor
	inputs  []*deviceTensor
	outputs []*deviceTensor
	owned   []*cl.Buffer // buffers to release (aliases appear once)
	slotBuf map[string]*cl.Buffer
	// slotOff and slotView are each activation's element offset in its slotBuf and, for
	// those custom kernels read or write at a nonzero offset, its sub-buffer.
	slotOff  map[string]int
	slotView map[string]*cl.Buffer
	mem      []*memTensor
	kernels  []*cl.Kernel
	progs    []*program
	// stageIn and stageOut are the pinned host buffers of the inputs and outputs, when
	// transfers go through them (Options.Pinned; transfer.go).
	stageIn, stageOut []*cl.HostBuffer
	// borrowed are the graph inputs kernels read from the caller's memory
	// (borrowed_inputs.go), by name.
	borrowed map[string]*borrowedInput

	mu       sync.Mutex
	released bool
	profile  []LayerTime
	align    int // the arena's offset alignment
	// lastWaiter is, per step, the last step whose wait list holds it.
	lastWaiter []int
	// chain is every launch of an inference, enqueued in one call; launchAt maps its
	// launches to (step, launch of the step).
	chain    *cl.Chain
	launchAt [][2]int
	// inPlace marks the steps of Concats whose inputs are written into the output in
	// place (concatInPlace): they launch nothing.
	inPlace map[int]bool
	// events is submit's per-step event lists, reused from one inference to the next
	// (inferences are serial).
	events [][]*cl.Event
	// PlannedBytes is the device memory of activations; SumBytes the sum of every
	// activation's size (what a network without buffer reuse would take); PeakLiveBytes
	// the largest total of activations alive at one time (the bound a plan can reach).
	PlannedBytes, SumBytes, PeakLiveBytes int64
}

// LayerTime is the device time of one layer in the last inference (Options.Profile).
type LayerTime struct {
	Layer    string
	Type     string
	Custom   bool
	Kernels  int
	DeviceNs uint64
	// Flops is the layer's arithmetic per inference for Conv, Gemm and MatMul (0 for
	// others), so a profile can show achieved GFLOP/s.
	Flops float64 `json:",omitempty"`
	// QueuedNs, StartNs and EndNs place the layer on the inference's timeline: when
	// its first kernel was enqueued by the host, when its first kernel started and when
	// its last one ended, in ns from the first enqueue of the inference. Idle time
	// between layers, and whether the host enqueued too late to fill it, show there.
	QueuedNs, StartNs, EndNs uint64 `json:",omitempty"`
	// Halves says the layer ran as two launches of half the batch each
	// (Options.SplitBatch): DeviceNs adds both halves' times, which overlap each other
	// and the layers around them.
	Halves bool `json:",omitempty"`
}

// stepWaits lists the layers in execution order with the layers each waits on, as
// "name<-dep1,dep2" strings; tests use it to check wait lists.
func (n *Network) stepWaits() []string {
	out := make([]string, len(n.steps))
	for i, s := range n.steps {
		deps := make([]string, len(s.deps))
		for j, d := range s.deps {
			deps[j] = n.steps[d].layer
		}
		out[i] = s.layer + "<-" + strings.Join(deps, ",")
	}
	return out
}

// levelNames returns the layer names per topological level.
func (n *Network) levelNames() [][]string {
	out := make([][]string, len(n.levels))
	for i, lv := range n.levels {
		for _, s := range lv {
			out[i] = append(out[i], n.steps[s].layer)
		}
	}
	return out
}

// CustomLayers lists the layers that run a user's custom kernel, with the config file.
func (n *Network) CustomLayers() []string {
	var out []string
	for _, s := range n.steps {
		if s.custom {
			out = append(out, fmt.Sprintf("%s (%s)", s.layer, s.typ))
		}
	}
	return out
}

// Compile binds every layer of the model to a kernel, builds the programs and
// allocates the buffers. Every layer type without an implementation is reported at once.
func (e *Engine) Compile(m *model.Model) (*Network, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("engine is closed")
	}
	if err := model.Validate(m); err != nil {
		return nil, err
	}
	// Passes rewrite the model; the caller's stays as it was.
	m = m.Clone()
	if err := graph.InferShapesExcept(m, e.isCustomType); err != nil {
		return nil, err
	}
	if err := e.checkImplemented(m); err != nil {
		return nil, err
	}
	if err := e.optimize(m); err != nil {
		return nil, err
	}
	order, levels, err := executionOrder(m, e.isCustomType)
	if err != nil {
		return nil, err
	}
	n := &Network{engine: e, Model: m, tensors: map[string]*deviceTensor{}}
	ok := false
	defer func() {
		if !ok {
			n.release()
		}
	}()
	var strided map[int][]int
	if !e.opts.KeepIntermediates && e.opts.DumpTensors == "" && e.useArena() {
		strided = n.stridedConcatParts(m)
	}
	prepared := make([]*preparedLayer, len(order))
	stepOf := make(map[int]int, len(order))
	tuning := e.progress("layers tuned", e.tunableLayers(m, order))
	for si, li := range order {
		stepOf[li] = si
		p, err := n.prepare(&m.Layers[li])
		if err != nil {
			return nil, err
		}
		prepared[si] = p
		if tuning != nil && e.tunable(p.l) {
			tuning.step()
		}
	}
	if err := n.replanDeclinedStrides(strided, prepared, stepOf); err != nil {
		return nil, err
	}
	n.planHalves(prepared, levels)
	e.tuner.save()
	if err := n.planBuffers(prepared); err != nil {
		return nil, err
	}
	building, err := n.prebuild(prepared)
	if err != nil {
		return nil, err
	}
	for _, name := range m.Inputs {
		var t *deviceTensor
		var err error
		if b := n.borrowed[name]; b != nil {
			t, err = n.bindBorrowedInput(name, b)
		} else {
			t, err = n.allocate(name, -1)
		}
		if err != nil {
			return nil, err
		}
		n.inputs = append(n.inputs, t)
	}
	for si := range order {
		if err := n.bindLayer(prepared[si]); err != nil {
			return nil, err
		}
		if prepared[si].custom != nil {
			building.step()
		}
	}
	n.findBorrowedArgs()
	n.addReuseDeps()
	if split := n.SplitLayers(); len(split) > 0 {
		e.logf("batch split: %d of %d layers run as two halves of the batch", len(split), len(n.steps))
	}
	for _, lv := range levels {
		var idx []int
		for _, li := range lv {
			idx = append(idx, stepOf[li])
		}
		n.levels = append(n.levels, idx)
	}
	for _, name := range m.Outputs {
		t, ok := n.tensors[name]
		if !ok {
			return nil, fmt.Errorf("graph output %q is produced by no layer", name)
		}
		n.outputs = append(n.outputs, t)
	}
	n.findLastWaiters()
	if err := n.buildChain(e.queue); err != nil {
		return nil, err
	}
	if e.pinned() {
		if err := n.pinnedStaging(); err != nil {
			return nil, err
		}
	}
	if e.opts.DumpKernels != "" {
		written, err := e.programs.dump(e.opts.DumpKernels, n.progs)
		if err != nil {
			return nil, err
		}
		for _, w := range written {
			e.logf("kernel dump: wrote %s", w)
		}
	}
	ok = true
	e.mu.Lock()
	e.networks = append(e.networks, n)
	e.mu.Unlock()
	return n, nil
}

// optimize folds BatchNormalization into convolutions and fuses activations and
// residual additions into the layers before them, unless Options.NoFuse says otherwise
// or a tensor dump wants every intermediate tensor. Layer types a custom layer overrides
// are left alone: the user's kernel would not know the fused attributes.
func (e *Engine) optimize(m *model.Model) error {
	if e.opts.NoFuse || e.opts.DumpTensors != "" {
		return nil
	}
	custom := func(typ string) bool { _, ok := e.Layers.Lookup(typ); return ok }
	if !custom("Conv") && !custom("BatchNormalization") {
		// Before Fuse: the fold must never see a Conv that already carries an activation.
		if k := graph.FoldBatchNorm(m); k > 0 {
			e.logf("fused %d BatchNormalization layers into their convolutions", k)
		}
	}
	// The larger fusions (MobileNet blocks, a classifier head's pool, a stem's MaxPool,
	// fire modules) run on CPUs only: each saves a launch and an intermediate tensor's
	// trip through memory, where GPUs run the parts apart, each with the whole device's
	// parallelism (docs/runtime.md#fusion-policy).
	opts := graph.FuseOptions{Keep: custom, InvertedResidual: e.Device.IsCPU(), GlobalAveragePool: e.Device.IsCPU(),
		MaxPool: e.Device.IsCPU(), Fire: e.Device.IsCPU() && !e.opts.KeepFires}
	if cu := e.Device.ComputeUnits; e.Device.IsCPU() && cu >= 8 {
		// Whole blocks where a launch costs more than the rows a band recomputes, and only
		// where the block's rows keep three quarters of the units busy
		// (docs/kernels/invres.md#when-a-block-takes-its-projection).
		opts.ProjectionMinRows = cu * 3 / 4
	}
	if e.Device.IsCPU() {
		// Blocks of any size with at least 8 output rows per compute unit over the batch
		// (pwdwr runs two bands per unit; each recomputes the expanded rows it shares
		// with the next): MobileNetV2's blocks of 14 to 56 rows at batch 16 on 16 units.
		// Folding 7 rows per unit measured slower
		// (docs/kernels/invres.md#when-a-block-takes-its-projection).
		opts.ProjectionTallRows = 8 * max(e.Device.ComputeUnits, 1)
	}
	st, err := graph.FuseWith(m, opts)
	if err != nil {
		return fmt.Errorf("fusion pass: %w", err)
	}
	if st.Layers() > 0 {
		e.logf("fusion: %s", st)
	}
	return nil
}

// checkImplemented lists every layer type that neither a custom layer nor a built-in
// implements, and notes custom layers that replace built-ins.
func (e *Engine) checkImplemented(m *model.Model) error {
	var missing *UnimplementedError
	seen := map[string]bool{}
	for i := range m.Layers {
		l := &m.Layers[i]
		if _, custom := e.Layers.Lookup(l.Type); custom {
			if _, builtin := builtinkernels.Lookup(l.Type); builtin && !seen["override "+l.Type] {
				seen["override "+l.Type] = true
				e.logf("custom layer %q from %s replaces the built-in layer type for this run", l.Type, e.layerOrigin(l.Type))
			}
			continue
		}
		if _, ok := builtinkernels.Lookup(l.Type); ok {
			continue
		}
		if !seen[l.Type] {
			seen[l.Type] = true
			missing = e.unimplemented(missing, l)
		}
	}
	if missing != nil {
		return missing
	}
	return nil
}

// allocate binds an activation tensor to the buffer the memory plan gave it.
func (n *Network) allocate(name string, ready int) (*deviceTensor, error) {
	t := n.Model.Tensor(name)
	if t == nil || t.Shape == nil {
		return nil, fmt.Errorf("tensor %q has no known shape", name)
	}
	buf, ok := n.slotBuf[name]
	if !ok {
		return nil, fmt.Errorf("tensor %q has no planned buffer", name)
	}
	dt := &deviceTensor{name: name, shape: append([]int(nil), t.Shape...), buf: buf, off: n.slotOff[name], view: n.slotView[name], ready: ready}
	n.tensors[name] = dt
	return dt, nil
}

// input returns the device tensor for a layer input, uploading a constant on first use.
func (n *Network) input(name string) (*deviceTensor, error) {
	if t, ok := n.tensors[name]; ok {
		return t, nil
	}
	t := n.Model.Tensor(name)
	if t == nil || !t.IsConst() {
		return nil, fmt.Errorf("tensor %q is neither a graph input, a constant nor produced by an earlier layer", name)
	}
	data := t.Data
	if t.Type == model.Float16 {
		data = halfToFloatBytes(data)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("constant %q is empty", name)
	}
	buf, err := n.engine.ctx.NewBufferFrom(cl.MemReadOnly, data)
	if err != nil {
		return nil, fmt.Errorf("constant %q: %w", name, err)
	}
	n.owned = append(n.owned, buf)
	dt := &deviceTensor{name: name, shape: append([]int(nil), t.Shape...), buf: buf, ready: -1}
	n.tensors[name] = dt
	return dt, nil
}

func halfToFloatBytes(b []byte) []byte {
	out := make([]byte, 2*len(b))
	for i := 0; i+1 < len(b); i += 2 {
		f := model.HalfToFloat32(binary.LittleEndian.Uint16(b[i:]))
		binary.LittleEndian.PutUint32(out[2*i:], math.Float32bits(f))
	}
	return out
}

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

// bindLayer binds one layer: a custom kernel where a config defines its type, else the
// built-in.
func (n *Network) bindLayer(p *preparedLayer) error {
	if p.custom != nil {
		return n.bindCustom(p.l, p.custom)
	}
	return n.bindBuiltin(p.l, p.plan, p.half)
}

// bindBuiltin binds a built-in layer's plan, or where half is set, half's launches
// twice: once for each half of the batch.
func (n *Network) bindBuiltin(l *model.Layer, plan, half *builtinkernels.Plan) error {
	ins := make([]*deviceTensor, 0, len(l.Inputs))
	inShapes := make([][]int, 0, len(l.Inputs))
	for _, name := range l.Inputs {
		if name == "" { // an omitted optional input
			ins = append(ins, nil)
			inShapes = append(inShapes, nil)
			continue
		}
		t, err := n.inputShapeOnly(name)
		if err != nil {
			return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
		}
		ins = append(ins, t)
		inShapes = append(inShapes, t.shape)
	}
	outShapes := make([][]int, len(l.Outputs))
	for i, name := range l.Outputs {
		t := n.Model.Tensor(name)
		if t == nil || t.Shape == nil {
			return fmt.Errorf("layer %q (%s): output %q has no known shape", l.Name, l.Type, name)
		}
		outShapes[i] = t.Shape
	}
	stepIdx := len(n.steps)
	s := &step{layer: l.Name, typ: l.Type}
	if plan.AliasInput >= 0 && len(plan.Launches) == 0 {
		if plan.AliasInput >= len(ins) || ins[plan.AliasInput] == nil {
			return fmt.Errorf("layer %q (%s): plan aliases missing input %d", l.Name, l.Type, plan.AliasInput)
		}
		src := ins[plan.AliasInput]
		if src.ready < 0 && n.isConstant(src.name) {
			if _, err := n.input(src.name); err != nil {
				return err
			}
		}
		for i, name := range l.Outputs {
			st := n.tensors[src.name]
			n.tensors[name] = &deviceTensor{name: name, shape: outShapes[i], buf: st.buf, off: st.off, view: st.view, ready: src.ready}
		}
		n.steps = append(n.steps, s)
		return nil
	}
	if half != nil {
		plan = half
	}
	// Materialise the inputs the plan binds (constants are uploaded only when a kernel
	// reads them: a Reshape's shape tensor never reaches the device).
	used := map[int]bool{}
	for _, la := range append(append([]builtinkernels.Launch(nil), plan.Setup...), plan.Launches...) {
		for _, a := range la.Args {
			if a.Kind == builtinkernels.ArgInput {
				used[a.Index] = true
			}
		}
	}
	for i := range ins {
		if used[i] {
			if ins[i] == nil {
				return fmt.Errorf("layer %q (%s): the kernel needs input %d, which is omitted", l.Name, l.Type, i)
			}
			t, err := n.input(ins[i].name)
			if err != nil {
				return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
			}
			ins[i] = t
		}
	}
	outs := make([]*deviceTensor, len(l.Outputs))
	for i, name := range l.Outputs {
		t, err := n.allocate(name, stepIdx)
		if err != nil {
			return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
		}
		outs[i] = t
	}
	if n.inPlace[stepIdx] {
		// The producers wrote the inputs into the output already: the step only passes
		// their completion on to the output's readers.
		var bound []*deviceTensor
		for _, t := range ins {
			if t != nil {
				bound = append(bound, t)
			}
		}
		s.deps = depsOf(bound)
		s.desc = fmt.Sprintf("in %v out %v; in place, nothing launched", inShapes, outShapes)
		n.steps = append(n.steps, s)
		return nil
	}
	scratch := make([]builtinkernels.BufferRef, len(plan.Scratch))
	for i := range plan.Scratch {
		if ref, ok := n.scratchRef(l.Name, i, 0); ok {
			scratch[i] = ref // planned with the activations (stepScratch)
			continue
		}
		b, err := n.newScratch(plan, i)
		if err != nil {
			return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
		}
		scratch[i] = builtinkernels.BufferRef{Buf: b}
	}
	prog, err := n.engine.programs.get(l.Type, plan.Source, plan.Options)
	if err != nil {
		return buildErrorf(l.Name, l.Type, err)
	}
	n.useProgram(prog)
	inBufs := make([]builtinkernels.BufferRef, len(ins))
	for i, t := range ins {
		if t != nil && used[i] {
			inBufs[i] = t.ref()
		}
	}
	outBufs := make([]builtinkernels.BufferRef, len(outs))
	for i, t := range outs {
		outBufs[i] = t.ref()
	}
	var descs []string
	bind := func(las []builtinkernels.Launch) ([]launch, error) {
		ls, ks, err := bindLaunches(prog.prog, las, inBufs, outBufs, scratch)
		n.kernels = append(n.kernels, ks...)
		for _, la := range las {
			descs = append(descs, fmt.Sprintf("%s global %v local %v", la.Kernel, la.Global, la.Local))
		}
		return ls, err
	}
	setup, err := bind(plan.Setup)
	if err != nil {
		return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
	}
	if len(setup) > 0 && n.setupReadsOnlyConstants(l, plan) {
		// Packed weights are computed once here, not at every inference.
		if err := runInOrder(n.engine.queue, setup); err != nil {
			return fmt.Errorf("layer %q (%s): setup: %w", l.Name, l.Type, err)
		}
		descs[len(descs)-len(setup)] = "once: " + descs[len(descs)-len(setup)]
		n.dropSetupOnlyConstants(l, plan, ins)
	} else {
		s.launches = append(s.launches, setup...)
	}
	main, err := bind(plan.Launches)
	if err != nil {
		return fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
	}
	s.launches = append(s.launches, main...)
	if half != nil {
		last, err := n.bindLastHalf(l.Name, plan, prog, ins, outs, inBufs, outBufs, scratch)
		if err != nil {
			return fmt.Errorf("layer %q (%s): second half: %w", l.Name, l.Type, err)
		}
		s.lanes = make([]int, len(s.launches)+len(last))
		for i := range s.lanes {
			s.lanes[i] = laneFirst
			if i >= len(s.launches) {
				s.lanes[i] = laneLast
			}
		}
		s.launches = append(s.launches, last...)
		descs = append(descs, fmt.Sprintf("each launch twice, on images [0, %d) and [%d, %d)", outs[0].shape[0]/2, outs[0].shape[0]/2, outs[0].shape[0]))
	}
	var bound []*deviceTensor
	for _, t := range ins {
		if t != nil {
			bound = append(bound, t)
		}
	}
	s.deps = depsOf(bound)
	s.prog = prog
	s.desc = fmt.Sprintf("in %v out %v; %s", inShapes, outShapes, strings.Join(descs, "; "))
	s.flops = layerFlops(l.Type, inShapes, convPlanes(l, inShapes, outShapes))
	prog.addInstance(fmt.Sprintf("%s (%s): %s", l.Name, l.Type, s.desc))
	n.steps = append(n.steps, s)
	return nil
}

// setupReadsOnlyConstants says whether every input a plan's setup launches read is a
// constant of the model, so that their results never change.
func (n *Network) setupReadsOnlyConstants(l *model.Layer, plan *builtinkernels.Plan) bool {
	for _, la := range plan.Setup {
		for _, a := range la.Args {
			if a.Kind == builtinkernels.ArgInput && (a.Index >= len(l.Inputs) || l.Inputs[a.Index] == "" || !n.isConstant(l.Inputs[a.Index])) {
				return false
			}
		}
	}
	return true
}

// dropSetupOnlyConstants frees the device copy of constants that only this layer's
// setup launches read (weights, once packed): the packed copy is all the network needs,
// and keeping both would double the weights' memory.
func (n *Network) dropSetupOnlyConstants(l *model.Layer, plan *builtinkernels.Plan, ins []*deviceTensor) {
	mainUse := map[int]bool{}
	for _, la := range plan.Launches {
		for _, a := range la.Args {
			if a.Kind == builtinkernels.ArgInput {
				mainUse[a.Index] = true
			}
		}
	}
	for _, la := range plan.Setup {
		for _, a := range la.Args {
			if a.Kind != builtinkernels.ArgInput || mainUse[a.Index] {
				continue
			}
			t := ins[a.Index]
			if t == nil || n.readers(t.name) != 1 {
				continue
			}
			if dt, ok := n.tensors[t.name]; ok {
				dt.buf.Release()
				dt.buf = nil
				delete(n.tensors, t.name)
			}
		}
	}
}

// readers counts the layers that take a tensor as an input.
func (n *Network) readers(name string) int {
	c := 0
	for i := range n.Model.Layers {
		for _, in := range n.Model.Layers[i].Inputs {
			if in == name {
				c++
				break
			}
		}
	}
	return c
}

// inputShapeOnly returns a layer input's tensor (shape and, for activations, buffer)
// without uploading constants.
func (n *Network) inputShapeOnly(name string) (*deviceTensor, error) {
	if t, ok := n.tensors[name]; ok {
		return t, nil
	}
	t := n.Model.Tensor(name)
	if t == nil || !t.IsConst() {
		return nil, fmt.Errorf("tensor %q is neither a graph input, a constant nor produced by an earlier layer", name)
	}
	return &deviceTensor{name: name, shape: t.Shape, ready: -1}, nil
}

func (n *Network) isConstant(name string) bool {
	t := n.Model.Tensor(name)
	return t != nil && t.IsConst()
}

func (n *Network) useProgram(p *program) {
	for _, q := range n.progs {
		if q == p {
			return
		}
	}
	n.progs = append(n.progs, p)
}

// findLastWaiters records, per step, the last step that waits on it; a step whose
// result a graph output reads is waited on by the final reads, so it is never released
// early.
func (n *Network) findLastWaiters() {
	n.lastWaiter = make([]int, len(n.steps))
	for i := range n.lastWaiter {
		n.lastWaiter[i] = -1
	}
	for j, s := range n.steps {
		for _, d := range s.deps {
			n.lastWaiter[d] = max(n.lastWaiter[d], j)
		}
	}
	for _, t := range n.outputs {
		if t.ready >= 0 {
			n.lastWaiter[t.ready] = math.MaxInt
		}
	}
}

// Inputs and Outputs describe the network's graph inputs and outputs.
func (n *Network) Inputs() []TensorInfo  { return infos(n.inputs) }
func (n *Network) Outputs() []TensorInfo { return infos(n.outputs) }

// TensorInfo names a graph input or output and gives its shape.
type TensorInfo struct {
	Name  string
	Shape []int
}

func infos(ts []*deviceTensor) []TensorInfo {
	out := make([]TensorInfo, len(ts))
	for i, t := range ts {
		out[i] = TensorInfo{Name: t.name, Shape: append([]int(nil), t.shape...)}
	}
	return out
}

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
	return n.run(inputs)
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
// producers, and reads the outputs.
func (n *Network) run(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	q := n.engine.queue
	var pin runtime.Pinner
	finished := false // the queue is drained: no command reads the caller's memory
	wrapped, err := n.bindCallerInputs(inputs, &pin)
	defer func() {
		if wrapped == nil && n.borrowed == nil {
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
	useEvents := q.OutOfOrder || q.Profiling
	events, err := n.submit(q, useEvents)
	defer func() {
		for _, evs := range events {
			for _, e := range evs {
				e.Release()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := q.Flush(); err != nil {
		return nil, err
	}
	outs := make(map[string]*Tensor, len(n.outputs))
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
			return nil, fmt.Errorf("output %q: %w", t.name, err)
		}
		outs[t.name] = &Tensor{Shape: append([]int(nil), t.shape...), Data: data}
	}
	if err := q.Finish(); err != nil {
		return nil, err
	}
	finished = true
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
			keep = append(keep, q.Profiling || s.isFinal(li) && unreleased)
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
	evs, failed, err := q.SubmitChain(n.chain, useEvents)
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
			at := n.launchAt[i]
			events[at[0]][at[1]] = e
		}
	}
	if err != nil {
		_ = q.Finish()
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

func (n *Network) recordProfile(events [][]*cl.Event) {
	n.profile = n.profile[:0]
	origin := uint64(math.MaxUint64)
	for si, s := range n.steps {
		if len(s.launches) == 0 {
			continue
		}
		lt := LayerTime{Layer: s.layer, Type: s.typ, Custom: s.custom, Kernels: len(s.launches), Flops: s.flops, Halves: s.lanes != nil}
		for li, e := range events[si] {
			queued, start, end, err := e.Profile()
			if err != nil || end < start {
				continue
			}
			lt.DeviceNs += end - start
			if li == 0 {
				lt.QueuedNs, lt.StartNs = queued, start
				origin = min(origin, queued)
			}
			lt.EndNs = max(lt.EndNs, end)
		}
		n.profile = append(n.profile, lt)
	}
	for i := range n.profile {
		p := &n.profile[i]
		if p.EndNs == 0 {
			continue
		}
		p.QueuedNs -= min(origin, p.QueuedNs)
		p.StartNs -= min(origin, p.StartNs)
		p.EndNs -= min(origin, p.EndNs)
	}
}

// Profile returns the per-layer device times of the last inference; it is empty unless
// the engine was opened with Options.Profile.
func (n *Network) Profile() []LayerTime {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]LayerTime(nil), n.profile...)
}

func (n *Network) release() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.released {
		return
	}
	n.released = true
	for _, k := range n.kernels {
		k.Release()
	}
	for _, h := range append(n.stageIn, n.stageOut...) {
		h.Release()
	}
	n.stageIn, n.stageOut = nil, nil
	// Newest first: sub-buffers before the arena they view.
	for i := len(n.owned) - 1; i >= 0; i-- {
		n.owned[i].Release()
	}
	n.kernels, n.owned = nil, nil
}

// Close releases the network's buffers and kernels (programs stay with the engine).
func (n *Network) Close() {
	n.release()
	e := n.engine
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.networks {
		if x == n {
			e.networks = append(e.networks[:i], e.networks[i+1:]...)
			break
		}
	}
}

// convPlanes is the output shape a layer's work is counted on: for a Conv that pools
// its planes (FusedGlobalAveragePoolAttr, FusedMaxPoolPrefix) the planes' shape, out
// otherwise.
func convPlanes(l *model.Layer, in, out [][]int) [][]int {
	_, maxPooled := graph.MaxPoolOf(l)
	pooled := l.Int(opspec.FusedGlobalAveragePoolAttr, 0) != 0 || maxPooled
	if l.Type != "Conv" || !pooled || len(in) < 2 || len(out) != 1 || len(out[0]) < 2 {
		return out
	}
	win, err := graph.ConvGeometry(l, in[0], in[1])
	if err != nil {
		return out
	}
	return [][]int{append([]int{out[0][0], out[0][1]}, win.Out...)}
}

// layerFlops counts the multiply-adds (as two operations) of the compute-heavy layers,
// the fused convolution layers as the convolutions they stand for (a fused kernel's
// recomputed rows not counted).
func layerFlops(typ string, in, out [][]int) float64 {
	if len(out) == 0 || len(in) < 2 || in[1] == nil {
		return 0
	}
	// window is a 4-D weight's multiply-adds per output value.
	window := func(w []int) float64 {
		if len(w) != 4 {
			return 0
		}
		return float64(w[1] * w[2] * w[3])
	}
	switch typ {
	case opspec.InvertedResidualType:
		// X (N, C, H, W), 1×1 W (M, C, 1, 1), depthwise W (M, 1, kh, kw), [projection W
		// (MO, M, 1, 1)]; the output's spatial dimensions are the depthwise ones.
		if len(in) < 4 || len(in[0]) != 4 || len(in[1]) != 4 || len(out[0]) != 4 {
			return 0
		}
		x, m, y := in[0], float64(in[1][0]), out[0]
		pixels := float64(y[0] * y[2] * y[3])
		macs := float64(x[0]*x[2]*x[3])*m*window(in[1]) + pixels*m*window(in[3])
		if len(in) > 5 && in[5] != nil {
			macs += pixels * float64(in[5][0]) * window(in[5])
		}
		return 2 * macs
	case opspec.FireType:
		// X (N, C, H, W), squeeze W (S, C, 1, 1), [B], 1×1 W (E1, S, 1, 1), [B], 3×3 W
		// (E3, S, 3, 3); every part on the output's plane.
		if len(in) < 6 || len(out[0]) != 4 || len(in[1]) != 4 || len(in[3]) != 4 || len(in[5]) != 4 {
			return 0
		}
		y := out[0]
		pixels := float64(y[0] * y[2] * y[3])
		return 2 * pixels * (float64(in[1][0])*window(in[1]) + float64(in[3][0])*window(in[3]) + float64(in[5][0])*window(in[5]))
	}
	switch typ {
	case "Conv":
		w := in[1] // M × C/group × kernel...
		k := 1
		for _, d := range w[1:] {
			k *= d
		}
		return 2 * float64(elements(out[0])) * float64(k)
	case "Gemm", "MatMul":
		a := in[0]
		if len(a) == 0 {
			return 0
		}
		k := a[len(a)-1]
		if typ == "Gemm" && len(a) == 2 && a[0] != out[0][0] {
			k = a[0] // transA
		}
		return 2 * float64(elements(out[0])) * float64(k)
	}
	return 0
}

func elements(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}
