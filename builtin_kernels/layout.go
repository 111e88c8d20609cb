package builtinkernels

import (
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/opspec"
)

// view is how a copy reads its input: for every output dimension, its size, the input's
// stride along it and the modulus of its index (the input's size for Tile, else the
// output's), plus the element where the view begins.
type view struct {
	base             int
	dims, mods, strs []int
}

// coalesced merges neighbouring output dimensions the input also walks contiguously (not
// those with a modulus below their size) and drops dimensions of size 1.
func (v view) coalesced() view {
	out := view{base: v.base}
	for i, d := range v.dims {
		if d == 1 {
			continue
		}
		k := len(out.dims) - 1
		if k >= 0 && v.mods[i] == d && out.mods[k] == out.dims[k] && out.strs[k] == v.strs[i]*d {
			out.dims[k] *= d
			out.mods[k] = out.dims[k]
			out.strs[k] = v.strs[i]
			continue
		}
		out.dims = append(out.dims, d)
		out.mods = append(out.mods, v.mods[i])
		out.strs = append(out.strs, v.strs[i])
	}
	return out
}

// identity says whether the view reads all n elements of its input in order.
func (v view) identity(n int) bool {
	c := v.coalesced()
	if c.base != 0 || numel(v.dims) != n {
		return false
	}
	return len(c.dims) == 0 || len(c.dims) == 1 && c.strs[0] == 1 && c.mods[0] == c.dims[0]
}

// launch is the strided_copy of this view from input in to output out.
func (v view) launch(typ string, in, out int, dev DeviceInfo) (Launch, error) {
	c := v.coalesced()
	if len(c.dims) > 6 {
		return Launch{}, fmt.Errorf("%s: the copy needs %d index dimensions after merging, the kernel handles 6", typ, len(c.dims))
	}
	d, m, s := [6]int{1, 1, 1, 1, 1, 1}, [6]int{1, 1, 1, 1, 1, 1}, [6]int{}
	off := 6 - len(c.dims)
	copy(d[off:], c.dims)
	copy(m[off:], c.mods)
	copy(s[off:], c.strs)
	n := numel(v.dims)
	args := []Arg{{Kind: ArgInput, Index: in}, {Kind: ArgOutput, Index: out}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(v.base)}}
	for _, x := range append(append(d[1:], m[:]...), s[:]...) {
		args = append(args, Arg{Kind: ArgInt, Int: int32(x)})
	}
	gl, lo := flatLaunch(n, dev)
	return Launch{Kernel: "strided_copy", Global: gl, Local: lo, Args: args}, nil
}

// ref copies the view of x on the CPU.
func (v view) ref(x []float32) []float32 {
	y := make([]float32, numel(v.dims))
	for i := range y {
		idx := unravelIndex(i, v.dims)
		src := v.base
		for k, j := range idx {
			src += (j % v.mods[k]) * v.strs[k]
		}
		y[i] = x[src]
	}
	return y
}

func plainView(dims, strs []int) view {
	return view{dims: dims, mods: cloneShape(dims), strs: strs}
}

// copyOp is a layer whose output is a view of its input (copyOp.view gives it):
// Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth.
type copyOp struct {
	typ  string
	view func(p Params, x []int) (view, error)
}

func (o copyOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	v, err := o.view(paramsOr(p), in[0])
	if err != nil {
		return nil, err
	}
	if err := checkShape(o.typ, "output 0", v.dims); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(v.dims)}, nil
}

func (o copyOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	return viewPlan(o.typ, o.OutputShapes, o.view, p, in, out, dev)
}

// viewPlan is the plan of an op that copies its input through one strided view: the
// output shapes checked against out, then one launch of the view.
func viewPlan(typ string, shapes func(Params, [][]int) ([][]int, error), view func(Params, []int) (view, error), p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	want, err := shapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(typ, out, want); err != nil {
		return nil, err
	}
	v, _ := view(paramsOr(p), in[0])
	if v.identity(numel(in[0])) {
		// Nothing moves (a Transpose of axes of size 1, a Slice or Expand that keeps
		// everything): the output is the input's memory, as a Reshape's is.
		return &Plan{AliasInput: 0}, nil
	}
	l, err := v.launch(typ, 0, 0, dev)
	if err != nil {
		return nil, err
	}
	return layoutPlan(l)
}

