package host

import (
	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/internal/opspec"
	"github.com/clhost/clhost/model"
)

// Batch splitting (Options.SplitBatch): on a CPU device each eligible layer runs as two
// launches of half the batch, lane 1 on the first images and lane 2 on the rest, and a
// lane's launch waits only on the same lane of the layers before it. The two lanes'
// kernels overlap in PoCL's thread pool: while one half of a layer runs its last work-
// groups, or waits for the driver to start it (with every worker asleep meanwhile), the
// other half's work keeps the cores busy (docs/runtime.md#split-batch).
//
// A half is the same kernel planned for N/2 images and half the compute units, bound at
// element offsets N/2 images further into each activation: kernels address images from
// their buffer offsets, so no kernel changes. Weights packed once at compile time are
// shared by both halves.

// minSplitUnits is the fewest compute units on which layers split by default: the
// halves hide the cost of waking every worker for each launch, which few cores barely
// pay: on 2 cores MobileNetV2 ran no faster split (docs/runtime.md#split-batch-measurements).
const minSplitUnits = 8

// minSplitBatch is the smallest batch whose layers split by default (SplitBatch Auto): at
// batch 8 MobileNetV2 ran as fast either way, and smaller halves leave less work per
// launch to overlap (docs/runtime.md#split-batch-measurements). SplitBatch On splits any even
// batch.
const minSplitBatch = 16

// lane values of a step's launches.
const (
	laneWhole = 0 // the whole batch
	laneFirst = 1 // images [0, N/2)
	laneLast  = 2 // images [N/2, N)
)

// splitBatch says whether the network's layers may split their batch.
func (e *Engine) splitBatch() bool {
	if !e.queue.OutOfOrder || e.opts.KeepIntermediates || e.opts.DumpTensors != "" {
		return false
	}
	switch e.opts.SplitBatch {
	case On:
		return true
	case Off:
		return false
	}
	return !e.device.IsGPU()
}

// planHalves plans the half-batch launches of every layer that can run in two halves
// (halfShapes); the others keep their whole-batch plan. By default (SplitBatch Auto) layers
// split on CPU devices of at least minSplitUnits compute units, at batches of at least
// minSplitBatch, unless more than a quarter of the network's levels run layers side by
// side: branches overlap in the out-of-order queue already, and twice the launches then
// cost more than the halves gain. Chosen by measurement on MobileNetV2, ResNet-18 and
// SqueezeNet (docs/runtime.md#split-batch-measurements).
func (n *Network) planHalves(prepared []*preparedLayer, levels [][]int) {
	if !n.engine.splitBatch() {
		return
	}
	side := 0
	for _, lv := range levels {
		if len(lv) > 1 {
			side++
		}
	}
	if n.engine.opts.SplitBatch == Auto && (4*side > len(levels) || n.engine.device.ComputeUnits < minSplitUnits) {
		return
	}
	dev := builtinkernels.DeviceInfoOf(n.engine.device)
	// The halves run side by side, each on about half the cores: tiles chosen for half
	// the units keep as many work-items per core as the whole batch had.
	dev.ComputeUnits = max(dev.ComputeUnits/2, 1)
	for _, p := range prepared {
		if p.custom != nil || p.plan == nil || len(p.plan.Launches) == 0 || p.plan.AliasInput >= 0 {
			continue
		}
		minBatch := 2
		if n.engine.opts.SplitBatch == Auto {
			minBatch = minSplitBatch
		}
		in, out, ok := n.halfShapes(p.l, minBatch)
		if !ok {
			continue
		}
		im := n.res.layer(p.l)
		if !im.builtin() {
			continue
		}
		op := im.op
		half, err := op.Plan(p.l, in, out, dev)
		if err != nil || len(half.Launches) == 0 || half.AliasInput >= 0 || half.OutputBatchStride != p.plan.OutputBatchStride {
			continue
		}
		if len(half.Setup) > 0 && !n.setupReadsOnlyConstants(p.l, half) {
			continue // a per-inference setup would race between the halves
		}
		p.half = half
	}
}

// splitTypes are the layer types whose images are computed independently of each other
// given batch-major activations (attributes checked in halfShapes).
var splitTypes = map[string]bool{
	"Conv": true, opspec.InvertedResidualType: true, opspec.FireType: true,
	"MaxPool": true, "AveragePool": true, "GlobalMaxPool": true, "GlobalAveragePool": true,
	"BatchNormalization": true, "Relu": true, "LeakyRelu": true, "Sigmoid": true, "Tanh": true,
	"HardSigmoid": true, "HardSwish": true, "Clip": true, "Add": true, "Sub": true, "Mul": true,
	"Div": true, "Gemm": true, "Softmax": true, "Concat": true,
}

// broadcasts are the split types whose constant operands broadcast against the
// activations.
var broadcasts = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true}

