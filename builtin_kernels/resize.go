package builtinkernels

import (
	"fmt"
	"math"

	"github.com/clhost/clhost/internal/opspec"
)

// coordModes and nearestModes are layout.cl's resize_axis codes.
var (
	coordModes = map[string]int{
		"half_pixel": 0, "pytorch_half_pixel": 1, "align_corners": 2, "asymmetric": 3,
		"tf_half_pixel_for_nn": 4, "tf_crop_and_resize": 5, "half_pixel_symmetric": 6,
	}
	nearestModes = map[string]int{"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}
	resizeModes  = map[string]int{"nearest": 0, "linear": 1, "bilinear": 1, "cubic": 2}
)

// resizeOp is ONNX Resize, and Upsample (which is Resize with asymmetric coordinates and
// nearest rounding down), with its scales, sizes and roi as attributes. It runs as one
// pass per resized axis (interpolation in ONNX's modes is separable), the passes between
// two scratch buffers.
type resizeOp struct{ typ string }

// resizeAxis is one axis of a resize: its sizes, the scale its coordinates use, and its
// roi.
type resizeAxis struct {
	in, out          int
	scale            float32
	roiStart, roiEnd float32
}

// resizeParams are a layer's attributes, resolved.
type resizeParams struct {
	mode, cmode, nmode int
	cubicA, extrap     float32
	exclude            bool
	axes               []resizeAxis // one per input axis
}

func (o resizeOp) params(p Params, x []int) (*resizeParams, error) {
	p = paramsOr(p)
	cdef, ndef := "half_pixel", "round_prefer_floor"
	if o.typ == "Upsample" {
		cdef, ndef = "asymmetric", "floor"
	}
	rp := &resizeParams{cubicA: p.Float("cubic_coeff_a", -0.75), extrap: p.Float("extrapolation_value", 0), exclude: p.Int("exclude_outside", 0) != 0}
	var ok bool
	if rp.mode, ok = resizeModes[p.String("mode", "nearest")]; !ok {
		return nil, fmt.Errorf("%s: mode %q: want nearest, linear or cubic", o.typ, p.String("mode", ""))
	}
	if rp.cmode, ok = coordModes[p.String("coordinate_transformation_mode", cdef)]; !ok {
		return nil, fmt.Errorf("%s: coordinate_transformation_mode %q is not supported", o.typ, p.String("coordinate_transformation_mode", ""))
	}
	if rp.nmode, ok = nearestModes[p.String("nearest_mode", ndef)]; !ok {
		return nil, fmt.Errorf("%s: nearest_mode %q is not supported", o.typ, p.String("nearest_mode", ""))
	}
	if p.Int("antialias", 0) != 0 {
		return nil, fmt.Errorf("%s: antialias 1 is not supported", o.typ)
	}
	if pol := p.String("keep_aspect_ratio_policy", "stretch"); pol != "stretch" {
		return nil, fmt.Errorf("%s: keep_aspect_ratio_policy %q is not supported", o.typ, pol)
	}
	if p.Has("axes") {
		return nil, fmt.Errorf("%s: the axes attribute is not supported; give scales or sizes for every axis", o.typ)
	}
	scales, sizes := p.Floats("scales", nil), p.Ints("sizes", nil)
	out, err := opspec.ResizeOutput(x, scales, sizes, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.typ, err)
	}
	roi := p.Floats("roi", nil)
	if rp.cmode == coordModes["tf_crop_and_resize"] && len(roi) != 2*len(x) {
		return nil, fmt.Errorf("%s: tf_crop_and_resize needs roi of %d values, has %d", o.typ, 2*len(x), len(roi))
	}
	for i, d := range x {
		a := resizeAxis{in: d, out: out[i], roiStart: 0, roiEnd: 1}
		if len(sizes) > 0 {
			a.scale = float32(out[i]) / float32(d)
		} else {
			a.scale = scales[i]
		}
		if len(roi) == 2*len(x) {
			a.roiStart, a.roiEnd = roi[i], roi[i+len(x)]
		}
		rp.axes = append(rp.axes, a)
	}
	return rp, nil
}