func layoutPlan(ls ...Launch) (*Plan, error) {
	src, err := kernelSource("layout.cl")
	if err != nil {
		return nil, err
	}
	return &Plan{Source: src, Launches: ls, AliasInput: -1}, nil
}

func (o copyOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	v, _ := o.view(paramsOr(p), in[0].Shape)
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: v.ref(in[0].Data)}}, nil
}

func transposeView(p Params, x []int) (view, error) {
	perm, err := opspec.TransposePerm(p.Ints("perm", nil), len(x))
	if err != nil {
		return view{}, fmt.Errorf("%s: %w", "Transpose", err)
	}
	st := contiguousStrides(x)
	dims, strs := make([]int, len(x)), make([]int, len(x))
	for i, a := range perm {
		dims[i], strs[i] = x[a], st[a]
	}
	return plainView(dims, strs), nil
}

func sliceView(p Params, x []int) (view, error) {
	g, err := opspec.ResolveSlice(x, p.Ints("starts", nil), p.Ints("ends", nil), p.Ints("axes", nil), p.Ints("steps", nil))
	if err != nil {
		return view{}, fmt.Errorf("%s: %w", "Slice", err)
	}
	st := contiguousStrides(x)
	v := plainView(g.Out, make([]int, len(x)))
	for i := range x {
		v.base += g.Start[i] * st[i]
		v.strs[i] = g.Step[i] * st[i]
	}
	return v, nil
}

func expandView(p Params, x []int) (view, error) {
	target := p.Ints("shape", nil)
	t := make([]int, len(target))
	for i, d := range target {
		if d < 0 || d > maxElements {
			return view{}, fmt.Errorf("%s: shape %v holds %d", "Expand", target, d)
		}
		t[i] = int(d)
	}
	out, err := broadcastShapes("Expand", x, t)
	if err != nil {
		return view{}, err
	}
	return plainView(out, broadcastStrides(x, out)), nil
}

func tileView(p Params, x []int) (view, error) {
	reps := p.Ints("repeats", nil)
	if len(reps) != len(x) {
		return view{}, fmt.Errorf("%s: repeats %v has %d values for rank %d", "Tile", reps, len(reps), len(x))
	}
	v := view{dims: cloneShape(x), mods: cloneShape(x), strs: contiguousStrides(x)}
	for i, r := range reps {
		if r < 1 || r > maxElements {
			return view{}, fmt.Errorf("%s: repeats %v holds %d", "Tile", reps, r)
		}
		v.dims[i] *= int(r)
	}
	return v, nil
}

// depthSpaceView is DepthToSpace (DCR or CRD) or SpaceToDepth as a six-dimensional
// transpose of the input.
func depthSpaceView(typ string) func(p Params, x []int) (view, error) {
	return func(p Params, x []int) (view, error) {
		b := int(p.Int("blocksize", 0))
		if len(x) != 4 || b < 1 {
			return view{}, fmt.Errorf("%s: input %v, blocksize %d: want N,C,H,W and a blocksize of at least 1", typ, x, b)
		}
		n, c, h, w := x[0], x[1], x[2], x[3]
		if typ == "SpaceToDepth" {
			if h%b != 0 || w%b != 0 {
				return view{}, fmt.Errorf("%s: height %d and width %d must divide by blocksize %d", typ, h, w, b)
			}
			hh, ww := h/b, w/b
			// Output (N, b, b, C, H/b, W/b), read from x viewed as (N, C, H/b, b, W/b, b).
			return view{dims: []int{n, b, b, c, hh, ww}, mods: []int{n, b, b, c, hh, ww},
				strs: []int{c * h * w, w, 1, h * w, b * w, b}}, nil
		}
		if c%(b*b) != 0 {
			return view{}, fmt.Errorf("%s: %d channels do not divide by blocksize² %d", typ, c, b*b)
		}
		cc := c / (b * b)
		dims := []int{n, cc, h, b, w, b}
		switch mode := p.String("mode", "DCR"); mode {
		case "DCR": // x viewed as (N, b, b, C', H, W)
			return view{dims: dims, mods: slices.Clone(dims), strs: []int{c * h * w, h * w, w, b * cc * h * w, 1, cc * h * w}}, nil
		case "CRD": // x viewed as (N, C', b, b, H, W)
			return view{dims: dims, mods: slices.Clone(dims), strs: []int{c * h * w, b * b * h * w, w, b * h * w, 1, h * w}}, nil
		default:
			return view{}, fmt.Errorf("%s: mode %q: want DCR or CRD", typ, mode)
		}
	}
}

