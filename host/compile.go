package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

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
	pl, err := e.plan(m)
	if err != nil {
		return nil, err
	}
	n, prepared, order, levels, stepOf := pl.n, pl.prepared, pl.order, pl.levels, pl.stepOf
	m = n.Model
	ok := false
	defer func() {
		if !ok {
			n.release()
		}
	}()
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
	n.logWarnings()
	if err := n.armGuards(); err != nil {
		return nil, err
	}
	n.crashNote = cl.NewCrashNote(n.crashText())
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
		if c := m.Tensor(name); !ok && c != nil && c.Elements() == 0 {
			// An empty output (a dimension of 0): no values, so no layer and no buffer.
			n.emptyOutputs = append(n.emptyOutputs, TensorInfo{Name: name, Shape: slices.Clone(c.Shape)})
			continue
		}
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

// planned is a network planned up to its memory, before any program is built: what
// Compile then builds and binds.
type planned struct {
	n        *Network
	order    []int // layer indexes in execution order
	levels   [][]int
	prepared []*preparedLayer // by step
	stepOf   map[int]int      // layer index → step
}

// plan runs Compile's phases up to the memory plan: shapes, graph passes, order, each
// layer's launch plan, the storage of its tensors and the memory plan.
func (e *Engine) plan(m *model.Model) (*planned, error) {
	// Passes rewrite the model; the caller's stays as it was.
	m = m.Clone()
	res := newResolver(e.Layers)
	if err := graph.InferShapesExcept(m, res.isCustom); err != nil {
		return nil, err
	}
	if err := checkNoEmpty(m); err != nil {
		return nil, err
	}
	if err := e.checkImplemented(m, res); err != nil {
		return nil, err
	}
	if err := e.optimize(m, res); err != nil {
		return nil, err
	}
	order, levels, err := executionOrder(m, res.isCustom)
	if err != nil {
		return nil, err
	}
	n := &Network{engine: e, Model: m, res: res, tensors: map[string]*deviceTensor{}}
	ok := false
	defer func() {
		if !ok {
			n.release()
		}
	}()
	var strided map[int][]int
	if !e.opts.KeepIntermediates && e.opts.DumpTensors == "" && e.useArena() && !e.storeHalf() {
		strided = n.stridedConcatParts(m)
	}
	prepared := make([]*preparedLayer, len(order))
	stepOf := make(map[int]int, len(order))
	tuning := e.progress("layers tuned", e.tunableLayers(res, m, order))
	for si, li := range order {
		stepOf[li] = si
		p, err := n.prepare(&m.Layers[li])
		if err != nil {
			return nil, err
		}
		prepared[si] = p
		if tuning != nil && e.tunable(res, p.l) {
			tuning.step()
		}
	}
	if err := n.replanDeclinedStrides(strided, prepared, stepOf); err != nil {
		return nil, err
	}
	if err := n.planStorage(prepared); err != nil {
		return nil, err
	}
	if !e.storeHalf() {
		// Conversions run in a layer's step, which a split would have to repeat per half.
		n.planHalves(prepared, levels)
	}
	e.tuner.save()
	if err := n.planBuffers(prepared); err != nil {
		return nil, err
	}
	ok = true
	return &planned{n: n, order: order, levels: levels, prepared: prepared, stepOf: stepOf}, nil
}

// optimize folds BatchNormalization into convolutions and fuses activations and
// residual additions into the layers before them, unless Options.NoFuse says otherwise
// or a tensor dump wants every intermediate tensor. Layer types a custom layer overrides
// are left alone: the user's kernel would not know the fused attributes.
func (e *Engine) optimize(m *model.Model, res *resolver) error {
	if e.opts.NoFuse || e.opts.DumpTensors != "" {
		return nil
	}
	custom := res.isCustom
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
	cpu := e.device.IsCPU()
	opts := graph.FuseOptions{Keep: custom, InvertedResidual: cpu, GlobalAveragePool: cpu,
		MaxPool: cpu, Fire: cpu && !e.opts.KeepFires}
	if cu := e.device.ComputeUnits; e.device.IsCPU() && cu >= 8 {
		// Whole blocks where a launch costs more than the rows a band recomputes, and only
		// where the block's rows keep three quarters of the units busy
		// (docs/kernels/invres.md#when-a-block-takes-its-projection).
		opts.ProjectionMinRows = cu * 3 / 4
	}
	if e.device.IsCPU() {
		// Blocks of any size with at least 8 output rows per compute unit over the batch
		// (pwdwr runs two bands per unit; each recomputes the expanded rows it shares
		// with the next): MobileNetV2's blocks of 14 to 56 rows at batch 16 on 16 units.
		// Folding 7 rows per unit measured slower
		// (docs/kernels/invres.md#when-a-block-takes-its-projection).
		opts.ProjectionTallRows = 8 * max(e.device.ComputeUnits, 1)
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
func (e *Engine) checkImplemented(m *model.Model, res *resolver) error {
	var missing *UnimplementedError
	seen := map[string]bool{}
	for i := range m.Layers {
		l := &m.Layers[i]
		if res.shadows(l.Type) && !seen["override "+l.Type] {
			seen["override "+l.Type] = true
			e.logf("custom layer %q from %s replaces the built-in layer type for this run", l.Type, e.layerOrigin(l.Type))
		}
		if i := res.layer(l); i.custom != nil || i.op != nil {
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
	dt := &deviceTensor{name: name, shape: append([]int(nil), t.Shape...), buf: buf, off: n.slotOff[name], view: n.slotView[name], ready: ready, half: n.half[name]}
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
	data := constantBytes(t)
	if len(data) == 0 {
		return nil, fmt.Errorf("constant %q is empty", name)
	}
	if dt, ok, err := n.guardedConstant(name, data); ok || err != nil {
		if err == nil {
			n.tensors[name] = dt
		}
		return dt, err
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

// constantBytes is a constant's data as the device holds it: float16 widened to float32.
func constantBytes(t *model.Tensor) []byte {
	if t.Type == model.Float16 {
		return halfToFloatBytes(t.Data)
	}
	return t.Data
}

func halfToFloatBytes(b []byte) []byte {
	out := make([]byte, 2*len(b))
	for i := 0; i+1 < len(b); i += 2 {
		f := model.HalfToFloat32(binary.LittleEndian.Uint16(b[i:]))
		binary.LittleEndian.PutUint32(out[2*i:], math.Float32bits(f))
	}
	return out
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

// checkNoEmpty refuses a layer that reads or writes an empty tensor (a dimension of 0):
// the kernels and buffers take at least one value. A layer whose outputs are all empty
// folds away when an ONNX model loads, as do graph inputs fed nothing.
func checkNoEmpty(m *model.Model) error {
	empty := map[string][]int{}
	for _, t := range m.Tensors {
		if slices.Contains(t.Shape, 0) {
			empty[t.Name] = t.Shape
		}
	}
	if len(empty) == 0 {
		return nil
	}
	for _, l := range m.Layers {
		for _, names := range [][]string{l.Inputs, l.Outputs} {
			for _, name := range names {
				if shape, ok := empty[name]; ok {
					return fmt.Errorf("layer %q (%s): tensor %q is empty (shape %v); a layer may only have empty tensors when all of its outputs are empty, and is then left out when an ONNX model loads", l.Name, l.Type, name, shape)
				}
			}
		}
	}
	return nil
}
