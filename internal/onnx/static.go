package onnx

import (
	"errors"
	"fmt"
	"slices"

	"github.com/clhost/clhost/internal/graph"
	"github.com/clhost/clhost/model"
)

// prepareLayers walks the layers in graph order (ONNX lists nodes topologically) with
// the shapes and element types known so far. For each layer it rewrites opset-dependent
// attributes (normalize), computes the layer at load time where its inputs are constant
// (Shape → Gather → Unsqueeze → Concat → Reshape chains, see foldable), turns constant
// load-time inputs into attributes, and infers the output shapes the next layers need.
func (im *importer) prepareLayers() error {
	shapes := map[string][]int{}
	types := map[string]model.DataType{}
	for name, t := range im.declared {
		shapes[name], types[name] = t.Shape, t.Type
	}
	for name, c := range im.consts {
		shapes[name], types[name] = c.Shape, c.Type
	}
	kept := im.layers[:0]
	for i := range im.layers {
		l := im.layers[i]
		fail := func(err error) error { return fmt.Errorf("node %q (%s): %w", l.Name, l.Type, err) }
		if im.isCustom(&l) {
			im.customShapes(&l, shapes, types)
			kept = append(kept, l)
			continue
		}
		if err := im.normalize(&l); err != nil {
			return fail(err)
		}
		if !l.Has("domain") {
			folded, err := im.fold(&l, shapes)
			if err != nil {
				return fail(err)
			}
			if folded {
				for _, o := range l.Outputs {
					shapes[o], types[o] = im.consts[o].Shape, im.consts[o].Type
				}
				continue
			}
			if err := im.legacyBroadcast(&l, shapes); err != nil {
				return fail(err)
			}
			if err := im.loadTimeAttrs(&l, shapes); err != nil {
				return fail(err)
			}
			if err := checkIntegerSemantics(&l, types); err != nil {
				return fail(err)
			}
		}
		in := make([][]int, len(l.Inputs))
		consts := make([]*model.Tensor, len(l.Inputs))
		known := true
		for k, name := range l.Inputs {
			if name == "" {
				continue
			}
			in[k] = shapes[name]
			consts[k] = im.consts[name]
			if in[k] == nil {
				known = false
			}
		}
		if known {
			if out, err := graph.OutputShapes(&l, in, consts...); err == nil {
				for k, o := range l.Outputs {
					shapes[o] = out[k]
				}
				if !l.Has("domain") && im.foldEmpty(&l, out, types) {
					continue
				}
			}
		}
		for k, o := range l.Outputs {
			if _, ok := types[o]; !ok {
				types[o] = outputElemType(&l, k, types)
			}
		}
		kept = append(kept, l)
	}
	im.layers = kept
	return nil
}

// fold computes a layer at load time when it is foldable and its inputs are constants,
// adding its outputs as constants. It reports whether it did.
func (im *importer) fold(l *model.Layer, shapes map[string][]int) (bool, error) {
	if !foldable[l.Type] || len(l.Outputs) != 1 {
		return false, nil
	}
	in := make([]*cval, len(l.Inputs))
	ss := make([][]int, len(l.Inputs))
	for k, name := range l.Inputs {
		if name == "" {
			continue
		}
		ss[k] = shapes[name]
		if c := im.consts[name]; c != nil && l.Type != "Shape" && l.Type != "Size" && l.Type != "EyeLike" {
			v, err := valOf(c)
			if err != nil {
				return false, fmt.Errorf("input %q: %w", name, err)
			}
			in[k] = v
		}
	}
	v, err := evalLayer(l, in, ss, im.opset)
	if errors.Is(err, errNoFold) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	out := l.Outputs[0]
	if d, ok := im.declared[out]; ok {
		if !slices.Equal(d.Shape, v.shape) {
			return false, fmt.Errorf("output %q is declared with shape %v, but computes to %v", out, d.Shape, v.shape)
		}
		delete(im.declared, out)
		im.declOrder = slices.DeleteFunc(im.declOrder, func(n string) bool { return n == out })
	}
	im.addConst(v.tensor(out))
	return true, nil
}

