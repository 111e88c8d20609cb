package openvino

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/clhost/clhost/model"
)

// The IR operations clhost maps to its built-ins, by the opset specifications. Each
// gives the opsets its versions appear in (the serializer writes a layer's version as
// the opset that introduced it: MaxPool-8 as version="opset8"), its input counts, how it
// is emitted, and how it is computed at load when every input is a constant.

type opDef struct {
	versions     []int
	minIn, maxIn int // maxIn -1: any number
	minOut       int
	emit, fold   func(c *lctx) error
}

var ops map[string]opDef

func init() {
	one := []int{1}
	ops = map[string]opDef{
		"Parameter": {versions: one, maxIn: 0, minOut: 1, emit: parameterOp},
		"Const":     {versions: one, maxIn: 0, minOut: 1, emit: constOp},
		"Result":    {versions: one, minIn: 1, maxIn: 1, emit: resultOp},

		"Convolution":             {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: convOp},
		"GroupConvolution":        {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: convOp},
		"ConvolutionBackpropData": {versions: one, minIn: 2, maxIn: 3, minOut: 1, emit: deconvOp},
		"MaxPool":                 {versions: []int{1, 8, 14}, minIn: 1, maxIn: 1, minOut: 1, emit: poolOp},
		"AvgPool":                 {versions: []int{1, 14}, minIn: 1, maxIn: 1, minOut: 1, emit: poolOp},

		"ReduceMean": {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reduceOp},
		"ReduceMax":  {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reduceOp},
		"ReduceSum":  {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reduceOp},
		"ReduceMin":  {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reduceOp},
		"ReduceProd": {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reduceOp, fold: foldReduceProd},

		"Add":      {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Subtract": {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Multiply": {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Divide":   {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Maximum":  {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Minimum":  {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},
		"Power":    {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: binaryOp, fold: foldBinary},

		"ReLU":       {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Sigmoid":    {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Tanh":       {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Exp":        {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Log":        {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Sqrt":       {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Abs":        {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Negative":   {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Floor":      {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Ceiling":    {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Erf":        {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"SoftPlus":   {versions: []int{4}, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"Mish":       {versions: []int{4}, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"HSwish":     {versions: []int{4}, minIn: 1, maxIn: 1, minOut: 1, emit: unaryOp},
		"HSigmoid":   {versions: []int{5}, minIn: 1, maxIn: 1, minOut: 1, emit: hsigmoidOp},
		"Swish":      {versions: []int{4}, minIn: 1, maxIn: 2, minOut: 1, emit: swishOp},
		"Gelu":       {versions: []int{2, 7}, minIn: 1, maxIn: 1, minOut: 1, emit: geluOp},
		"Elu":        {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: eluOp},
		"Clamp":      {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: clampOp},
		"PRelu":      {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: preluOp},
		"SoftMax":    {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: softmaxOp},
		"Softmax":    {versions: []int{8}, minIn: 1, maxIn: 1, minOut: 1, emit: softmaxOp},
		"LogSoftmax": {versions: []int{5}, minIn: 1, maxIn: 1, minOut: 1, emit: softmaxOp},

		"Concat":        {versions: one, minIn: 1, maxIn: -1, minOut: 1, emit: concatOp, fold: foldConcat},
		"Reshape":       {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reshapeOp, fold: reshapeOp},
		"Squeeze":       {versions: []int{1, 15}, minIn: 1, maxIn: 2, minOut: 1, emit: reshapeOp, fold: reshapeOp},
		"Unsqueeze":     {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: reshapeOp, fold: reshapeOp},
		"Transpose":     {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: transposeOp, fold: transposeOp},
		"StridedSlice":  {versions: one, minIn: 3, maxIn: 4, minOut: 1, emit: stridedSliceOp, fold: stridedSliceOp},
		"Gather":        {versions: []int{1, 7, 8}, minIn: 3, maxIn: 3, minOut: 1, emit: gatherOp, fold: gatherOp},
		"ShapeOf":       {versions: []int{1, 3}, minIn: 1, maxIn: 1, minOut: 1, emit: shapeOfOp},
		"Convert":       {versions: one, minIn: 1, maxIn: 1, minOut: 1, emit: convertOp, fold: convertOp},
		"MatMul":        {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: matmulOp},
		"Interpolate":   {versions: []int{4, 11}, minIn: 2, maxIn: 4, minOut: 1, emit: interpolateOp},
		"Pad":           {versions: []int{1, 12}, minIn: 3, maxIn: 4, minOut: 1, emit: padOp},
		"Split":         {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: splitOp, fold: splitOp},
		"VariadicSplit": {versions: one, minIn: 3, maxIn: 3, minOut: 1, emit: splitOp, fold: splitOp},
		"LRN":           {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: lrnOp},
		"NormalizeL2":   {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: normalizeL2Op},
		"MVN":           {versions: []int{2, 6}, minIn: 1, maxIn: 2, minOut: 1, emit: mvnOp},

		"PriorBox":          {versions: []int{1, 8}, minIn: 2, maxIn: 2, minOut: 1, emit: priorBoxOp, fold: priorBoxOp},
		"PriorBoxClustered": {versions: one, minIn: 2, maxIn: 2, minOut: 1, emit: priorBoxClusteredOp, fold: priorBoxClusteredOp},
	}
}

// parameterOp is a graph input: its port's dims, dynamic ones taken from the batch and
// the given input shapes.
func parameterOp(c *lctx) error {
	r := c.r
	name := c.outs[0].name
	dims := slices.Clone(c.l.Outputs[0].dims)
	if len(c.l.Outputs[0].Dims) == 0 && c.has("shape") {
		dims = nil
		for _, s := range parseList(c.l.data["shape"]) {
			d, err := parseDim(s)
			if err != nil {
				return fmt.Errorf("shape %q: %v", c.l.data["shape"], err)
			}
			dims = append(dims, d)
		}
	}
	given, ok := r.opt.InputShapes[name]
	if !ok && r.nParams == 1 {
		given, ok = r.opt.InputShapes[""]
	}
	if ok && len(given) == len(dims) {
		for i, d := range dims {
			if d < 0 {
				dims[i] = given[i]
			}
		}
	} else if ok && slices.Contains(dims, -1) {
		return fmt.Errorf("input %q: the shape %v is given for the dims %s", name, given, dimsString(dims))
	}
	if len(dims) > 0 && dims[0] < 0 {
		dims[0] = r.batch
	}
	if i := slices.Index(dims, -1); i >= 0 {
		return fmt.Errorf("input %q has the dynamic dims %s: give its whole shape (an input file's, or --batch for dim 0 only)", name, dimsString(c.l.Outputs[0].dims))
	}
	if dims == nil {
		dims = []int{}
	}
	r.inputs = append(r.inputs, name)
	r.shapes[name] = dims
	c.outs[0].shape = dims
	return nil
}

func constOp(c *lctx) error {
	t, err := c.r.readConst(c.l, c.outs[0].name)
	if err != nil {
		return err
	}
	p := c.r.addConst(*t)
	c.outs[0].c, c.outs[0].shape = p, p.Shape
	return nil
}

// resultOp makes its input a graph output. A constant output is written by an Identity
// from a float32 copy, as the ONNX importer does, so a layer produces every output.
func resultOp(c *lctx) error {
	r := c.r
	v := c.ins[0]
	if v.c != nil {
		src := c.constOf("value", toArr(v.c), model.Float32)
		delete(r.consts, v.name)
		r.constOrder = slices.DeleteFunc(r.constOrder, func(n string) bool { return n == v.name })
		if _, err := c.emit("Identity", []string{src}, nil, v.name); err != nil {
			return err
		}
		v.c = nil
	}
	if !slices.Contains(r.outputs, v.name) {
		r.outputs = append(r.outputs, v.name)
	}
	return nil
}

// padAttrs maps the IR's pads_begin, pads_end and auto_pad onto ONNX's pads and
// auto_pad for n spatial axes.
func (c *lctx) padAttrs(n int) ([]model.Attr, error) {
	begin, err := c.ints("pads_begin", make([]int64, n))
	if err != nil {
		return nil, err
	}
	end, err := c.ints("pads_end", make([]int64, n))
	if err != nil {
		return nil, err
	}
	if len(begin) != n || len(end) != n {
		return nil, fmt.Errorf("pads_begin %v and pads_end %v must have %d values", begin, end, n)
	}
	switch ap := strings.ToLower(c.str("auto_pad", "explicit")); ap {
	case "explicit", "notset", "":
		return []model.Attr{aInts("pads", append(slices.Clone(begin), end...))}, nil
	case "same_upper", "same_lower", "valid":
		// The serializer still writes the pads it computed; auto_pad decides.
		return []model.Attr{aStr("auto_pad", strings.ToUpper(ap))}, nil
	default:
		return nil, fmt.Errorf("auto_pad %q: want explicit, same_upper, same_lower or valid", ap)
	}
}

func (c *lctx) windowAttrs(n int, dilations bool) ([]model.Attr, error) {
	attrs, err := c.padAttrs(n)
	if err != nil {
		return nil, err
	}
	ones := slices.Repeat([]int64{1}, n)
	strides, err := c.ints("strides", ones)
	if err != nil {
		return nil, err
	}
	if len(strides) != n {
		return nil, fmt.Errorf("strides %v must have %d values", strides, n)
	}
	attrs = append(attrs, aInts("strides", strides))
	if dilations {
		d, err := c.ints("dilations", ones)
		if err != nil {
			return nil, err
		}
		if len(d) != n {
			return nil, fmt.Errorf("dilations %v must have %d values", d, n)
		}
		attrs = append(attrs, aInts("dilations", d))
	}
	return attrs, nil
}

// convOp maps Convolution and GroupConvolution to Conv; GroupConvolution's 5-D weights
// [G, O/G, I/G, k...] become Conv's [O, I/G, k...] with group G.
func convOp(c *lctx) error {
	x, w := c.inShape(0), c.inShape(1)
	if len(x) < 3 {
		return fmt.Errorf("input of rank %d: a convolution takes N, C and spatial dims", len(x))
	}
	wname := c.inName(1)
	group := int64(1)
	if c.l.Type == "GroupConvolution" {
		if len(w) != len(x)+1 {
			return fmt.Errorf("weights %v must have rank %d (groups first)", w, len(x)+1)
		}
		group = int64(w[0])
		shape := append([]int{w[0] * w[1]}, w[2:]...)
		var err error
		if wname, err = c.reshaped(1, shape); err != nil {
			return err
		}
	} else if len(w) != len(x) {
		return fmt.Errorf("weights %v must have the input's rank %d", w, len(x))
	}
	attrs, err := c.windowAttrs(len(x)-2, true)
	if err != nil {
		return err
	}
	attrs = append(attrs, aInt("group", group))
	return c.emitOut("Conv", []string{c.inName(0), wname}, attrs...)
}

// reshaped is input k with another shape: a constant shares its data; anything else
// goes through a Reshape.
func (c *lctx) reshaped(k int, shape []int) (string, error) {
	v := c.ins[k]
	if v.c != nil {
		t := *v.c
		t.Name = c.tmp("reshaped")
		t.Shape = shape
		c.r.addConst(t)
		return t.Name, nil
	}
	name := c.tmp("reshaped")
	_, err := c.emit("Reshape", []string{v.name}, []model.Attr{aInts("shape", intsOf(shape))}, name)
	return name, err
}

// deconvOp maps ConvolutionBackpropData to ConvTranspose. A given output_shape becomes
// explicit pads, split as auto_pad says (the extra one at the end but for same_lower),
// so that the result does not depend on how ConvTranspose spreads them.
func deconvOp(c *lctx) error {
	x, w := c.inShape(0), c.inShape(1)
	n := len(x) - 2
	if n < 1 || len(w) != len(x) {
		return fmt.Errorf("input %v and weights %v: want the same rank, at least 3", x, w)
	}
	ones := slices.Repeat([]int64{1}, n)
	strides, err := c.ints("strides", ones)
	if err != nil {
		return err
	}
	dil, err := c.ints("dilations", ones)
	if err != nil {
		return err
	}
	outPad, err := c.ints("output_padding", make([]int64, n))
	if err != nil {
		return err
	}
	if len(strides) != n || len(dil) != n || len(outPad) != n {
		return fmt.Errorf("strides %v, dilations %v and output_padding %v must have %d values", strides, dil, outPad, n)
	}
	attrs := []model.Attr{aInts("strides", strides), aInts("dilations", dil), aInts("output_padding", outPad)}
	if len(c.ins) == 3 {
		os, err := c.constIn(2)
		if err != nil {
			return err
		}
		want := os.ints()
		if len(want) != n {
			return fmt.Errorf("output_shape %v must have %d values", want, n)
		}
		lower := strings.EqualFold(c.str("auto_pad", ""), "same_lower")
		begin, end := make([]int64, n), make([]int64, n)
		for i := 0; i < n; i++ {
			full := strides[i]*int64(x[i+2]-1) + dil[i]*int64(w[i+2]-1) + 1 + outPad[i]
			total := full - want[i]
			if total < 0 {
				return fmt.Errorf("output_shape %v is larger than the convolution gives (%d on axis %d)", want, full, i+2)
			}
			begin[i] = total / 2
			if lower {
				begin[i] = total - total/2
			}
			end[i] = total - begin[i]
		}
		attrs = append(attrs, aInts("pads", append(begin, end...)))
	} else {
		pa, err := c.padAttrs(n)
		if err != nil {
			return err
		}
		attrs = append(attrs, pa...)
	}
	return c.emitOut("ConvTranspose", []string{c.inName(0), c.inName(1)}, attrs...)
}

// poolOp maps MaxPool and AvgPool. rounding_type ceil becomes ceil_mode; MaxPool-8's
// second output (the indices) is not computed, and an IR that reads it is refused.
func poolOp(c *lctx) error {
	x := c.inShape(0)
	n := len(x) - 2
	if n < 1 {
		return fmt.Errorf("input of rank %d: pooling takes N, C and spatial dims", len(x))
	}
	if !c.has("kernel") {
		return fmt.Errorf("the attribute kernel (the window's size along each of the %d spatial axes) is missing", n)
	}
	kernel, err := c.ints("kernel", nil)
	if err != nil {
		return err
	}
	if len(kernel) != n {
		return fmt.Errorf("kernel %v must have %d values", kernel, n)
	}
	max := c.l.Type == "MaxPool"
	attrs, err := c.windowAttrs(n, max && c.ver >= 8)
	if err != nil {
		return err
	}
	attrs = append(attrs, aInts("kernel_shape", kernel))
	switch rt := strings.ToLower(c.str("rounding_type", "floor")); rt {
	case "floor":
	case "ceil":
		if err := c.ceilWindowInPadding(x, kernel); err != nil {
			return err
		}
		attrs = append(attrs, aInt("ceil_mode", 1))
	case "ceil_torch":
		attrs = append(attrs, aInt("ceil_mode", 1))
	default:
		return fmt.Errorf("rounding_type %q: want floor or ceil", rt)
	}
	typ := "MaxPool"
	if !max {
		typ = "AveragePool"
		exclude, err := c.bool("exclude-pad", false)
		if err != nil {
			return err
		}
		if !exclude {
			attrs = append(attrs, aInt("count_include_pad", 1))
		}
	}
	return c.emitOut(typ, []string{c.inName(0)}, attrs...)
}

// ceilWindowInPadding refuses the one case where OpenVINO's rounding_type ceil and
// clhost's ceil_mode disagree: a last window that starts in the end padding. OpenVINO
// keeps it (ceil_torch, MaxPool-14's, drops it), clhost's pooling drops it as PyTorch
// and ONNX do, so the output would lose a row the IR declares.
func (c *lctx) ceilWindowInPadding(x []int, kernel []int64) error {
	if ap := strings.ToLower(c.str("auto_pad", "explicit")); ap != "explicit" && ap != "notset" && ap != "" {
		return nil
	}
	n := len(kernel)
	zeros, ones := make([]int64, n), slices.Repeat([]int64{1}, n)
	begin, _ := c.ints("pads_begin", zeros)
	end, _ := c.ints("pads_end", zeros)
	strides, _ := c.ints("strides", ones)
	dil := ones
	if c.l.Type == "MaxPool" && c.ver >= 8 {
		dil, _ = c.ints("dilations", ones)
	}
	if len(begin) != n || len(end) != n || len(strides) != n || len(dil) != n {
		return nil // windowAttrs has refused these already
	}
	for i := range n {
		size, s := int64(x[2+i]), strides[i]
		span := size + begin[i] + end[i] - ((kernel[i]-1)*dil[i] + 1)
		if s <= 0 || span < 0 {
			continue
		}
		last := (span + s - 1) / s // the index of the last window OpenVINO's ceil gives
		if last*s >= size+begin[i] {
			return fmt.Errorf("rounding_type ceil along spatial axis %d (size %d, pads %d+%d, kernel %d, stride %d): OpenVINO's last window starts in the padding, where clhost's pooling, like PyTorch's (rounding_type ceil_torch), has no window; the outputs would differ", i, size, begin[i], end[i], kernel[i], s)
		}
	}
	return nil
}

var reduceTypes = map[string]string{"ReduceMean": "ReduceMean", "ReduceMax": "ReduceMax", "ReduceSum": "ReduceSum", "ReduceMin": "ReduceMin", "ReduceProd": "ReduceProd"}

func reduceOp(c *lctx) error {
	axes, err := c.axesIn(1, len(c.inShape(0)))
	if err != nil {
		return err
	}
	keep, err := c.bool("keep_dims", false)
	if err != nil {
		return err
	}
	if len(axes) == 0 {
		// No axes reduce nothing in the IR, everything in ONNX.
		return c.emitOut("Identity", []string{c.inName(0)})
	}
	k := int64(0)
	if keep {
		k = 1
	}
	return c.emitOut(reduceTypes[c.l.Type], []string{c.inName(0)}, aInts("axes", axes), aInt("keepdims", k))
}

func foldReduceProd(c *lctx) error {
	a, _ := c.constIn(0)
	axes, err := c.axesIn(1, len(a.shape))
	if err != nil {
		return err
	}
	if len(a.shape) != 1 || len(axes) != 1 {
		return fmt.Errorf("only a 1-D constant ReduceProd is computed at load")
	}
	p := 1.0
	for _, v := range a.v {
		p *= v
	}
	keep, _ := c.bool("keep_dims", false)
	out := scalar(p)
	out.isInt = a.isInt
	if keep {
		out.shape = []int{1}
	}
	c.setConst(0, out, c.ins[0].c.Type)
	return nil
}

var binaryTypes = map[string]string{"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Divide": "Div", "Maximum": "Max", "Minimum": "Min", "Power": "Pow"}

func (c *lctx) checkBroadcast() error {
	switch b := strings.ToLower(c.str("auto_broadcast", "numpy")); b {
	case "numpy", "none":
		return nil
	default:
		return fmt.Errorf("auto_broadcast %q: clhost broadcasts as numpy does", b)
	}
}

func binaryOp(c *lctx) error {
	if err := c.checkBroadcast(); err != nil {
		return err
	}
	if c.l.Type == "Add" && c.foldBias() {
		return nil
	}
	return c.emitOut(binaryTypes[c.l.Type], []string{c.inName(0), c.inName(1)})
}

// foldBias makes an Add of a per-channel constant after a convolution the convolution's
// bias, as the IR writes a bias (Convolution, then Add of a [1,C,1,1] Const), when
// nothing else reads the convolution.
func (c *lctx) foldBias() bool {
	r := c.r
	x, b := c.ins[0], c.ins[1]
	if b.c == nil || x.c != nil {
		return false
	}
	li, ok := r.producer[x.name]
	if !ok {
		return false
	}
	conv := &r.layers[li]
	gemm := conv.Type == "Gemm"
	if (conv.Type != "Conv" && conv.Type != "ConvTranspose" && !gemm) || len(conv.Inputs) != 2 || slices.Contains(r.outputs, x.name) {
		return false
	}
	if r.readers(x.name) != 1 || len(x.shape) < 2 || b.c.Type != model.Float32 {
		return false
	}
	if gemm {
		// Gemm's C: one value per column, written [N] or [1, N].
		if elements(b.shape) != x.shape[1] || len(b.shape) > 2 || (len(b.shape) == 2 && b.shape[0] != 1) {
			return false
		}
	} else {
		if len(b.shape) != len(x.shape) {
			return false
		}
		for i, d := range b.shape {
			if (i == 1 && d != x.shape[1]) || (i != 1 && d != 1) {
				return false
			}
		}
	}
	bias := *b.c
	bias.Name = c.tmp("bias")
	bias.Shape = []int{x.shape[1]}
	r.addConst(bias)
	conv.Inputs = append(conv.Inputs, bias.Name)
	out := c.outs[0].name
	conv.Outputs[0] = out
	t := &r.tensors[r.tensorAt[x.name]]
	t.Name = out
	r.tensorAt[out] = r.tensorAt[x.name]
	r.producer[out] = li
	r.shapes[out] = x.shape
	c.outs[0].shape = x.shape
	return true
}

// readers counts the input ports that read the tensor an output port carries.
func (r *reader) readers(name string) int {
	if k, ok := r.portOf[name]; ok {
		return r.users[k]
	}
	return 0
}

func foldBinary(c *lctx) error {
	if err := c.checkBroadcast(); err != nil {
		return err
	}
	a, b := toArr(c.ins[0].c), toArr(c.ins[1].c)
	isInt := a.isInt && b.isInt
	f := map[string]func(x, y float64) float64{
		"Add": func(x, y float64) float64 { return x + y }, "Subtract": func(x, y float64) float64 { return x - y },
		"Multiply": func(x, y float64) float64 { return x * y },
		"Divide": func(x, y float64) float64 {
			if isInt {
				if y == 0 {
					return 0
				}
				return math.Floor(x / y) // Divide's python division, the default
			}
			return x / y
		},
		"Maximum": math.Max, "Minimum": math.Min, "Power": math.Pow,
	}[c.l.Type]
	out, err := broadcast(a, b, f)
	if err != nil {
		return err
	}
	if !isInt {
		out.isInt = false
	}
	dt := model.Float32
	if isInt {
		dt = model.Int64
	}
	c.setConst(0, out, dt)
	return nil
}

var unaryTypes = map[string]string{"ReLU": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
	"Abs": "Abs", "Negative": "Neg", "Floor": "Floor", "Ceiling": "Ceil", "Erf": "Erf", "SoftPlus": "Softplus", "Mish": "Mish", "HSwish": "HardSwish"}

func unaryOp(c *lctx) error { return c.emitOut(unaryTypes[c.l.Type], []string{c.inName(0)}) }

// hsigmoidOp: HSigmoid is min(max(x + 3, 0), 6) / 6, HardSigmoid with alpha 1/6, beta 1/2.
func hsigmoidOp(c *lctx) error {
	return c.emitOut("HardSigmoid", []string{c.inName(0)}, aFloat("alpha", 1.0/6), aFloat("beta", 0.5))
}

func swishOp(c *lctx) error {
	beta := float32(1)
	if len(c.ins) == 2 {
		b, err := c.constIn(1)
		if err != nil {
			return err
		}
		if len(b.v) != 1 {
			return fmt.Errorf("beta must be one value, has %d", len(b.v))
		}
		beta = float32(b.v[0])
	}
	return c.emitOut("Swish", []string{c.inName(0)}, aFloat("alpha", beta))
}

func geluOp(c *lctx) error {
	approx := "none"
	if c.ver >= 7 {
		switch m := strings.ToLower(c.str("approximation_mode", "erf")); m {
		case "erf":
		case "tanh":
			approx = "tanh"
		default:
			return fmt.Errorf("approximation_mode %q: want ERF or TANH", m)
		}
	}
	return c.emitOut("Gelu", []string{c.inName(0)}, aStr("approximate", approx))
}

func eluOp(c *lctx) error {
	alpha, err := c.float("alpha", 1)
	if err != nil {
		return err
	}
	return c.emitOut("Elu", []string{c.inName(0)}, aFloat("alpha", alpha))
}

func clampOp(c *lctx) error {
	lo, err := c.float("min", -math.MaxFloat32)
	if err != nil {
		return err
	}
	hi, err := c.float("max", math.MaxFloat32)
	if err != nil {
		return err
	}
	return c.emitOut("Clip", []string{c.inName(0)}, aFloat("min", lo), aFloat("max", hi))
}

// preluOp: the IR's 1-D slope of C values applies along the channel axis (1), where
// numpy broadcasting, which PRelu follows in ONNX, would take the last axis; it is
// reshaped to [C, 1, ...].
func preluOp(c *lctx) error {
	x, s := c.inShape(0), c.inShape(1)
	slope := c.inName(1)
	if len(s) == 1 && len(x) > 2 && s[0] == x[1] && s[0] != 1 {
		shape := append([]int{s[0]}, slices.Repeat([]int{1}, len(x)-2)...)
		var err error
		if slope, err = c.reshaped(1, shape); err != nil {
			return err
		}
	}
	return c.emitOut("PRelu", []string{c.inName(0), slope})
}

// softmaxOp: SoftMax-1 and Softmax-8 (which allows a negative axis) normalise one axis,
// as ONNX's Softmax-13 does.
func softmaxOp(c *lctx) error {
	def := int64(1)
	if c.l.Type == "LogSoftmax" {
		def = -1
	}
	axis, err := c.int("axis", def)
	if err != nil {
		return err
	}
	typ := "Softmax"
	if c.l.Type == "LogSoftmax" {
		typ = "LogSoftmax"
	}
	return c.emitOut(typ, []string{c.inName(0)}, aInt("axis", axis))
}

func concatOp(c *lctx) error {
	axis, err := c.int("axis", 0)
	if err != nil {
		return err
	}
	var in []string
	for _, v := range c.ins {
		in = append(in, v.name)
	}
	return c.emitOut("Concat", in, aInt("axis", axis))
}

func foldConcat(c *lctx) error {
	axis, err := c.int("axis", 0)
	if err != nil {
		return err
	}
	var parts []arr
	isInt := true
	for _, v := range c.ins {
		a := toArr(v.c)
		parts = append(parts, a)
		isInt = isInt && a.isInt
	}
	if axis < 0 {
		axis += int64(len(parts[0].shape))
	}
	out, err := concatArrs(parts, int(axis))
	if err != nil {
		return err
	}
	dt := model.Float32
	if isInt {
		dt = c.ins[0].c.Type
	}
	c.setConst(0, out, dt)
	return nil
}

// reshapeOp computes the output shape of Reshape (special_zero), Squeeze and Unsqueeze
// at load and emits a Reshape to it, or reshapes a constant.
func reshapeOp(c *lctx) error {
	x := c.inShape(0)
	var out []int
	// copied marks the dims the op itself takes from the input (special_zero's 0,
	// -1, dim 0 that Squeeze and Unsqueeze leave in place): the emitted Reshape keeps
	// them symbolic, as 0 and -1, so that graph.Rebatch can give a model of a fixed
	// batch another one, as the IR allows.
	var copied map[int]int64
	switch c.l.Type {
	case "Reshape":
		spec, err := c.constIn(1)
		if err != nil {
			return err
		}
		zero, err := c.bool("special_zero", false)
		if err != nil {
			return err
		}
		if out, err = reshapeTarget(x, spec.ints(), zero); err != nil {
			return err
		}
		copied = map[int]int64{}
		for i, v := range spec.ints() {
			if v == -1 || v == 0 && zero {
				copied[i] = v
			}
		}
	case "Squeeze":
		var axes []int64
		if len(c.ins) == 2 {
			var err error
			if axes, err = c.axesIn(1, len(x)); err != nil {
				return err
			}
		}
		for i, d := range x {
			drop := slices.Contains(axes, int64(i))
			if len(axes) == 0 {
				drop = d == 1
			}
			if drop && d != 1 {
				return fmt.Errorf("axis %d has size %d; Squeeze removes axes of size 1", i, d)
			}
			if !drop {
				out = append(out, d)
			}
			if i == 0 && !drop {
				copied = map[int]int64{0: 0}
			}
		}
	case "Unsqueeze":
		a, err := c.constIn(1)
		if err != nil {
			return err
		}
		axes, err := normAxes(a.ints(), len(x)+len(a.v))
		if err != nil {
			return err
		}
		k := 0
		for i := 0; i < len(x)+len(axes); i++ {
			if slices.Contains(axes, int64(i)) {
				out = append(out, 1)
			} else if k < len(x) {
				out = append(out, x[k])
				k++
			}
		}
		if len(x) > 0 && !slices.Contains(axes, 0) {
			copied = map[int]int64{0: 0}
		}
	}
	if out == nil {
		out = []int{}
	}
	if elements(out) != elements(x) {
		return fmt.Errorf("cannot reshape %v (%d elements) to %v", x, elements(x), out)
	}
	if c.ins[0].c != nil {
		t := *c.ins[0].c
		t.Name, t.Shape = c.outs[0].name, out
		p := c.r.addConst(t)
		c.outs[0].c, c.outs[0].shape = p, out
		return nil
	}
	target := intsOf(out)
	for i, v := range copied {
		if i < len(target) {
			target[i] = v
		}
	}
	return c.emitOut("Reshape", []string{c.inName(0)}, aInts("shape", target))
}

// reshapeTarget resolves a Reshape target: -1 takes what is left, 0 copies the input's
// dim when special_zero is set and is a zero-size dim otherwise.
func reshapeTarget(x []int, spec []int64, specialZero bool) ([]int, error) {
	out := make([]int, len(spec))
	infer, known := -1, 1
	for i, v := range spec {
		switch {
		case v == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("target shape %v has two -1", spec)
			}
			infer = i
			continue
		case v == 0 && specialZero:
			if i >= len(x) {
				return nil, fmt.Errorf("target shape %v copies dim %d, which the input %v lacks", spec, i, x)
			}
			out[i] = x[i]
		case v < 0:
			return nil, fmt.Errorf("target shape %v has a negative size", spec)
		default:
			out[i] = int(v)
		}
		known *= out[i]
	}
	if infer >= 0 {
		if known == 0 || elements(x)%known != 0 {
			return nil, fmt.Errorf("cannot reshape %v to %v", x, spec)
		}
		out[infer] = elements(x) / known
	}
	return out, nil
}

func transposeOp(c *lctx) error {
	x := c.inShape(0)
	p, err := c.constIn(1)
	if err != nil {
		return err
	}
	perm := p.ints()
	if len(perm) == 0 {
		for i := len(x) - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != len(x) {
		return fmt.Errorf("order %v does not have the input's rank %d", perm, len(x))
	}
	seen := map[int64]bool{}
	for _, v := range perm {
		if v < 0 || v >= int64(len(x)) || seen[v] {
			return fmt.Errorf("order %v is not a permutation of the input's %d axes", perm, len(x))
		}
		seen[v] = true
	}
	if c.ins[0].c != nil {
		ip := make([]int, len(perm))
		for i, v := range perm {
			ip[i] = int(v)
		}
		c.setConst(0, transpose(toArr(c.ins[0].c), ip), c.ins[0].c.Type)
		return nil
	}
	return c.emitOut("Transpose", []string{c.inName(0)}, aInts("perm", perm))
}

func (c *lctx) mask(name string) ([]int64, error) { return c.ints(name, nil) }

func bit(m []int64, i int) bool { return i < len(m) && m[i] != 0 }

// stridedSliceOp resolves StridedSlice's masks into a Slice of the input's axes and a
// Reshape for new and shrunk axes. A mask bit of 1 in begin_mask or end_mask ignores
// that begin or end, taking the whole axis, as the opset1 specification says.
func stridedSliceOp(c *lctx) error {
	x := c.inShape(0)
	bs, err := c.constIn(1)
	if err != nil {
		return err
	}
	es, err := c.constIn(2)
	if err != nil {
		return err
	}
	begin, end := bs.ints(), es.ints()
	stride := slices.Repeat([]int64{1}, len(begin))
	if len(c.ins) == 4 {
		ss, err := c.constIn(3)
		if err != nil {
			return err
		}
		stride = ss.ints()
	}
	if len(end) != len(begin) || len(stride) != len(begin) {
		return fmt.Errorf("begin %v, end %v and stride %v differ in length", begin, end, stride)
	}
	var masks [5][]int64
	for i, n := range []string{"begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask"} {
		if masks[i], err = c.mask(n); err != nil {
			return err
		}
	}
	bm, em, nm, sm, elm := masks[0], masks[1], masks[2], masks[3], masks[4]
	rank := len(x)
	lo, hi, st := make([]int, rank), slices.Clone(x), slices.Repeat([]int{1}, rank)
	var out []int
	ax := 0
	for i := 0; i < len(begin); i++ {
		if bit(elm, i) {
			rest := 0
			for j := i + 1; j < len(begin); j++ {
				if !bit(nm, j) {
					rest++
				}
			}
			for span := rank - ax - rest; span > 0; span-- {
				out = append(out, x[ax])
				ax++
			}
			continue
		}
		if bit(nm, i) {
			out = append(out, 1)
			continue
		}
		if ax >= rank {
			return fmt.Errorf("begin %v slices more axes than the input %v has", begin, x)
		}
		d := x[ax]
		s := int(stride[i])
		if s == 0 {
			return fmt.Errorf("stride %v has a zero", stride)
		}
		if bit(sm, i) {
			b := int(begin[i])
			if b < 0 {
				b += d
			}
			if b < 0 || b >= d {
				return fmt.Errorf("begin %d is outside axis %d of size %d", begin[i], ax, d)
			}
			lo[ax], hi[ax], st[ax] = b, b+1, 1
			ax++
			continue
		}
		norm := func(v int64, masked bool, isEnd bool) int {
			if masked {
				switch {
				case s > 0 && !isEnd, s < 0 && isEnd:
					if s < 0 {
						return -1
					}
					return 0
				case s > 0:
					return d
				default:
					return d - 1
				}
			}
			n := int(v)
			if v > math.MaxInt32 {
				n = math.MaxInt32
			} else if v < math.MinInt32 {
				n = math.MinInt32
			}
			if n < 0 {
				n += d
			}
			if s > 0 {
				return min(max(n, 0), d)
			}
			return min(max(n, -1), d-1)
		}
		lo[ax], hi[ax], st[ax] = norm(begin[i], bit(bm, i), false), norm(end[i], bit(em, i), true), s
		out = append(out, sliceLen(lo[ax], hi[ax], s))
		ax++
	}
	for ; ax < rank; ax++ {
		out = append(out, x[ax])
	}
	if out == nil {
		out = []int{}
	}
	if c.ins[0].c != nil {
		a := slice(toArr(c.ins[0].c), lo, hi, st)
		a.shape = out
		c.setConst(0, a, c.ins[0].c.Type)
		return nil
	}
	var starts, ends, axes, steps []int64
	sliced := make([]int, rank)
	for d := 0; d < rank; d++ {
		sliced[d] = sliceLen(lo[d], hi[d], st[d])
		if lo[d] == 0 && hi[d] == x[d] && st[d] == 1 {
			continue
		}
		e := int64(hi[d])
		if e < 0 {
			e = math.MinInt64 // before the first element, for a negative step
		}
		starts, ends, axes, steps = append(starts, int64(lo[d])), append(ends, e), append(axes, int64(d)), append(steps, int64(st[d]))
	}
	src := c.inName(0)
	if len(axes) > 0 {
		name := c.outs[0].name
		if !slices.Equal(sliced, out) {
			name = c.tmp("slice")
		}
		if _, err := c.emit("Slice", []string{src}, []model.Attr{aInts("starts", starts), aInts("ends", ends), aInts("axes", axes), aInts("steps", steps)}, name); err != nil {
			return err
		}
		if name == c.outs[0].name {
			c.outs[0].shape = out
			return nil
		}
		src = name
	}
	return c.emitOut("Reshape", []string{src}, aInts("shape", intsOf(out)))
}

func gatherOp(c *lctx) error {
	x := c.inShape(0)
	a, err := c.constIn(2)
	if err != nil {
		return err
	}
	if len(a.v) != 1 {
		return fmt.Errorf("axis must be one value, has %d", len(a.v))
	}
	axes, err := normAxes(a.ints(), len(x))
	if err != nil {
		return err
	}
	if bd, err := c.int("batch_dims", 0); err != nil || bd != 0 {
		if err != nil {
			return err
		}
		return fmt.Errorf("batch_dims=%d: clhost gathers with batch_dims 0 only", bd)
	}
	if c.ins[0].c != nil && c.ins[1].c != nil {
		out, err := gather(toArr(c.ins[0].c), toArr(c.ins[1].c), int(axes[0]))
		if err != nil {
			return err
		}
		c.setConst(0, out, c.ins[0].c.Type)
		return nil
	}
	return c.emitOut("Gather", []string{c.inName(0), c.inName(1)}, aInt("axis", axes[0]))
}

// shapeOfOp is always computed at load: shapes are static.
func shapeOfOp(c *lctx) error {
	x := c.inShape(0)
	a := arr{shape: []int{len(x)}, isInt: true}
	for _, d := range x {
		a.v = append(a.v, float64(d))
	}
	dt := model.Int64
	if c.str("output_type", "i64") == "i32" {
		dt = model.Int32
	}
	c.setConst(0, a, dt)
	return nil
}

// onnxTypes are ONNX's TensorProto data types, which Cast's "to" takes.
var onnxTypes = map[string]int64{"f32": 1, "u8": 2, "i8": 3, "i32": 6, "i64": 7, "boolean": 9, "f16": 10, "f64": 11, "bf16": 16, "u16": 4, "i16": 5, "u32": 12, "u64": 13}

// convertOp: a constant is converted at load (f16-compressed weights, whose Convert the
// serializer marks "decompression", are already float32 and pass unchanged); anything
// else becomes Cast.
func convertOp(c *lctx) error {
	dst := c.str("destination_type", "")
	et, ok := elemTypes[dst]
	if !ok {
		return fmt.Errorf("unknown destination_type %q", dst)
	}
	v := c.ins[0]
	if v.c == nil {
		return c.emitOut("Cast", []string{v.name}, aInt("to", onnxTypes[dst]))
	}
	if !v.c.Type.IsInteger() && et.keep == model.Float32 && dst != "f16" && dst != "bf16" {
		t := *v.c
		t.Name = c.outs[0].name
		p := c.r.addConst(t)
		c.outs[0].c, c.outs[0].shape = p, p.Shape
		return nil
	}
	a := toArr(v.c)
	for i, x := range a.v {
		switch dst {
		case "f16":
			a.v[i] = float64(model.HalfToFloat32(model.Float32ToHalf(float32(x))))
		case "bf16":
			a.v[i] = float64(math.Float32frombits(math.Float32bits(float32(x)) &^ 0xffff))
		case "boolean":
			if x != 0 {
				a.v[i] = 1
			}
		case "f32", "f64":
		default:
			a.v[i] = math.Trunc(x)
		}
	}
	a.isInt = et.keep.IsInteger()
	c.setConst(0, a, et.keep)
	return nil
}

// matmulOp: transpose_a and transpose_b swap an operand's last two axes, at load for a
// constant, by a Transpose otherwise.
func matmulOp(c *lctx) error {
	in := []string{c.inName(0), c.inName(1)}
	if len(c.inShape(0)) == 2 && len(c.inShape(1)) == 2 {
		// A fully connected layer: Gemm takes the transposes as attributes, and an Add
		// of a bias after it becomes its C (foldBias), the form ONNX exporters write.
		var attrs []model.Attr
		for k, attr := range []string{"transpose_a", "transpose_b"} {
			t, err := c.bool(attr, false)
			if err != nil {
				return err
			}
			if t {
				attrs = append(attrs, aInt([]string{"transA", "transB"}[k], 1))
			}
		}
		return c.emitOut("Gemm", in, attrs...)
	}
	for k, attr := range []string{"transpose_a", "transpose_b"} {
		t, err := c.bool(attr, false)
		if err != nil {
			return err
		}
		s := c.inShape(k)
		if !t || len(s) < 2 {
			continue
		}
		perm := make([]int, len(s))
		for i := range perm {
			perm[i] = i
		}
		perm[len(s)-1], perm[len(s)-2] = perm[len(s)-2], perm[len(s)-1]
		if v := c.ins[k]; v.c != nil {
			in[k] = c.constOf("transposed", transpose(toArr(v.c), perm), v.c.Type)
			continue
		}
		name := c.tmp("transposed")
		if _, err := c.emit("Transpose", []string{in[k]}, []model.Attr{aInts("perm", intsOf(perm))}, name); err != nil {
			return err
		}
		in[k] = name
	}
	return c.emitOut("MatMul", in)
}

// interpolateOp maps Interpolate-4 and -11 to Resize with full-rank scales or sizes.
// linear and linear_onnx both become Resize's linear: without antialias they weigh the
// same two neighbours.
func interpolateOp(c *lctx) error {
	x := c.inShape(0)
	rank := len(x)
	mode := strings.ToLower(c.str("mode", "nearest"))
	switch mode {
	case "nearest", "cubic":
	case "linear", "linear_onnx":
		mode = "linear"
	default:
		return fmt.Errorf("mode %q has no built-in (nearest, linear, linear_onnx and cubic do)", mode)
	}
	if aa, err := c.bool("antialias", false); err != nil || aa {
		if err != nil {
			return err
		}
		return fmt.Errorf("antialias is not supported")
	}
	for _, p := range []string{"pads_begin", "pads_end"} {
		v, err := c.ints(p, nil)
		if err != nil {
			return err
		}
		for _, n := range v {
			if n != 0 {
				return fmt.Errorf("%s %v: padding is not supported", p, v)
			}
		}
	}
	nearest := strings.ToLower(c.str("nearest_mode", "round_prefer_floor"))
	if nearest == "simple" {
		return fmt.Errorf("nearest_mode simple has no built-in")
	}
	ctm := strings.ToLower(c.str("coordinate_transformation_mode", "half_pixel"))
	cube, err := c.float("cube_coeff", -0.75)
	if err != nil {
		return err
	}
	calc := strings.ToLower(c.str("shape_calculation_mode", "sizes"))
	var values arr
	axesAt := 3
	if c.ver >= 11 {
		axesAt = 2
		if values, err = c.constIn(1); err != nil {
			return err
		}
	} else {
		k := 1
		if calc == "scales" {
			k = 2
		}
		if k >= len(c.ins) {
			return fmt.Errorf("shape_calculation_mode %s needs input %d", calc, k)
		}
		if values, err = c.constIn(k); err != nil {
			return err
		}
	}
	var axes []int64
	if len(c.ins) > axesAt {
		if axes, err = c.axesIn(axesAt, rank); err != nil {
			return err
		}
	} else {
		for i := 0; i < rank; i++ {
			axes = append(axes, int64(i))
		}
	}
	if len(values.v) != len(axes) {
		return fmt.Errorf("%d %s for %d axes", len(values.v), calc, len(axes))
	}
	attrs := []model.Attr{aStr("mode", mode), aStr("coordinate_transformation_mode", ctm), aStr("nearest_mode", nearest), aFloat("cubic_coeff_a", cube)}
	switch calc {
	case "sizes":
		sizes := intsOf(x)
		for i, a := range axes {
			sizes[a] = int64(values.v[i])
		}
		attrs = append(attrs, aInts("sizes", sizes))
	case "scales":
		scales := slices.Repeat([]float32{1}, rank)
		for i, a := range axes {
			scales[a] = float32(values.v[i])
		}
		attrs = append(attrs, aFloats("scales", scales))
	default:
		return fmt.Errorf("shape_calculation_mode %q: want sizes or scales", calc)
	}
	return c.emitOut("Resize", []string{c.inName(0)}, attrs...)
}

func padOp(c *lctx) error {
	b, err := c.constIn(1)
	if err != nil {
		return err
	}
	e, err := c.constIn(2)
	if err != nil {
		return err
	}
	mode := strings.ToLower(c.str("pad_mode", "constant"))
	switch mode {
	case "constant", "edge", "reflect":
	default:
		return fmt.Errorf("pad_mode %q has no built-in (constant, edge and reflect do)", mode)
	}
	attrs := []model.Attr{aInts("pads", append(b.ints(), e.ints()...)), aStr("mode", mode)}
	if len(c.ins) == 4 && mode == "constant" {
		v, err := c.constIn(3)
		if err != nil {
			return err
		}
		if len(v.v) != 1 {
			return fmt.Errorf("pad_value must be one value")
		}
		attrs = append(attrs, aFloat("value", float32(v.v[0])))
	}
	return c.emitOut("Pad", []string{c.inName(0)}, attrs...)
}

// splitOp maps Split (num_splits equal parts) and VariadicSplit (split_lengths, one of
// them possibly -1) to Split with explicit sizes.
func splitOp(c *lctx) error {
	x := c.inShape(0)
	a, err := c.constIn(1)
	if err != nil {
		return err
	}
	if len(a.v) != 1 {
		return fmt.Errorf("axis must be one value")
	}
	axes, err := normAxes(a.ints(), len(x))
	if err != nil {
		return err
	}
	axis := int(axes[0])
	var sizes []int64
	if c.l.Type == "Split" {
		n, err := c.int("num_splits", 0)
		if err != nil {
			return err
		}
		if n <= 0 || int(n) != len(c.outs) || x[axis]%int(n) != 0 {
			return fmt.Errorf("num_splits %d does not divide axis %d of size %d", n, axis, x[axis])
		}
		sizes = slices.Repeat([]int64{int64(x[axis]) / n}, int(n))
	} else {
		l, err := c.constIn(2)
		if err != nil {
			return err
		}
		sizes = l.ints()
		rest, sum := -1, int64(0)
		for i, s := range sizes {
			if s == -1 {
				rest = i
			} else {
				sum += s
			}
		}
		if rest >= 0 {
			sizes[rest] = int64(x[axis]) - sum
		}
	}
	var total int64
	for _, s := range sizes {
		if s < 0 {
			return fmt.Errorf("split sizes %v of axis %d (size %d)", sizes, axis, x[axis])
		}
		total += s
	}
	if total != int64(x[axis]) || len(sizes) != len(c.outs) {
		return fmt.Errorf("split sizes %v do not cover axis %d (size %d) in %d outputs", sizes, axis, x[axis], len(c.outs))
	}
	if c.ins[0].c != nil {
		src := toArr(c.ins[0].c)
		start := 0
		for k, s := range sizes {
			lo, hi, st := make([]int, len(x)), slices.Clone(x), slices.Repeat([]int{1}, len(x))
			lo[axis], hi[axis] = start, start+int(s)
			start += int(s)
			c.setConst(k, slice(src, lo, hi, st), c.ins[0].c.Type)
		}
		return nil
	}
	var outs []string
	for _, v := range c.outs {
		outs = append(outs, v.name)
	}
	shapes, err := c.emit("Split", []string{c.inName(0)}, []model.Attr{aInt("axis", int64(axis)), aInts("split", sizes)}, outs...)
	if err != nil {
		return err
	}
	for k := range c.outs {
		c.outs[k].shape = shapes[k]
	}
	return nil
}

func lrnOp(c *lctx) error {
	axes, err := c.axesIn(1, len(c.inShape(0)))
	if err != nil {
		return err
	}
	if !slices.Equal(axes, []int64{1}) {
		return fmt.Errorf("axes %v: clhost's LRN runs across channels (axes [1]) only", axes)
	}
	attrs := []model.Attr{}
	for _, a := range []struct {
		name string
		def  float32
	}{{"alpha", 1e-4}, {"beta", 0.75}, {"bias", 1}} {
		v, err := c.float(a.name, a.def)
		if err != nil {
			return err
		}
		attrs = append(attrs, aFloat(a.name, v))
	}
	size, err := c.int("size", 0)
	if err != nil {
		return err
	}
	if size <= 0 {
		return fmt.Errorf("size %d must be positive", size)
	}
	attrs = append(attrs, aInt("size", size))
	return c.emitOut("LRN", []string{c.inName(0)}, attrs...)
}

// normalizeL2Op is x / sqrt(f(sum(x²), eps)) over the axes, f Add or Max by eps_mode:
// built of ReduceSumSquare, the eps, Sqrt and Div.
func normalizeL2Op(c *lctx) error {
	axes, err := c.axesIn(1, len(c.inShape(0)))
	if err != nil {
		return err
	}
	if len(axes) == 0 {
		return fmt.Errorf("empty axes are not supported")
	}
	eps, err := c.float("eps", 1e-10)
	if err != nil {
		return err
	}
	combine := map[string]string{"add": "Add", "max": "Max"}[strings.ToLower(c.str("eps_mode", "add"))]
	if combine == "" {
		return fmt.Errorf("eps_mode %q: want add or max", c.str("eps_mode", ""))
	}
	x := c.inName(0)
	ss := c.tmp("sumsq")
	if _, err := c.emit("ReduceSumSquare", []string{x}, []model.Attr{aInts("axes", axes), aInt("keepdims", 1)}, ss); err != nil {
		return err
	}
	e := c.constOf("eps", scalar(float64(eps)), model.Float32)
	se := c.tmp("eps_added")
	if _, err := c.emit(combine, []string{ss, e}, nil, se); err != nil {
		return err
	}
	norm := c.tmp("norm")
	if _, err := c.emit("Sqrt", []string{se}, nil, norm); err != nil {
		return err
	}
	return c.emitOut("Div", []string{x, norm})
}

// mvnOp subtracts the mean over the axes and, with normalize_variance, divides by the
// standard deviation, eps inside the root or outside as eps_mode says (MVN-1 adds it
// outside). Built of ReduceMean, Sub, Mul, Add, Sqrt and Div.
func mvnOp(c *lctx) error {
	x := c.inShape(0)
	var axes []int64
	var err error
	inside := false
	if c.ver >= 6 {
		if len(c.ins) < 2 {
			return fmt.Errorf("MVN-6 takes its axes as input 1")
		}
		if axes, err = c.axesIn(1, len(x)); err != nil {
			return err
		}
		switch m := strings.ToLower(c.str("eps_mode", "")); m {
		case "inside_sqrt":
			inside = true
		case "outside_sqrt":
		default:
			return fmt.Errorf("eps_mode %q: want inside_sqrt or outside_sqrt", m)
		}
	} else {
		if c.has("reduction_axes") {
			if axes, err = c.ints("reduction_axes", nil); err != nil {
				return err
			}
		} else {
			across, err := c.bool("across_channels", false)
			if err != nil {
				return err
			}
			start := 2
			if across {
				start = 1
			}
			for i := start; i < len(x); i++ {
				axes = append(axes, int64(i))
			}
		}
	}
	nv, err := c.bool("normalize_variance", true)
	if err != nil {
		return err
	}
	eps, err := c.float("eps", 1e-9)
	if err != nil {
		return err
	}
	red := []model.Attr{aInts("axes", axes), aInt("keepdims", 1)}
	in := c.inName(0)
	mean := c.tmp("mean")
	if _, err := c.emit("ReduceMean", []string{in}, red, mean); err != nil {
		return err
	}
	if !nv {
		return c.emitOut("Sub", []string{in, mean})
	}
	d := c.tmp("centred")
	if _, err := c.emit("Sub", []string{in, mean}, nil, d); err != nil {
		return err
	}
	sq := c.tmp("squared")
	if _, err := c.emit("Mul", []string{d, d}, nil, sq); err != nil {
		return err
	}
	variance := c.tmp("variance")
	if _, err := c.emit("ReduceMean", []string{sq}, red, variance); err != nil {
		return err
	}
	e := c.constOf("eps", scalar(float64(eps)), model.Float32)
	std := c.tmp("std")
	if inside {
		ve := c.tmp("variance_eps")
		if _, err := c.emit("Add", []string{variance, e}, nil, ve); err != nil {
			return err
		}
		if _, err := c.emit("Sqrt", []string{ve}, nil, std); err != nil {
			return err
		}
	} else {
		root := c.tmp("root")
		if _, err := c.emit("Sqrt", []string{variance}, nil, root); err != nil {
			return err
		}
		if _, err := c.emit("Add", []string{root, e}, nil, std); err != nil {
			return err
		}
	}
	return c.emitOut("Div", []string{d, std})
}
