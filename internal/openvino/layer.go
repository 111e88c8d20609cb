package openvino

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// lctx is one IR layer being translated: its inputs' values and the values of its output
// ports, which the translation fills in.
type lctx struct {
	r    *reader
	l    *xmlLayer
	ins  []*val
	outs []*val
	ver  int // the op's version: the newest of its versions at or below the layer's opset
}

func (c *lctx) translate() error {
	if err := checkPrecisions(c.l); err != nil {
		return err
	}
	if c.r.isCustom(c.l.Type) || c.r.unknown[c.l.Type] {
		return c.customLayer()
	}
	op := ops[c.l.Type]
	n, _ := opsetNumber(c.l.Version)
	c.ver = 0
	for _, v := range op.versions {
		if v <= n {
			c.ver = v
		}
	}
	if c.ver == 0 {
		return fmt.Errorf("%s is not an operation of %s (its versions start at opset%d)", c.l.Type, c.l.Version, op.versions[0])
	}
	if len(c.ins) < op.minIn || (op.maxIn >= 0 && len(c.ins) > op.maxIn) {
		return fmt.Errorf("has %d inputs; %s-%d takes %s", len(c.ins), c.l.Type, c.ver, inRange(op.minIn, op.maxIn))
	}
	if len(c.outs) < op.minOut {
		return fmt.Errorf("has %d output ports; %s takes %d", len(c.outs), c.l.Type, op.minOut)
	}
	if op.fold != nil && c.allConst() {
		return op.fold(c)
	}
	return op.emit(c)
}