// The output of DepthToSpace and SpaceToDepth is the view's six dimensions as four.
type depthSpaceOp struct{ copyOp }

func (o depthSpaceOp) fold(s []int) []int {
	if o.typ == "SpaceToDepth" {
		return []int{s[0], s[1] * s[2] * s[3], s[4], s[5]}
	}
	return []int{s[0], s[1], s[2] * s[3], s[4] * s[5]}
}

func (o depthSpaceOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	s, err := o.copyOp.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	return [][]int{o.fold(s[0])}, nil
}

func (o depthSpaceOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	return viewPlan(o.typ, o.OutputShapes, o.view, p, in, out, dev)
}

func (o depthSpaceOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	v, _ := o.view(paramsOr(p), in[0].Shape)
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: v.ref(in[0].Data)}}, nil
}

// splitOp is ONNX Split: one strided copy per output.
type splitOp struct{}

func (splitOp) parts(p Params, x []int, n int) (int, []int, error) {
	axis, err := normAxis("Split", "axis", paramsOr(p).Int("axis", 0), len(x))
	if err != nil {
		return 0, nil, err
	}
	sizes, err := opspec.SplitSizes(paramsOr(p).Ints("split", nil), x[axis], n)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", "Split", err)
	}
	return axis, sizes, nil
}

