package host

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// fp16 storage (Options.Precision fp16): each activation is stored as half or float, as
// its producer writes it. A layer whose op stores half (builtinkernels.HalfStorer) writes
// half; every other layer writes float. Some tensors stay float whatever writes them:
// graph inputs and outputs (the host side is float32), integer tensors (exact to 2^24
// in float, 2^11 in half) and every tensor a custom layer reads or writes (custom
// kernels run unchanged, and their JIT defines say float). Where a layer's plan reads or
// writes a tensor in the other storage, the plan converts around its kernels
// (builtinkernels.ConvertAround), as OpenVINO inserts reorders.

// planHalf plans a layer with half storage where its op can; ok is false where it
// cannot, or where the layer touches integer tensors.
func (n *Network) planHalf(l *model.Layer, op builtinkernels.Op, in, out [][]int) (*builtinkernels.Plan, bool, error) {
	hs, ok := op.(builtinkernels.HalfStorer)
	if !ok || n.touchesIntegers(l) {
		return nil, false, nil
	}
	return hs.PlanHalf(l, in, out, n.engine.planDevice())
}

// touchesIntegers says whether any tensor a layer reads or writes is of an integer type.
func (n *Network) touchesIntegers(l *model.Layer) bool {
	for _, names := range [][]string{l.Inputs, l.Outputs} {
		for _, name := range names {
			if t := n.Model.Tensor(name); name != "" && t != nil && !(t.Type == model.Float32 || t.Type == model.Float16) {
				return true
			}
		}
	}
	return false
}

// planStorage decides each activation's storage and adds the conversions the plans
// need. It runs once every layer is prepared and before the memory plan, which sizes
// each tensor by its storage.
func (n *Network) planStorage(layers []*preparedLayer) error {
	n.half, n.halfLayers, n.halfScratch = map[string]bool{}, map[string]bool{}, map[string]bool{}
	if !n.engine.storeHalf() {
		return nil
	}
	m := n.Model
	root := map[string]string{}
	find := func(name string) string {
		for {
			r, ok := root[name]
			if !ok {
				return name
			}
			name = r
		}
	}
	for _, p := range layers {
		if isAliasPlan(p) && p.plan.AliasInput < len(p.l.Inputs) {
			for _, out := range p.l.Outputs {
				root[out] = p.l.Inputs[p.plan.AliasInput]
			}
		}
	}
	forced := map[string]bool{}
	force := func(name string) {
		if name != "" {
			forced[find(name)] = true
		}
	}
	for _, name := range append(slices.Clone(m.Inputs), m.Outputs...) {
		force(name)
	}
	for _, t := range m.Tensors {
		if t.Type != model.Float32 && t.Type != model.Float16 {
			force(t.Name)
		}
	}
	for _, p := range layers {
		if p.custom != nil {
			for _, name := range append(slices.Clone(p.l.Inputs), p.l.Outputs...) {
				force(name)
			}
		}
	}
	activation := func(name string) bool { return name != "" && !n.isConstant(name) }
	for _, p := range layers {
		l := p.l
		if p.custom != nil {
			continue
		}
		if isAliasPlan(p) {
			for _, out := range l.Outputs {
				n.half[out] = n.half[find(out)]
			}
			continue
		}
		if p.halfPlan && n.onlyFloatAround(l, forced, find, activation) {
			// Half kernels between float tensors only would convert on every side.
			plan, err := n.planFloat(l)
			if err != nil {
				return err
			}
			p.plan, p.halfPlan = plan, false
		}
		for _, out := range l.Outputs {
			n.half[out] = p.halfPlan && !forced[find(out)]
		}
		if p.halfPlan {
			n.halfLayers[l.Name] = true
			for _, i := range p.plan.HalfScratch {
				for lane := range 2 {
					n.halfScratch[scratchKey(l.Name, i, lane)] = true
				}
			}
		}
	}
	converted := map[string]int{}
	for _, p := range layers {
		if p.custom != nil || p.plan == nil || isAliasPlan(p) {
			continue
		}
		used := map[int]bool{}
		for _, la := range append(slices.Clone(p.plan.Setup), p.plan.Launches...) {
			for _, a := range la.Args {
				if a.Kind == builtinkernels.ArgInput {
					used[a.Index] = true
				}
			}
		}
		var ins, outs []builtinkernels.Conversion
		for i, name := range p.l.Inputs {
			if !used[i] || !activation(name) || n.half[name] == p.halfPlan {
				continue
			}
			if i == 0 && p.halfPlan {
				// A half plan that reads a float x itself needs no converted copy of it.
				if plan, ok := builtinkernels.ReadInputAsFloat(p.plan); ok {
					p.plan = plan
					continue
				}
			}
			ins = append(ins, builtinkernels.Conversion{Index: i, Elements: m.Tensor(name).Elements()})
		}
		for j, name := range p.l.Outputs {
			if n.half[name] != p.halfPlan {
				outs = append(outs, builtinkernels.Conversion{Index: j, Elements: m.Tensor(name).Elements()})
			}
		}
		if len(ins)+len(outs) == 0 {
			continue
		}
		plan, err := builtinkernels.ConvertAround(p.plan, p.halfPlan, ins, outs, n.engine.planDevice())
		if err != nil {
			return fmt.Errorf("layer %q (%s): %w", p.l.Name, p.l.Type, err)
		}
		if p.halfPlan {
			// The copies a half plan reads and writes are half; its own scratch is half
			// where the plan says so (HalfScratch, above).
			for i := len(p.plan.Scratch); i < len(plan.Scratch); i++ {
				n.halfScratch[scratchKey(p.l.Name, i, 0)] = true
			}
		}
		p.plan = plan
		converted[p.l.Type] += len(ins) + len(outs)
	}
	n.logStorage(layers, converted)
	return nil
}