// halfShapes returns a layer's input and output shapes with the batch halved, or false
// where the layer cannot run in halves: a type not in splitTypes, a Gemm that reads its
// A transposed, a Softmax or Concat along the batch, an activation whose first dimension
// is not the batch N (even, at least minBatch), or a constant with a batch
// dimension of its own (an element-wise operand with a value per image).
func (n *Network) halfShapes(l *model.Layer, minBatch int) (in, out [][]int, ok bool) {
	if !splitTypes[l.Type] || len(l.Outputs) == 0 {
		return nil, nil, false
	}
	out0 := n.Model.Tensor(l.Outputs[0])
	if out0 == nil || len(out0.Shape) == 0 {
		return nil, nil, false
	}
	batch := out0.Shape[0]
	if batch < minBatch || batch%2 != 0 {
		return nil, nil, false
	}
	axis := func(name string, def int64) int {
		a := int(l.Int(name, def))
		if a < 0 {
			a += len(out0.Shape)
		}
		return a
	}
	switch l.Type {
	case "Gemm":
		// A classifier's Gemm runs in halves too, though each half reads all the
		// weights: run whole, it waits for both halves of the layer before it, which
		// measured slower (docs/runtime.md#split-batch-measurements).
		if l.Int("transA", 0) != 0 {
			return nil, nil, false
		}
	case "Softmax":
		if axis("axis", -1) <= 0 {
			return nil, nil, false
		}
	case "Concat":
		if axis("axis", 0) <= 0 {
			return nil, nil, false
		}
	}
	halve := func(name string) ([]int, bool) {
		t := n.Model.Tensor(name)
		if t == nil || t.Shape == nil {
			return nil, false
		}
		if t.IsConst() {
			// An element-wise operand broadcast along the batch may hold a value per
			// image; other layers' constants are weights (a Conv's W may well have
			// as many output channels as the batch has images).
			if broadcasts[l.Type] && len(t.Shape) == len(out0.Shape) && t.Shape[0] == batch {
				return nil, false
			}
			return t.Shape, true
		}
		if len(t.Shape) == 0 || t.Shape[0] != batch {
			return nil, false
		}
		s := append([]int(nil), t.Shape...)
		s[0] = batch / 2
		return s, true
	}
	in = make([][]int, len(l.Inputs))
	for i, name := range l.Inputs {
		if name == "" {
			continue
		}
		if in[i], ok = halve(name); !ok {
			return nil, nil, false
		}
	}
	out = make([][]int, len(l.Outputs))
	for i, name := range l.Outputs {
		if n.isConstant(name) {
			return nil, nil, false
		}
		if out[i], ok = halve(name); !ok {
			return nil, nil, false
		}
	}
	return in, out, true
}

// imageElems is the number of elements of one image of a batch-major tensor.
func imageElems(shape []int) int {
	if len(shape) == 0 || shape[0] == 0 {
		return 0
	}
	return elements(shape) / shape[0]
}

// bindLastHalf binds the main launches of a half plan a second time, for the images
// from N/2 on: activations' buffer offsets move N/2 images on (output 0's by the plan's
// batch stride where it has one), constants stay, and scratch buffers the setup launches
// do not write (per-inference temporaries) get a second buffer, so the halves never share
// them.
func (n *Network) bindLastHalf(layer string, plan *builtinkernels.Plan, prog *program, ins, outs []*deviceTensor,
	inBufs, outBufs, scratch []builtinkernels.BufferRef) ([]launch, error) {
	in := append([]builtinkernels.BufferRef(nil), inBufs...)
	for i, t := range ins {
		if t != nil && in[i].Buf != nil && !n.isConstant(t.name) {
			in[i].Off += t.shape[0] / 2 * imageElems(t.shape)
		}
	}
	out := append([]builtinkernels.BufferRef(nil), outBufs...)
	for i, t := range outs {
		stride := imageElems(t.shape)
		if i == 0 && plan.OutputBatchStride > 0 {
			stride = plan.OutputBatchStride
		}
		out[i].Off += t.shape[0] / 2 * stride
	}
	packed := setupScratch(plan)
	sc := append([]builtinkernels.BufferRef(nil), scratch...)
	for i := range plan.Scratch {
		if packed[i] {
			continue
		}
		if ref, ok := n.scratchRef(layer, i, 1); ok {
			sc[i] = ref
			continue
		}
		b, err := n.newScratch(plan, i)
		if err != nil {
			return nil, err
		}
		sc[i] = builtinkernels.BufferRef{Buf: b}
	}
	ls, ks, err := bindLaunches(prog.prog, plan.Launches, in, out, sc)
	n.kernels = append(n.kernels, ks...)
	return ls, err
}

// SplitLayers lists the layers that run in two halves of the batch.
func (n *Network) SplitLayers() []string {
	var out []string
	for _, s := range n.steps {
		if s.lanes != nil {
			out = append(out, s.layer)
		}
	}
	return out
}
