package openvino

import (
	"fmt"
	"math"

	"github.com/clhost/clhost/model"
)

// PriorBox and PriorBoxClustered depend only on the sizes of the feature map and the
// image (their inputs, ShapeOf → StridedSlice in a serialized IR), so they are computed
// when the model loads, as OpenVINO's own constant folding does. The output is
// [2, 4·H·W·priors]: the boxes (xmin, ymin, xmax, ymax, normalized to the image), then
// each box's four variances.

// sizesIn reads the two [height, width] inputs.
func (c *lctx) sizesIn() (h, w, imgH, imgW float64, err error) {
	for k := 0; k < 2; k++ {
		a, e := c.constIn(k)
		if e != nil {
			return 0, 0, 0, 0, e
		}
		if len(a.v) != 2 {
			return 0, 0, 0, 0, fmt.Errorf("input %d must hold [height, width], has %d values", k, len(a.v))
		}
		if k == 0 {
			h, w = a.v[0], a.v[1]
		} else {
			imgH, imgW = a.v[0], a.v[1]
		}
	}
	if h <= 0 || w <= 0 || imgH <= 0 || imgW <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("sizes %vx%v and image %vx%v must be positive", h, w, imgH, imgW)
	}
	if h*w > maxFold/16 {
		return 0, 0, 0, 0, fmt.Errorf("a %vx%v grid is too large", h, w)
	}
	return h, w, imgH, imgW, nil
}

// priorOutput lays out boxes and variances.
func (c *lctx) priorOutput(boxes []float64, clip bool, variance []float32) error {
	n := len(boxes)
	out := arr{shape: []int{2, n}, v: make([]float64, 2*n)}
	for i, b := range boxes {
		if clip {
			b = math.Min(math.Max(b, 0), 1)
		}
		out.v[i] = b
	}
	for i := 0; i < n; i++ {
		switch len(variance) {
		case 0:
			out.v[n+i] = 0.1
		case 1:
			out.v[n+i] = float64(variance[0])
		case 4:
			out.v[n+i] = float64(variance[i%4])
		default:
			return fmt.Errorf("variance %v must have 1 or 4 values", variance)
		}
	}
	c.setConst(0, out, model.Float32)
	return nil
}

// priorBoxClusteredOp: boxes of the given widths and heights centred at (w + offset)·step
// on the grid. The specification's formula gives xmax and ymax with a minus, a typo: the
// reference implementation, and the boxes OpenVINO computes, add half the size.
func priorBoxClusteredOp(c *lctx) error {
	h, w, imgH, imgW, err := c.sizesIn()
	if err != nil {
		return err
	}
	widths, err := c.floats("width", []float32{1})
	if err != nil {
		return err
	}
	heights, err := c.floats("height", []float32{1})
	if err != nil {
		return err
	}
	if len(widths) != len(heights) || len(widths) == 0 {
		return fmt.Errorf("width %v and height %v must have as many values", widths, heights)
	}
	clip, err := c.bool("clip", true)
	if err != nil {
		return err
	}
	var step, stepW, stepH, offset float32
	for _, a := range []struct {
		p    *float32
		name string
	}{{&step, "step"}, {&stepW, "step_w"}, {&stepH, "step_h"}, {&offset, "offset"}} {
		if *a.p, err = c.float(a.name, 0); err != nil {
			return err
		}
	}
	if ih, _ := c.float("img_h", 0); ih > 0 {
		imgH = float64(ih)
	}
	if iw, _ := c.float("img_w", 0); iw > 0 {
		imgW = float64(iw)
	}
	variance, err := c.floats("variance", nil)
	if err != nil {
		return err
	}
	sw, sh := float64(stepW), float64(stepH)
	if sw == 0 && sh == 0 {
		sw, sh = float64(step), float64(step)
	}
	if sw == 0 && sh == 0 {
		sw, sh = imgW/w, imgH/h
	}
	var boxes []float64
	for y := 0; y < int(h); y++ {
		for x := 0; x < int(w); x++ {
			cx := (float64(x) + float64(offset)) * sw
			cy := (float64(y) + float64(offset)) * sh
			for s := range widths {
				bw, bh := float64(widths[s]), float64(heights[s])
				boxes = append(boxes, (cx-bw/2)/imgW, (cy-bh/2)/imgH, (cx+bw/2)/imgW, (cy+bh/2)/imgH)
			}
		}
	}
	return c.priorOutput(boxes, clip, variance)
}

// priorBoxOp: for each min_size a square box, a box of sqrt(min·max) when max_size has
// one, and a box per aspect ratio other than 1 (flipped ratios added with flip); with
// min_max_aspect_ratios_order false (PriorBox-8) the ratios come before the max box.
// fixed_size and density, and scale_all_sizes false, have no implementation here and are
// refused.
func priorBoxOp(c *lctx) error {
	h, w, imgH, imgW, err := c.sizesIn()
	if err != nil {
		return err
	}
	minSizes, err := c.floats("min_size", nil)
	if err != nil {
		return err
	}
	maxSizes, err := c.floats("max_size", nil)
	if err != nil {
		return err
	}
	ratios, err := c.floats("aspect_ratio", nil)
	if err != nil {
		return err
	}
	for _, a := range []string{"fixed_size", "fixed_ratio", "density"} {
		if v, _ := c.floats(a, nil); len(v) > 0 {
			return fmt.Errorf("%s is not supported", a)
		}
	}
	if all, err := c.bool("scale_all_sizes", true); err != nil || !all {
		if err != nil {
			return err
		}
		return fmt.Errorf("scale_all_sizes=false is not supported")
	}
	flip, err := c.bool("flip", false)
	if err != nil {
		return err
	}
	clip, err := c.bool("clip", false)
	if err != nil {
		return err
	}
	order := true
	if c.ver >= 8 {
		if order, err = c.bool("min_max_aspect_ratios_order", true); err != nil {
			return err
		}
	}
	step, err := c.float("step", 0)
	if err != nil {
		return err
	}
	offset, err := c.float("offset", 0)
	if err != nil {
		return err
	}
	variance, err := c.floats("variance", nil)
	if err != nil {
		return err
	}
	ars := []float64{1}
	for _, r := range ratios {
		seen := false
		for _, a := range ars {
			if math.Abs(float64(r)-a) < 1e-6 {
				seen = true
			}
		}
		if seen {
			continue
		}
		ars = append(ars, float64(r))
		if flip {
			ars = append(ars, 1/float64(r))
		}
	}
	sw, sh := float64(step), float64(step)
	if step == 0 {
		sw, sh = imgW/w, imgH/h
	}
	var boxes []float64
	for y := 0; y < int(h); y++ {
		for x := 0; x < int(w); x++ {
			cx := (float64(x) + float64(offset)) * sw
			cy := (float64(y) + float64(offset)) * sh
			add := func(bw, bh float64) {
				boxes = append(boxes, (cx-bw/2)/imgW, (cy-bh/2)/imgH, (cx+bw/2)/imgW, (cy+bh/2)/imgH)
			}
			for i, ms := range minSizes {
				m := float64(ms)
				add(m, m)
				maxBox := func() {
					if i < len(maxSizes) {
						s := math.Sqrt(m * float64(maxSizes[i]))
						add(s, s)
					}
				}
				if order {
					maxBox()
				}
				for _, a := range ars {
					if math.Abs(a-1) < 1e-6 {
						continue
					}
					add(m*math.Sqrt(a), m/math.Sqrt(a))
				}
				if !order {
					maxBox()
				}
			}
		}
	}
	return c.priorOutput(boxes, clip, variance)
}