// OutputShapes splits into the parts the split attribute gives; without it, the number
// of outputs decides the equal parts, so it is known only where the layer is (Plan).
func (o splitOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts("Split", in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	n := len(paramsOr(p).Ints("split", nil))
	if n == 0 {
		n = int(paramsOr(p).Int("num_outputs", 0))
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: without split or num_outputs the outputs decide the parts", "Split")
	}
	return o.shapes(p, in[0], n)
}

func (o splitOp) shapes(p Params, x []int, n int) ([][]int, error) {
	axis, sizes, err := o.parts(p, x, n)
	if err != nil {
		return nil, err
	}
	out := make([][]int, n)
	for i, s := range sizes {
		out[i] = cloneShape(x)
		out[i][axis] = s
	}
	return out, nil
}

func (o splitOp) views(p Params, x []int, n int) ([]view, error) {
	axis, sizes, err := o.parts(p, x, n)
	if err != nil {
		return nil, err
	}
	st := contiguousStrides(x)
	vs := make([]view, n)
	at := 0
	for i, s := range sizes {
		dims := cloneShape(x)
		dims[axis] = s
		vs[i] = plainView(dims, cloneShape(st))
		vs[i].base = at * st[axis]
		at += s
	}
	return vs, nil
}

func (o splitOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	if err := checkCounts("Split", in, out, 1, 1, len(out)); err != nil {
		return nil, err
	}
	want, err := o.shapes(p, in[0], len(out))
	if err != nil {
		return nil, err
	}
	if err := checkOut("Split", out, want); err != nil {
		return nil, err
	}
	vs, _ := o.views(p, in[0], len(out))
	var ls []Launch
	for i, v := range vs {
		l, err := v.launch("Split", 0, i, dev)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return layoutPlan(ls...)
}

func (o splitOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, err := checkTensors("Split", in)
	if err != nil {
		return nil, err
	}
	if len(shapes) != 1 {
		return nil, fmt.Errorf("%s: %d inputs, want 1", "Split", len(shapes))
	}
	want, err := o.shapes(p, shapes[0], len(out))
	if err != nil {
		return nil, err
	}
	if err := checkOut("Split", out, want); err != nil {
		return nil, err
	}
	vs, _ := o.views(p, shapes[0], len(out))
	res := make([]*HostTensor, len(vs))
	for i, v := range vs {
		res[i] = &HostTensor{Shape: cloneShape(want[i]), Data: v.ref(in[0].Data)}
	}
	return res, nil
}

// padModes are layout.cl's pad modes.
var padModes = map[string]int{"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}

// padOp is ONNX Pad with its pads (and value) as attributes; negative pads crop.
type padOp struct{}

func (padOp) params(p Params, x []int) (pads []int, mode int, err error) {
	p = paramsOr(p)
	ps := p.Ints("pads", p.Ints("paddings", nil))
	if len(ps) != 2*len(x) {
		return nil, 0, fmt.Errorf("%s: pads %v has %d values for rank %d, want %d", "Pad", ps, len(ps), len(x), 2*len(x))
	}
	m, ok := padModes[p.String("mode", "constant")]
	if !ok {
		return nil, 0, fmt.Errorf("%s: mode %q: want constant, reflect, edge or wrap", "Pad", p.String("mode", ""))
	}
	pads = make([]int, len(ps))
	for i, v := range ps {
		if v < -maxElements || v > maxElements {
			return nil, 0, fmt.Errorf("%s: pads %v holds %d", "Pad", ps, v)
		}
		pads[i] = int(v)
	}
	return pads, m, nil
}

func (o padOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts("Pad", in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	pads, _, err := o.params(p, in[0])
	if err != nil {
		return nil, err
	}
	out := cloneShape(in[0])
	for i := range out {
		out[i] += pads[i] + pads[i+len(out)]
	}
	if err := checkShape("Pad", "output 0", out); err != nil {
		return nil, err
	}
	return [][]int{out}, nil
}

func (o padOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Pad", out, shapes); err != nil {
		return nil, err
	}
	x := in[0]
	if len(x) > 6 {
		return nil, fmt.Errorf("%s: rank %d: the kernel pads up to 6 dimensions", "Pad", len(x))
	}
	pads, mode, _ := o.params(p, x)
	ys := shapes[0]
	st := contiguousStrides(x)
	var d, xs, pre, s [6]int
	for i := range d {
		d[i], xs[i] = 1, 1
	}
	off := 6 - len(x)
	for i := range x {
		d[off+i], xs[off+i], pre[off+i], s[off+i] = ys[i], x[i], pads[i], st[i]
	}
	n := numel(ys)
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}, {Kind: ArgInt, Int: int32(n)},
		{Kind: ArgInt, Int: int32(mode)}, {Kind: ArgFloat, Float: paramsOr(p).Float("value", 0)}}
	args = append(args, intArgs(append(append(append(d[1:], xs[:]...), pre[:]...), s[:]...)...)...)
	gl, lo := flatLaunch(n, dev)
	return layoutPlan(Launch{Kernel: "pad", Global: gl, Local: lo, Args: args})
}

// padIndex is layout.cl's pad_index.
func padIndex(o, pre, n, mode int) int {
	k := o - pre
	if k >= 0 && k < n {
		return k
	}
	switch mode {
	case 1:
		if n == 1 {
			return 0
		}
		period := 2 * (n - 1)
		k = ((k % period) + period) % period
		if k < n {
			return k
		}
		return period - k
	case 2:
		return min(max(k, 0), n-1)
	case 3:
		return ((k % n) + n) % n
	}
	return -1
}

func (o padOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("Pad", o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	pads, mode, _ := o.params(p, x.Shape)
	ys := want[0]
	st := contiguousStrides(x.Shape)
	value := paramsOr(p).Float("value", 0)
	y := make([]float32, numel(ys))
	for i := range y {
		idx := unravelIndex(i, ys)
		src := 0
		for k, j := range idx {
			q := padIndex(j, pads[k], x.Shape[k], mode)
			if q < 0 {
				src = -1
				break
			}
			src += q * st[k]
		}
		if src < 0 {
			y[i] = value
		} else {
			y[i] = x.Data[src]
		}
	}
	return []*HostTensor{{Shape: cloneShape(ys), Data: y}}, nil
}

// gatherOp is ONNX Gather: the indices input holds whole numbers as float32.
type gatherOp struct{}

func (gatherOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts("Gather", in, nil, 2, 2, 0); err != nil {
		return nil, err
	}
	x := in[0]
	axis, err := normAxis("Gather", "axis", paramsOr(p).Int("axis", 0), len(x))
	if err != nil {
		return nil, err
	}
	return [][]int{append(append(cloneShape(x[:axis]), in[1]...), x[axis+1:]...)}, nil
}

func (o gatherOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut("Gather", out, shapes); err != nil {
		return nil, err
	}
	x := in[0]
	axis, _ := normAxis("Gather", "axis", paramsOr(p).Int("axis", 0), len(x))
	outer, n, inner, k := numel(x[:axis]), x[axis], numel(x[axis+1:]), numel(in[1])
	gl, lo := flatLaunch(outer*k*inner, dev)
	return layoutPlan(Launch{Kernel: "gather_axis", Global: gl, Local: lo, Args: []Arg{
		{Kind: ArgInput, Index: 0}, {Kind: ArgInput, Index: 1}, {Kind: ArgOutput, Index: 0},
		{Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(n)}, {Kind: ArgInt, Int: int32(inner)}, {Kind: ArgInt, Int: int32(k)},
	}})
}

func (o gatherOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes("Gather", o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	axis, _ := normAxis("Gather", "axis", paramsOr(p).Int("axis", 0), len(x.Shape))
	outer, n, inner := numel(x.Shape[:axis]), x.Shape[axis], numel(x.Shape[axis+1:])
	idx := in[1].Data
	y := make([]float32, numel(want[0]))
	for a := range outer {
		for j, f := range idx {
			v := int(f)
			if v < 0 {
				v += n
			}
			if v < 0 || v >= n {
				return nil, fmt.Errorf("%s: index %v is out of range for an axis of %d", "Gather", f, n)
			}
			copy(y[(a*len(idx)+j)*inner:], x.Data[(a*n+v)*inner:(a*n+v+1)*inner])
		}
	}
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}

func init() {
	Register("Transpose", copyOp{typ: "Transpose", view: transposeView})
	Register("Slice", copyOp{typ: "Slice", view: sliceView})
	Register("Expand", copyOp{typ: "Expand", view: expandView})
	Register("Tile", copyOp{typ: "Tile", view: tileView})
	Register("DepthToSpace", depthSpaceOp{copyOp{typ: "DepthToSpace", view: depthSpaceView("DepthToSpace")}})
	Register("SpaceToDepth", depthSpaceOp{copyOp{typ: "SpaceToDepth", view: depthSpaceView("SpaceToDepth")}})
	Register("Split", splitOp{})
	Register("Pad", padOp{})
	Register("Gather", gatherOp{})
	Register("Squeeze", aliasOp{typ: "Squeeze", infer: func(p Params, x []int) ([]int, error) {
		s, err := opspec.SqueezeShape(x, p.Ints("axes", nil))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Squeeze", err)
		}
		return s, nil
	}})
	Register("Unsqueeze", aliasOp{typ: "Unsqueeze", infer: func(p Params, x []int) ([]int, error) {
		if !p.Has("axes") {
			return nil, fmt.Errorf("%s: axes are required", "Unsqueeze")
		}
		s, err := opspec.UnsqueezeShape(x, p.Ints("axes", nil))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Unsqueeze", err)
		}
		return s, nil
	}})
}