// foldEmpty makes the outputs of a layer that are all empty (a dimension of 0) empty
// constants, in place of the layer: they hold no values to compute. It reports whether
// it did.
func (im *importer) foldEmpty(l *model.Layer, shapes [][]int, types map[string]model.DataType) bool {
	if len(l.Outputs) == 0 || len(shapes) != len(l.Outputs) {
		return false
	}
	named := 0
	for k, s := range shapes {
		if l.Outputs[k] == "" {
			continue
		}
		if !slices.Contains(s, 0) {
			return false
		}
		named++
	}
	if named == 0 {
		return false
	}
	for k, o := range l.Outputs {
		if o == "" {
			continue // an optional output left out
		}
		typ, ok := types[o]
		if !ok {
			typ = outputElemType(l, k, types)
			types[o] = typ
		}
		delete(im.declared, o)
		im.declOrder = slices.DeleteFunc(im.declOrder, func(n string) bool { return n == o })
		im.addConst(model.Tensor{Name: o, Type: typ, Shape: slices.Clone(shapes[k]), Data: []byte{}})
	}
	return true
}

// loadTimeAttrs moves a layer's load-time inputs (loadTimeSlots) into the attributes the
// runtime reads, which have the names older opsets give them, and drops them from the
// inputs. Such an input that is not a constant cannot be: shapes are static.
func (im *importer) loadTimeAttrs(l *model.Layer, shapes map[string][]int) error {
	slots := loadTimeSlots[l.Type]
	switch {
	case len(slots) == 0 || l.Type == "Reshape":
		return nil // Reshape's target shape stays an input: shape inference reads it there
	case l.Type == "ConstantOfShape" || l.Type == "Range":
		return fmt.Errorf("the inputs must be constants known when the model loads, and the output at most %d elements", maxFoldElements)
	}
	for _, k := range slots {
		if k >= len(l.Inputs) || l.Inputs[k] == "" {
			continue
		}
		name := l.Inputs[k]
		c := im.consts[name]
		if c == nil {
			return fmt.Errorf("input %d (%q) must be known when the model loads (clhost's shapes are static): make it an initializer or a Constant, or give its value in Options.Constants", k, name)
		}
		fs, is, err := tensorValues(c)
		if err != nil {
			return fmt.Errorf("input %d (%q): %w", k, name, err)
		}
		attr := loadTimeAttrName(l.Type, k)
		if l.Has(attr) {
			return fmt.Errorf("input %d (%q) and attribute %q both given", k, name, attr)
		}
		a := model.Attr{Name: attr}
		switch {
		case is != nil && attr == "value" && len(is) == 1:
			a.Kind, a.Float = model.AttrFloat, float32(is[0])
		case fs != nil && attr == "value" && len(fs) == 1:
			a.Kind, a.Float = model.AttrFloat, fs[0]
		case attr == "value":
			return fmt.Errorf("input %d (%q) must hold one value", k, name)
		case is != nil && (attr == "k" || attr == "axis"):
			if len(is) != 1 {
				return fmt.Errorf("input %d (%q) must hold one value", k, name)
			}
			a.Kind, a.Int = model.AttrInt, is[0]
		case is != nil:
			a.Kind, a.Ints = model.AttrInts, is
		default:
			a.Kind, a.Floats = model.AttrFloats, fs
		}
		l.Attrs = append(l.Attrs, a)
	}
	l.Inputs = l.Inputs[:1]
	if l.Type == "Pad" && l.Has("axes") {
		return padAxes(l, shapes[l.Inputs[0]])
	}
	return nil
}

// loadTimeAttrName is the attribute a load-time input becomes.
func loadTimeAttrName(op string, k int) string {
	switch op {
	case "Slice":
		return []string{"", "starts", "ends", "axes", "steps"}[k]
	case "Pad":
		return []string{"", "pads", "value", "axes"}[k]
	case "Resize":
		return []string{"", "roi", "scales", "sizes"}[k]
	case "Upsample":
		return "scales"
	case "Tile":
		return "repeats"
	case "Expand":
		return "shape"
	case "Split":
		return "split"
	case "TopK", "Trilu":
		return "k"
	case "CumSum":
		return "axis"
	}
	return "axes"
}