func inRange(lo, hi int) string {
	switch {
	case hi < 0:
		return fmt.Sprintf("at least %d", lo)
	case lo == hi:
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

func (c *lctx) allConst() bool {
	for _, v := range c.ins {
		if v.c == nil {
			return false
		}
	}
	return true
}

// constIn is input k's values, which must be known at load time.
func (c *lctx) constIn(k int) (arr, error) {
	if k >= len(c.ins) {
		return arr{}, fmt.Errorf("input %d is missing", k)
	}
	if c.ins[k].c == nil {
		return arr{}, fmt.Errorf("input %d (%q) must be a constant known when the model loads (clhost's shapes are static)", k, c.ins[k].name)
	}
	return toArr(c.ins[k].c), nil
}

// axes reads a constant axes input and makes every axis non-negative for rank.
func (c *lctx) axesIn(k, rank int) ([]int64, error) {
	a, err := c.constIn(k)
	if err != nil {
		return nil, err
	}
	return normAxes(a.ints(), rank)
}

func normAxes(axes []int64, rank int) ([]int64, error) {
	out := make([]int64, len(axes))
	for i, ax := range axes {
		if ax < 0 {
			ax += int64(rank)
		}
		if ax < 0 || ax >= int64(rank) {
			return nil, fmt.Errorf("axis %d is outside rank %d", axes[i], rank)
		}
		out[i] = ax
	}
	return out, nil
}

// Attributes of <data>, all written as text.

func (c *lctx) has(name string) bool { _, ok := c.l.data[name]; return ok }

func (c *lctx) str(name, def string) string {
	if v, ok := c.l.data[name]; ok {
		return strings.TrimSpace(v)
	}
	return def
}

func (c *lctx) ints(name string, def []int64) ([]int64, error) {
	v, ok := c.l.data[name]
	if !ok {
		return def, nil
	}
	var out []int64
	for _, s := range parseList(v) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("attribute %s=%q: %q is not an integer", name, v, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func (c *lctx) floats(name string, def []float32) ([]float32, error) {
	v, ok := c.l.data[name]
	if !ok {
		return def, nil
	}
	var out []float32
	for _, s := range parseList(v) {
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, fmt.Errorf("attribute %s=%q: %q is not a number", name, v, s)
		}
		out = append(out, float32(f))
	}
	return out, nil
}

func (c *lctx) float(name string, def float32) (float32, error) {
	fs, err := c.floats(name, []float32{def})
	if err != nil {
		return 0, err
	}
	if len(fs) != 1 {
		return 0, fmt.Errorf("attribute %s=%q must be one number", name, c.l.data[name])
	}
	return fs[0], nil
}

func (c *lctx) int(name string, def int64) (int64, error) {
	is, err := c.ints(name, []int64{def})
	if err != nil {
		return 0, err
	}
	if len(is) != 1 {
		return 0, fmt.Errorf("attribute %s=%q must be one integer", name, c.l.data[name])
	}
	return is[0], nil
}

func (c *lctx) bool(name string, def bool) (bool, error) {
	v, ok := c.l.data[name]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("attribute %s=%q is not a boolean", name, v)
}

func aInt(n string, v int64) model.Attr { return model.Attr{Name: n, Kind: model.AttrInt, Int: v} }
func aInts(n string, v []int64) model.Attr {
	return model.Attr{Name: n, Kind: model.AttrInts, Ints: append([]int64{}, v...)}
}
func aFloat(n string, v float32) model.Attr {
	return model.Attr{Name: n, Kind: model.AttrFloat, Float: v}
}
func aFloats(n string, v []float32) model.Attr {
	return model.Attr{Name: n, Kind: model.AttrFloats, Floats: append([]float32{}, v...)}
}
func aStr(n, v string) model.Attr { return model.Attr{Name: n, Kind: model.AttrString, Str: v} }

func intsOf(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// tmp names an intermediate tensor of this layer's translation.
func (c *lctx) tmp(what string) string {
	base := c.l.Name
	if base == "" {
		base = c.l.Type + "_" + c.l.ID
	}
	return c.r.fresh(base + "/" + what)
}

// emit appends a built-in layer and infers its output shapes; outs name its outputs.
// It returns the shapes.
func (c *lctx) emit(typ string, inputs []string, attrs []model.Attr, outs ...string) ([][]int, error) {
	r := c.r
	base := c.l.Name
	if base == "" {
		base = c.l.Type + "_" + c.l.ID
	}
	name := base
	for i := 2; r.layerNames[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	r.layerNames[name] = true
	l := model.Layer{Name: name, Type: typ, Inputs: inputs, Outputs: outs, Attrs: attrs}
	in := make([][]int, len(inputs))
	consts := make([]*model.Tensor, len(inputs))
	for k, n := range inputs {
		in[k] = r.shapes[n]
		consts[k] = r.consts[n]
	}
	shapes, err := graph.OutputShapes(&l, in, consts...)
	if err != nil {
		return nil, err
	}
	if len(shapes) != len(outs) {
		return nil, fmt.Errorf("%s gives %d outputs, the IR %d", typ, len(shapes), len(outs))
	}
	for k, o := range outs {
		r.shapes[o] = shapes[k]
		r.tensorAt[o] = len(r.tensors)
		r.tensors = append(r.tensors, model.Tensor{Name: o, Type: model.Float32, Shape: slices.Clone(shapes[k])})
		r.producer[o] = len(r.layers)
	}
	r.layers = append(r.layers, l)
	return shapes, nil
}

// emitOut emits a layer whose one output is the layer's output port 0.
func (c *lctx) emitOut(typ string, inputs []string, attrs ...model.Attr) error {
	shapes, err := c.emit(typ, inputs, attrs, c.outs[0].name)
	if err != nil {
		return err
	}
	c.outs[0].shape = shapes[0]
	return nil
}

// setConst makes output port k a constant of these values.
func (c *lctx) setConst(k int, a arr, dt model.DataType) {
	if !a.isInt && dt.IsInteger() {
		dt = model.Float32
	}
	if a.isInt && dt == model.Float32 {
		a.isInt = false
	}
	t := a.tensor(c.outs[k].name, dt)
	p := c.r.addConst(t)
	c.outs[k].c = p
	c.outs[k].shape = p.Shape
}

// constOf makes a constant of these values under a fresh name, for an emitted layer.
func (c *lctx) constOf(what string, a arr, dt model.DataType) string {
	t := a.tensor(c.tmp(what), dt)
	c.r.addConst(t)
	return t.Name
}

func scalar(v float64) arr { return arr{shape: []int{}, v: []float64{v}} }

func (c *lctx) inName(k int) string { return c.ins[k].name }
func (c *lctx) inShape(k int) []int { return c.ins[k].shape }

// customLayer keeps the layer as the IR writes it for the user's kernel: its type, every
// input (constants by their Const layer's name, which Data bindings match), its <data>
// attributes typed as numbers and lists where they read as such, and the output shapes
// its ports declare (a dynamic dim 0 taking the batch).
func (c *lctx) customLayer() error {
	r := c.r
	r.custom[c.l.Type] = true
	var attrs []model.Attr
	keys := make([]string, 0, len(c.l.data))
	for k := range c.l.data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		attrs = append(attrs, typedAttr(k, c.l.data[k]))
	}
	attrs = append(attrs, c.constInputParams()...)
	var inputs []string
	for _, v := range c.ins {
		inputs = append(inputs, v.name)
	}
	base := c.l.Name
	if base == "" {
		base = c.l.Type + "_" + c.l.ID
	}
	name := base
	for i := 2; r.layerNames[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	r.layerNames[name] = true
	l := model.Layer{Name: name, Type: c.l.Type, Inputs: inputs, Attrs: attrs}
	for k, p := range c.l.Outputs {
		shape := slices.Clone(p.dims)
		for d, v := range shape {
			if v >= 0 {
				continue
			}
			if d == 0 && len(c.ins) > 0 && len(c.ins[0].shape) > 0 {
				shape[0] = c.ins[0].shape[0]
				continue
			}
			return fmt.Errorf("output port %d declares the dynamic dims %s: a custom layer's outputs take the shapes its ports declare, so give them sizes (only dim 0 may be the batch)", p.id, dimsString(p.dims))
		}
		o := c.outs[k].name
		l.Outputs = append(l.Outputs, o)
		c.outs[k].shape = shape
		r.shapes[o] = shape
		r.tensorAt[o] = len(r.tensors)
		r.tensors = append(r.tensors, model.Tensor{Name: o, Type: model.Float32, Shape: shape})
		r.producer[o] = len(r.layers)
	}
	if len(l.Outputs) == 0 {
		return fmt.Errorf("a custom layer needs at least one output port")
	}
	r.layers = append(r.layers, l)
	return nil
}

// typedAttr reads a <data> attribute as the type its text has: an integer, a number, a
// list of either (written with commas), true/false as 1/0, else a string.
func typedAttr(name, v string) model.Attr {
	s := strings.TrimSpace(v)
	switch strings.ToLower(s) {
	case "true":
		return aInt(name, 1)
	case "false":
		return aInt(name, 0)
	}
	parts := parseList(s)
	if len(parts) == 0 {
		return aStr(name, v)
	}
	ints := make([]int64, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			ints = nil
			break
		}
		ints = append(ints, n)
	}
	list := strings.Contains(s, ",")
	if ints != nil {
		if list {
			return aInts(name, ints)
		}
		return aInt(name, ints[0])
	}
	fs := make([]float32, 0, len(parts))
	for _, p := range parts {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil || math.IsNaN(f) && !strings.EqualFold(p, "nan") {
			return aStr(name, v)
		}
		fs = append(fs, float32(f))
	}
	if list {
		return aFloats(name, fs)
	}
	return aFloat(name, fs[0])
}
