package builtinkernels

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Fused work. The graph pass (host/graph Fuse) folds an activation that follows a Conv or a
// Gemm into that layer, and for Conv also an Add of a tensor of the output's shape (a
// residual connection). The layer then computes
//
//	y = act(op(x, w) + bias + residual)
//
// with the activation named by string attribute FusedActivationAttr and its parameters in
// the float attributes below, and the residual as input 3 (input 2, the bias, is then
// present or the empty name).
const (
	FusedActivationAttr = "clhost_activation" // "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSwish"
	FusedAlphaAttr      = "clhost_alpha"      // LeakyRelu slope, default 0.01
	FusedMinAttr        = "clhost_min"        // Clip lower bound, default -inf
	FusedMaxAttr        = "clhost_max"        // Clip upper bound, default +inf
)

// FusedGlobalAveragePoolAttr (int, 1) makes a Conv average each output plane, after its
// fused work, as a GlobalAveragePool after it would: the output is (N, M, 1, 1), the mean
// of act(conv(X, W) + B + R) over each plane. On a CPU device a plain 1×1 convolution
// (unit strides, no padding, 2-D) runs it in conv1x1, whose work-items then run whole
// planes and add up their values as they finish them, so the planes never reach memory
// (host/graph folds the pair there with FuseOptions.GlobalAveragePool); elsewhere the
// Conv writes its planes to a scratch buffer and a second launch averages them.
const FusedGlobalAveragePoolAttr = "clhost_global_avgpool"

// FusedMaxPoolPrefix marks the attributes of a MaxPool after a Conv that the Conv runs:
// the pool's own attributes (kernel_shape, strides, pads, dilations, ceil_mode,
// auto_pad, storage_order) under this prefix, kernel_shape required. The output is the
// pooled act(conv(X, W) + B + R). On a CPU device conv_cpu.cl's conv2d_maxpool computes
// the conv rows each pooled row needs into a private row and pools them, so the conv's
// output never reaches memory (host/graph folds a stem's Conv and MaxPool there with
// FuseOptions.MaxPool); elsewhere the Conv writes its output to a scratch buffer and a
// second launch pools it.
const FusedMaxPoolPrefix = "clhost_maxpool_"

// prefixedParams reads the parameters under a prefix, as FusedMaxPoolPrefix carries a
// MaxPool's attributes on a Conv.
type prefixedParams struct {
	p      Params
	prefix string
}

func (q prefixedParams) Has(name string) bool { return q.p.Has(q.prefix + name) }
func (q prefixedParams) Int(name string, def int64) int64 {
	return q.p.Int(q.prefix+name, def)
}
func (q prefixedParams) Float(name string, def float32) float32 {
	return q.p.Float(q.prefix+name, def)
}
func (q prefixedParams) Ints(name string, def []int64) []int64 {
	return q.p.Ints(q.prefix+name, def)
}
func (q prefixedParams) Floats(name string, def []float32) []float32 {
	return q.p.Floats(q.prefix+name, def)
}
func (q prefixedParams) String(name string, def string) string {
	return q.p.String(q.prefix+name, def)
}

// OutputBatchStrideAttr asks a layer to write output 0 with this many elements from one
// image (index of dimension 0) to the next, leaving the rest alone: the host sets it
// where the output lies inside a larger tensor, such as a Concat's output along the
// channels at batch > 1, which then needs no copy. A plan that honours it says so in
// Plan.OutputBatchStride; Conv's plans do, except the GPU's implicit GEMM.
const OutputBatchStrideAttr = "clhost_output_batch_stride"

// Activation kinds a layer can carry fused.
const (
	ActNone      = ""
	ActRelu      = "Relu"
	ActLeakyRelu = "LeakyRelu"
	ActClip      = "Clip"
	ActSigmoid   = "Sigmoid"
	ActHardSwish = "HardSwish"
)

// FusedActivations lists the activation kinds a Conv or Gemm accepts in
// FusedActivationAttr (host/graph's tests check that Fuse folds each of them).
func FusedActivations() []string {
	return []string{ActRelu, ActLeakyRelu, ActClip, ActSigmoid, ActHardSwish}
}

// fusedAct is the activation a layer applies to its result before writing it.
type fusedAct struct {
	kind   string
	alpha  float32 // LeakyRelu
	lo, hi float32 // Clip
}