// resized says whether an axis changes under the resize (others are left out of the
// passes).
func (rp *resizeParams) resized(a resizeAxis) bool {
	if rp.cmode == coordModes["tf_crop_and_resize"] {
		return true
	}
	return a.in != a.out || a.scale != 1
}

func (o resizeOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(o.typ, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	rp, err := o.params(p, in[0])
	if err != nil {
		return nil, err
	}
	out := make([]int, len(rp.axes))
	for i, a := range rp.axes {
		out[i] = a.out
	}
	return [][]int{out}, nil
}

func (o resizeOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o.typ, out, shapes); err != nil {
		return nil, err
	}
	rp, _ := o.params(p, in[0])
	var passes []int
	for i, a := range rp.axes {
		if rp.resized(a) {
			passes = append(passes, i)
		}
	}
	if len(passes) == 0 {
		l, err := plainView(cloneShape(in[0]), contiguousStrides(in[0])).launch(o.typ, 0, 0, dev)
		if err != nil {
			return nil, err
		}
		return layoutPlan(l)
	}
	plan, err := layoutPlan()
	if err != nil {
		return nil, err
	}
	cur := cloneShape(in[0])
	biggest := 0
	for k, ax := range passes {
		a := rp.axes[ax]
		outer, inner := numel(cur[:ax]), numel(cur[ax+1:])
		next := cloneShape(cur)
		next[ax] = a.out
		src, dst := Arg{Kind: ArgInput, Index: 0}, Arg{Kind: ArgOutput, Index: 0}
		if k > 0 {
			src = Arg{Kind: ArgScratch, Index: (k - 1) % 2}
		}
		if k < len(passes)-1 {
			dst = Arg{Kind: ArgScratch, Index: k % 2}
			biggest = max(biggest, numel(next))
		}
		total := outer * a.out * inner
		gl, lo := flatLaunch(total, dev)
		plan.Launches = append(plan.Launches, Launch{Kernel: "resize_axis", Global: gl, Local: lo, Args: []Arg{
			src, dst, {Kind: ArgInt, Int: int32(outer)}, {Kind: ArgInt, Int: int32(a.in)}, {Kind: ArgInt, Int: int32(a.out)},
			{Kind: ArgInt, Int: int32(inner)}, {Kind: ArgInt, Int: int32(rp.mode)}, {Kind: ArgInt, Int: int32(rp.cmode)},
			{Kind: ArgInt, Int: int32(rp.nmode)}, {Kind: ArgFloat, Float: a.scale}, {Kind: ArgFloat, Float: a.roiStart},
			{Kind: ArgFloat, Float: a.roiEnd}, {Kind: ArgFloat, Float: rp.cubicA}, {Kind: ArgInt, Int: int32(b2i(rp.exclude))},
			{Kind: ArgFloat, Float: rp.extrap},
		}})
		cur = next
	}
	switch {
	case len(passes) == 2:
		plan.Scratch = []int{4 * biggest}
	case len(passes) > 2:
		plan.Scratch = []int{4 * biggest, 4 * biggest}
	}
	return plan, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// taps are the input positions and weights that output position o of an axis reads, by
// ONNX's Resize definition; outside reports a tf_crop_and_resize position outside the
// input (the extrapolation value).
func (rp *resizeParams) taps(a resizeAxis, o int) (idx []int, w []float64, outside bool) {
	// ONNX's reference takes the output length before flooring (scale·in) where a
	// formula divides by the output length.
	fo, in, out, scale := float64(o), float64(a.in), float64(a.out), float64(a.scale)
	outf := float64(a.scale * float32(a.in))
	var c float64
	switch rp.cmode {
	case 1:
		if a.out > 1 {
			c = (fo+0.5)/scale - 0.5
		}
	case 2:
		if outf != 1 {
			c = fo * (in - 1) / (outf - 1)
		}
	case 3:
		c = fo / scale
	case 4:
		c = (fo + 0.5) / scale
	case 5:
		s, e := float64(a.roiStart), float64(a.roiEnd)
		if outf != 1 {
			c = s*(in-1) + fo*(e-s)*(in-1)/(outf-1)
		} else {
			c = 0.5 * (s + e) * (in - 1)
		}
		if c < 0 || c > in-1 {
			return nil, nil, true
		}
	case 6:
		adj := out / outf
		c = in/2*(1-adj) + (fo+0.5)/scale - 0.5
	default:
		c = (fo+0.5)/scale - 0.5
	}
	clampIdx := func(k int) int { return min(max(k, 0), a.in-1) }
	if rp.mode == 0 {
		var k float64
		switch rp.nmode {
		case 1:
			k = math.Floor(c + 0.5)
			if c == math.Floor(c)+0.5 {
				k = math.Ceil(c)
			}
		case 2:
			k = math.Floor(c)
		case 3:
			k = math.Ceil(c)
		default:
			k = math.Round(c)
			if c == math.Floor(c)+0.5 {
				k = math.Floor(c)
			}
		}
		return []int{clampIdx(int(k))}, []float64{1}, false
	}
	f := math.Floor(c)
	t := c - f
	var offs []int
	var ws []float64
	if rp.mode == 1 {
		offs, ws = []int{0, 1}, []float64{1 - t, t}
	} else {
		A := float64(rp.cubicA)
		cubic := func(x float64) float64 {
			x = math.Abs(x)
			switch {
			case x <= 1:
				return ((A+2)*x-(A+3))*x*x + 1
			case x < 2:
				return ((A*x-5*A)*x+8*A)*x - 4*A
			}
			return 0
		}
		offs = []int{-1, 0, 1, 2}
		ws = []float64{cubic(t + 1), cubic(t), cubic(1 - t), cubic(2 - t)}
	}
	sum := 0.0
	for j, off := range offs {
		k := int(f) + off
		if rp.exclude && (k < 0 || k >= a.in) {
			ws[j] = 0
		}
		sum += ws[j]
		idx = append(idx, clampIdx(k))
	}
	if rp.exclude {
		for j := range ws {
			ws[j] /= sum
		}
	}
	return idx, ws, false
}

// Reference computes each output element at once as the sum over the product of every
// axis's taps.
func (o resizeOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	_, want, err := referenceShapes(o.typ, o, p, in, out)
	if err != nil {
		return nil, err
	}
	x := in[0]
	rp, _ := o.params(p, x.Shape)
	st := contiguousStrides(x.Shape)
	ys := want[0]
	y := make([]float32, numel(ys))
	for i := range y {
		oi := unravelIndex(i, ys)
		type tap struct {
			off int
			w   float64
		}
		acc := []tap{{0, 1}}
		outside := false
		for ax, a := range rp.axes {
			var idx []int
			var w []float64
			if rp.resized(a) {
				idx, w, outside = rp.taps(a, oi[ax])
				if outside {
					break
				}
			} else {
				idx, w = []int{oi[ax]}, []float64{1}
			}
			var next []tap
			for _, t := range acc {
				for j, k := range idx {
					next = append(next, tap{t.off + k*st[ax], t.w * w[j]})
				}
			}
			acc = next
		}
		if outside {
			y[i] = rp.extrap
			continue
		}
		var v float64
		for _, t := range acc {
			v += t.w * float64(x.Data[t.off])
		}
		y[i] = float32(v)
	}
	return []*HostTensor{{Shape: cloneShape(ys), Data: y}}, nil
}

func init() {
	Register("Resize", resizeOp{typ: "Resize"})
	Register("Upsample", resizeOp{typ: "Upsample"})
}