// padAxes expands Pad's pads for the given axes (opset 18) to pads for every axis.
func padAxes(l *model.Layer, shape []int) error {
	if shape == nil {
		return fmt.Errorf("the shape of input %q is unknown", l.Inputs[0])
	}
	r := len(shape)
	axes, pads := l.Ints("axes", nil), l.Ints("pads", nil)
	if len(pads) != 2*len(axes) {
		return fmt.Errorf("pads %v do not give two values for each of axes %v", pads, axes)
	}
	full := make([]int64, 2*r)
	for k, a := range axes {
		if a < 0 {
			a += int64(r)
		}
		if a < 0 || a >= int64(r) {
			return fmt.Errorf("axes %v are out of range for rank %d", axes, r)
		}
		full[a], full[int(a)+r] = pads[k], pads[k+len(axes)]
	}
	removeAttr(l, "axes")
	setAttr(l, model.Attr{Name: "pads", Kind: model.AttrInts, Ints: full})
	return nil
}

// legacyBroadcast rewrites the broadcast and axis attributes of element-wise ops before
// opset 7 (B aligned with A from axis on) into numpy's rule, which aligns at the right:
// a constant B gets trailing dimensions of size 1.
func (im *importer) legacyBroadcast(l *model.Layer, shapes map[string][]int) error {
	if l.Type == "PRelu" && im.opset < 7 && len(l.Inputs) == 2 {
		return im.legacySlope(l, shapes)
	}
	if !l.Has("broadcast") {
		return nil
	}
	defer removeAttr(l, "broadcast")
	if !l.Has("axis") || l.Type == "Gemm" || l.Int("broadcast", 0) == 0 || len(l.Inputs) != 2 {
		return nil
	}
	a, b := shapes[l.Inputs[0]], shapes[l.Inputs[1]]
	if a == nil || b == nil {
		return fmt.Errorf("broadcast with axis: the input shapes are unknown")
	}
	axis := int(l.Int("axis", 0))
	if axis < 0 {
		axis += len(a)
	}
	removeAttr(l, "axis")
	pad := len(a) - axis - len(b)
	if pad == 0 {
		return nil
	}
	c := im.consts[l.Inputs[1]]
	if pad < 0 || c == nil {
		return fmt.Errorf("broadcast of %v to %v from axis %d (opset %d) is supported for a constant B only", b, a, axis, im.opset)
	}
	cp := *c
	cp.Name = uniqueConst(im, c.Name+"/axis")
	cp.Shape = append(slices.Clone(c.Shape), make([]int, pad)...)
	for i := len(c.Shape); i < len(cp.Shape); i++ {
		cp.Shape[i] = 1
	}
	im.addConst(cp)
	shapes[cp.Name] = cp.Shape
	l.Inputs[1] = cp.Name
	return nil
}

// legacySlope gives PRelu's slope before opset 7, one value per channel as a list, the
// trailing axes of size 1 numpy's rule needs to apply it along axis 1.
func (im *importer) legacySlope(l *model.Layer, shapes map[string][]int) error {
	x, s := shapes[l.Inputs[0]], shapes[l.Inputs[1]]
	c := im.consts[l.Inputs[1]]
	if len(x) < 3 || len(s) != 1 || s[0] == 1 || s[0] != x[1] {
		return nil
	}
	if c == nil {
		return fmt.Errorf("a slope of one value per channel (opset %d) is supported as a constant only", im.opset)
	}
	cp := *c
	cp.Name = uniqueConst(im, c.Name+"/channels")
	cp.Shape = append([]int{s[0]}, make([]int, len(x)-2)...)
	for i := 1; i < len(cp.Shape); i++ {
		cp.Shape[i] = 1
	}
	im.addConst(cp)
	shapes[cp.Name] = cp.Shape
	l.Inputs[1] = cp.Name
	return nil
}

