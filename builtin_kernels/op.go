// Package builtinkernels holds clhost's built-in layers, each op in one home: its OpenCL C
// source (embedded), the Go side that plans how to launch it for one layer instance, a
// plain Go CPU reference used to check the device results, and its shape rule for the
// graph. Optional abilities (Shaper, OutputTyper, Tunable) are interfaces found by type
// assertion; element-wise ops are rows of one table (elementwise_table.go).
package builtinkernels

import (
	"fmt"
	"sort"
	"sync"
)

// Params gives a layer's typed attributes with defaults; the model's layer type
// satisfies it, and tests use a map-backed implementation.
type Params interface {
	Int(name string, def int64) int64
	Float(name string, def float32) float32
	Ints(name string, def []int64) []int64
	Floats(name string, def []float32) []float32
	String(name string, def string) string
	Has(name string) bool
}

// HostTensor is a float32 tensor in host memory, C order.
type HostTensor struct {
	Shape []int
	Data  []float32
}

// DeviceInfo is what a plan may take into account about the device it targets.
type DeviceInfo struct {
	IsGPU            bool
	ComputeUnits     int
	MaxWorkGroupSize int
	LocalMemBytes    int64
	// FloatVectorWidth is the native float vector width; CPU kernels size their
	// vectors by it.
	FloatVectorWidth int
	// Prefetch says the device's compiler lowers clang's __builtin_prefetch to a prefetch
	// instruction (PoCL's CPU driver does; oclgrind rejects the intrinsic).
	Prefetch bool
	// Precision is the arithmetic the run allows for convolutions and GEMMs; below FP32
	// a plan may use tensor cores, whose operands are rounded to TF32 or FP16.
	Precision Precision
	// MMA says the device built and correctly ran the PTX mma.sync probe, so kernels
	// with inline tensor-core assembly can run on it.
	MMA bool
}

// Precision is the operand precision convolutions and GEMMs may compute in; the
// accumulation stays fp32 in every case.
type Precision int

// Precisions.
const (
	PrecisionFP32 Precision = iota // plain fp32 arithmetic, the default
	PrecisionTF32                  // operands rounded to TF32 (10-bit mantissa)
	PrecisionFP16                  // operands rounded to IEEE half
)

// String is the precision's name as ParsePrecision reads it.
func (p Precision) String() string {
	switch p {
	case PrecisionFP32:
		return "fp32"
	case PrecisionTF32:
		return "tf32"
	case PrecisionFP16:
		return "fp16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision reads "fp32", "tf32" or "fp16".
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "fp32":
		return PrecisionFP32, nil
	case "tf32":
		return PrecisionTF32, nil
	case "fp16":
		return PrecisionFP16, nil
	}
	return PrecisionFP32, fmt.Errorf("unknown precision %q (want fp32, tf32 or fp16)", s)
}

// ArgKind says what a kernel argument is bound to.
type ArgKind int

// Argument kinds.
const (
	ArgInput   ArgKind = iota // the layer's input number Index
	ArgOutput                 // the layer's output number Index
	ArgScratch                // the plan's scratch buffer number Index
	ArgInt                    // an int scalar (Int)
	ArgFloat                  // a float scalar (Float)
	ArgLocal                  // __local memory of Bytes bytes
)

// Arg is one kernel argument, in argument order.
type Arg struct {
	Kind  ArgKind
	Index int
	Int   int32
	Float float32
	Bytes int
}

// intArgs are int scalar arguments of the values in order.
func intArgs(v ...int) []Arg {
	args := make([]Arg, len(v))
	for i, x := range v {
		args[i] = Arg{Kind: ArgInt, Int: int32(x)}
	}
	return args
}

// Launch is one NDRange of a plan.
type Launch struct {
	Kernel string // the __kernel function in the plan's program
	Global []int
	Local  []int // nil: the driver chooses
	Args   []Arg
}

// Plan is how one layer instance runs: one program, scratch buffers, and launches run in
// order (each after the previous). A plan with AliasInput set runs nothing: its output is
// input AliasInput's buffer seen with another shape (Reshape, Flatten).
type Plan struct {
	Source  string
	Options string
	Scratch []int // scratch buffer sizes in bytes
	// HalfScratch lists the scratch buffers (by number) a half plan's kernels hold as
	// half, such as a padded copy of a half input: their element offsets count halves.
	HalfScratch []int
	// Setup launches prepare scratch buffers from inputs that are usually constants
	// (weights packed into the layout the main kernel reads). They read inputs and write
	// only scratch buffers. When every input they read is a constant of the model, the
	// host runs them once, when the network is compiled; otherwise before Launches at
	// every inference.
	Setup    []Launch
	Launches []Launch
	// AliasInput is the input whose buffer the output reuses, or -1.
	AliasInput int
	// OutputBatchStride is the number of elements from one image of output 0 to the
	// next as the plan writes them, where the layer was asked for a stride through
	// OutputBatchStrideAttr and its kernels honour it; 0 means contiguous.
	OutputBatchStride int
	// Counters lists the scratch buffers the launches keep work counters in (pwdwr's
	// groups claimed at run time): each must be zero before the first launch, and the
	// launches leave it zero again, so it keeps memory of its own (never shared with
	// other layers' temporaries) for each binding of the launches.
	Counters []int
}

// OutputSpan is how many elements output i of the given shape spans in memory under the
// plan: N images OutputBatchStride apart for output 0 of a plan with a stride, else the
// shape's elements. A buffer for the plan's output must be at least this large.
func (p *Plan) OutputSpan(i int, shape []int) int {
	n := numel(shape)
	if i != 0 || p.OutputBatchStride <= 0 || len(shape) == 0 || shape[0] == 0 {
		return n
	}
	return shape[0] * p.OutputBatchStride
}

// Op is one built-in layer type.
type Op interface {
	// Plan chooses kernels and work sizes for input shapes in and output shapes out.
	Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error)
	// Reference computes the outputs on the CPU, plainly, as the yardstick for the kernels.
	Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error)
}

// Tunable is an op that offers alternative plans for a device (tile sizes, K splits);
// the host times them on the device and keeps the fastest. The first candidate is the
// op's own choice, the one Plan returns.
type Tunable interface {
	Candidates(p Params, in, out [][]int, dev DeviceInfo) ([]*Plan, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Op{}
)

// Register makes an op available by its layer type name. It panics on a duplicate name,
// as a programming error found at start-up.
func Register(typ string, op Op) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if op == nil {
		panic("builtinkernels: Register of nil op for " + typ)
	}
	if _, dup := registry[typ]; dup {
		panic(fmt.Sprintf("builtinkernels: Register called twice for layer type %q", typ))
	}
	registry[typ] = op
}

// Lookup returns the op for a layer type.
func Lookup(typ string) (Op, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	op, ok := registry[typ]
	return op, ok
}

// Types lists the registered layer types, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