// onlyFloatAround says whether every activation a layer reads is stored float and every
// output must be.
func (n *Network) onlyFloatAround(l *model.Layer, forced map[string]bool, find func(string) string, activation func(string) bool) bool {
	for _, name := range l.Inputs {
		if activation(name) && n.half[name] {
			return false
		}
	}
	for _, name := range l.Outputs {
		if !forced[find(name)] {
			return false
		}
	}
	return true
}

// logStorage says once per compile how many layers store half and where conversions run.
func (n *Network) logStorage(layers []*preparedLayer, converted map[string]int) {
	var float []string
	seen := map[string]bool{}
	runs := 0
	for _, p := range layers {
		if p.custom != nil || p.plan == nil || isAliasPlan(p) {
			continue
		}
		runs++
		if !p.halfPlan && !seen[p.l.Type] {
			seen[p.l.Type] = true
			float = append(float, p.l.Type)
		}
	}
	sort.Strings(float)
	msg := fmt.Sprintf("precision fp16: %d of %d layers store half", len(n.halfLayers), runs)
	if len(float) > 0 {
		msg += "; float kernels: " + strings.Join(float, ", ")
	}
	if len(converted) > 0 {
		types := make([]string, 0, len(converted))
		total := 0
		for t, c := range converted {
			types = append(types, t)
			total += c
		}
		sort.Strings(types)
		msg += fmt.Sprintf("; %d conversions inserted (around %s)", total, strings.Join(types, ", "))
	}
	n.engine.logf("%s", msg)
}

// isAliasPlan says whether a built-in layer runs nothing, its output a view of an input.
func isAliasPlan(p *preparedLayer) bool {
	return p.plan != nil && p.plan.AliasInput >= 0 && len(p.plan.Launches) == 0
}

// elemBytes is the size of one element of a planned tensor or scratch buffer (by its
// key in the memory plan): 2 for half storage, else 4.
func (n *Network) elemBytes(name string) int {
	if n.half[name] || n.halfScratch[name] {
		return 2
	}
	return 4
}

// layerStorage is which of a layer's tensors the network holds as half: its half
// plan's constants, and the activations the storage plan made half.
func (n *Network) layerStorage(p *preparedLayer) builtinkernels.Storage {
	var st builtinkernels.Storage
	if len(n.half) == 0 && len(n.halfLayers) == 0 {
		return st
	}
	for _, name := range p.l.Inputs {
		st.Inputs = append(st.Inputs, name != "" && (n.isConstant(name) && p.halfPlan || n.half[name]))
	}
	for _, name := range p.l.Outputs {
		st.Outputs = append(st.Outputs, n.half[name])
	}
	return st
}

// storesHalf says whether any activation of the network is stored as half.
func (n *Network) storesHalf() bool {
	for _, half := range n.half {
		if half {
			return true
		}
	}
	return false
}