// readFusedAct reads and checks the fused activation of a layer of type typ.
func readFusedAct(typ string, p Params) (fusedAct, error) {
	a := fusedAct{kind: p.String(FusedActivationAttr, ActNone)}
	switch a.kind {
	case ActNone, ActRelu, ActSigmoid, ActHardSwish:
	case ActLeakyRelu:
		a.alpha = p.Float(FusedAlphaAttr, 0.01)
		if !finite(a.alpha) {
			return a, fmt.Errorf("%s: %s %v: the LeakyRelu slope must be a finite number", typ, FusedAlphaAttr, a.alpha)
		}
	case ActClip:
		a.lo = p.Float(FusedMinAttr, float32(math.Inf(-1)))
		a.hi = p.Float(FusedMaxAttr, float32(math.Inf(1)))
		if math.IsNaN(float64(a.lo)) || math.IsNaN(float64(a.hi)) {
			return a, fmt.Errorf("%s: %s %v / %s %v: NaN bounds", typ, FusedMinAttr, a.lo, FusedMaxAttr, a.hi)
		}
	default:
		return a, fmt.Errorf("%s: %s %q: want one of %s, or empty for none", typ, FusedActivationAttr, a.kind, strings.Join(FusedActivations(), ", "))
	}
	return a, nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// hardSwishSlope is HardSwish's fixed 1/6 as the float the kernels use, so the fused form
// rounds like the HardSwish layer (elementwise.cl, a = 1.0f/6).
const hardSwishSlope = float32(1.0 / 6)

// define writes the activation's #defines: ACT_NONE, ACT_RELU, ACT_LEAKY, ACT_CLIP,
// ACT_SIGMOID or ACT_HARDSWISH as 1 (exactly one of them), the parameters (ACT_ALPHA;
// ACT_MIN and ACT_MAX), and the macro APPLY_ACT(v), which a kernel applies to each final
// value (after bias and residual). v must be an expression without side effects: the
// macro may evaluate it twice.
func (a fusedAct) define(d *defines) {
	switch a.kind {
	case ActRelu:
		d.int("ACT_RELU", 1)
	case ActLeakyRelu:
		d.int("ACT_LEAKY", 1)
		d.raw("ACT_ALPHA", clFloat(a.alpha))
	case ActClip:
		d.int("ACT_CLIP", 1)
		d.raw("ACT_MIN", clFloat(a.lo))
		d.raw("ACT_MAX", clFloat(a.hi))
	case ActSigmoid:
		d.int("ACT_SIGMOID", 1)
	case ActHardSwish:
		d.int("ACT_HARDSWISH", 1)
	default:
		d.int("ACT_NONE", 1)
	}
	d.raw("APPLY_ACT(v)", a.expr("v"))
}

// expr is the activation applied to the OpenCL C expression v (evaluated up to three
// times), its parameters spelt as literals: for a second activation in one program, which
// APPLY_ACT's names would collide with.
func (a fusedAct) expr(v string) string {
	v = "(" + v + ")"
	switch a.kind {
	case ActRelu:
		return "fmax(" + v + ", 0.0f)"
	case ActLeakyRelu:
		return "(" + v + " >= 0.0f ? " + v + " : " + clFloat(a.alpha) + " * " + v + ")"
	case ActClip:
		// fmin(fmax()) rather than clamp, as the Clip layer: clamp is undefined for
		// min > max, where ONNX gives max.
		return "fmin(fmax(" + v + ", " + clFloat(a.lo) + "), " + clFloat(a.hi) + ")"
	case ActSigmoid:
		return "(1.0f / (1.0f + exp(-" + v + ")))"
	case ActHardSwish:
		return "(" + v + " * clamp(" + v + " * " + clFloat(hardSwishSlope) + " + 0.5f, 0.0f, 1.0f))"
	}
	return v
}

// apply computes the activation on the CPU, as the references do: in float64, with the
// parameters as the kernels see them.
func (a fusedAct) apply(v float64) float64 {
	switch a.kind {
	case ActRelu:
		return math.Max(v, 0)
	case ActLeakyRelu:
		if v >= 0 {
			return v
		}
		return float64(a.alpha) * v
	case ActClip:
		return math.Min(math.Max(v, float64(a.lo)), float64(a.hi))
	case ActSigmoid:
		return 1 / (1 + math.Exp(-v))
	case ActHardSwish:
		return v * math.Min(1, math.Max(0, float64(hardSwishSlope)*v+0.5))
	}
	return v
}

// raw writes "#define name text".
func (d *defines) raw(name, text string) {
	d.b.WriteString("#define ")
	d.b.WriteString(name)
	d.b.WriteByte(' ')
	d.b.WriteString(text)
	d.b.WriteByte('\n')
}

// clFloat spells a float32 as an OpenCL C literal that reads back as the same float:
// "0.01f", "2.0f", "3.4028235e+38f", "INFINITY".
func clFloat(f float32) string {
	switch {
	case math.IsInf(float64(f), 1):
		return "INFINITY"
	case math.IsInf(float64(f), -1):
		return "(-INFINITY)"
	case math.IsNaN(float64(f)):
		return "NAN"
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if f < 0 {
		return "(" + s + "f)"
	}
	return s + "f"
}

// optionalTensors is checkTensors for ops with optional inputs: a nil tensor at an index
// in optional stands for an omitted input (the runtime passes nil for an empty input
// name) and gets a nil shape; every other input must be present and hold as many values
// as its shape says.
func optionalTensors(typ string, in []*HostTensor, optional ...int) ([][]int, error) {
	shapes := make([][]int, len(in))
	for i, t := range in {
		if t == nil {
			if slices.Contains(optional, i) {
				continue
			}
			return nil, fmt.Errorf("%s: input %d is nil", typ, i)
		}
		if err := checkShape(typ, fmt.Sprintf("input %d", i), t.Shape); err != nil {
			return nil, err
		}
		if len(t.Data) != numel(t.Shape) {
			return nil, fmt.Errorf("%s: input %d has %d values for shape %v (want %d)", typ, i, len(t.Data), t.Shape, numel(t.Shape))
		}
		shapes[i] = t.Shape
	}
	return shapes, nil
}
