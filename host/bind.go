package host

import (
	"fmt"
	"strings"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

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
			n.tensors[name] = &deviceTensor{name: name, shape: outShapes[i], buf: st.buf, off: st.off, view: st.view, ready: src.ready, half: st.half}
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
			input := n.input
			if n.halfLayers[l.Name] {
				input = n.inputHalf // weights as half too
			}
			t, err := input(ins[i].name)
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