func uniqueConst(im *importer, base string) string {
	name := base
	for k := 2; im.consts[name] != nil || im.producer[name] != ""; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	im.producer[name] = "the importer"
	return name
}

// outputElemType is the ONNX element type of output k of a layer, for the checks of
// integer semantics: clhost holds every activation as float32.
func outputElemType(l *model.Layer, k int, types map[string]model.DataType) model.DataType {
	switch l.Type {
	case "Cast":
		if t, err := modelType(int32(l.Int("to", dtFloat))); err == nil {
			return t
		}
	case "ArgMax", "ArgMin", "NonZero", "Shape", "Size":
		return model.Int64
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf":
		return model.Uint8
	case "Where":
		if len(l.Inputs) > 1 {
			return types[l.Inputs[1]]
		}
	case "MaxPool":
		if k == 1 {
			return model.Int64
		}
	}
	for _, in := range l.Inputs {
		if in != "" {
			return types[in]
		}
	}
	return model.Float32
}

// integerArith lists ops whose integer meaning differs from their float one.
var integerArith = map[string]bool{"Div": true, "Mod": true, "BitShift": true, "Pow": true}

// checkIntegerSemantics refuses an op on integer data whose result in float32 arithmetic
// would differ from ONNX's integer one (Div truncates).
func checkIntegerSemantics(l *model.Layer, types map[string]model.DataType) error {
	if !integerArith[l.Type] {
		return nil
	}
	for k, in := range l.Inputs {
		if t, ok := types[in]; ok && t != model.Float32 && t != model.Float16 && (l.Type != "Pow" || k == 0) {
			return fmt.Errorf("input %d (%q) is %s: integer %s is not supported (clhost computes in float32)", k, in, t, l.Type)
		}
	}
	return nil
}

// floatActivations gives every activation clhost's one element type, float32: integer,
// bool and float16 graph inputs and declared tensors become float32 (their values are
// fed as float32), and integer constants that kernels read become float32 copies.
// Constants read at load time (Reshape's target shape) keep their type.
func (im *importer) floatActivations() {
	for _, t := range im.declared {
		t.Type = model.Float32
	}
	copies := map[string]string{}
	for i := range im.layers {
		l := &im.layers[i]
		if l.Has("domain") {
			continue
		}
		for k, name := range l.Inputs {
			c := im.consts[name]
			if c == nil || c.Type == model.Float32 || c.Type == model.Float16 || (l.Type == "Reshape" && k == 1) {
				continue
			}
			if cp, ok := copies[name]; ok {
				l.Inputs[k] = cp
				continue
			}
			v, err := valOf(c)
			if err != nil {
				continue // left as it is; validation names the problem
			}
			f := newVal(model.Float32, v.shape)
			for j := range f.fls {
				f.fls[j] = v.f(j)
			}
			cp := uniqueConst(im, name+"/float")
			im.addConst(f.tensor(cp))
			copies[name] = cp
			l.Inputs[k] = cp
		}
	}
}

// constantOutputs gives each graph output that folded into a constant a layer producing
// it (an Identity of its value as float32), since graph outputs are what layers write.
func (im *importer) constantOutputs() {
	for _, o := range im.g.outputs {
		name := o.name
		if im.consts[name] == nil {
			name = im.final(name)
		}
		c := im.consts[name]
		if c == nil || c.Elements() == 0 {
			continue // an empty output stays a constant: no layer writes it
		}
		v, err := valOf(c)
		if err != nil {
			continue
		}
		f := newVal(model.Float32, v.shape)
		for j := range f.fls {
			f.fls[j] = v.f(j)
		}
		src := uniqueConst(im, name+"/value")
		im.addConst(f.tensor(src))
		delete(im.consts, name)
		im.constOrder = slices.DeleteFunc(im.constOrder, func(n string) bool { return n == name })
		im.layers = append(im.layers, model.Layer{Name: uniqueName(im, "Identity_"+name), Type: "Identity", Inputs: []string{src}, Outputs: []string{name}})
	}
}

func uniqueName(im *importer, base string) string {
	name := base
	for k := 2; im.names[name]; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	im.names[name] = true
	return name
}
