package host

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/jit"
	"github.com/clhost/clhost/model"
)

// Tensor is a float32 tensor in host memory: its Shape, and its Data in C order
// (row-major, the last dimension varying fastest). Networks take their inputs and return
// their outputs as Tensors; an output's Data is the caller's to keep.
type Tensor struct {
	Shape []int
	Data  []float32
}

// launch is one prepared NDRange: kernel with its arguments already set.
type launch struct {
	kernel        *cl.Kernel
	global, local []int
}

// step is one layer bound to its kernels.
type step struct {
	layer    string
	typ      string
	custom   bool
	launches []launch
	// lanes is, per launch, the part of the batch it computes (laneWhole, or a half of
	// a split layer: split.go); nil when every launch takes the whole batch.
	lanes []int
	// deps are the steps whose completion this one waits on (producers of its inputs).
	deps []int
	// reuse are the deps this step waits on because it writes memory they used.
	reuse []int
	prog  *program
	// shapes and work sizes, for the kernel dump and error messages
	desc string
	// flops is the arithmetic of one run (multiply-adds count two), for the profile.
	flops float64
	// call is a custom layer's configuration and program, for the sanitizer.
	call *customCall
}

// deviceTensor is a tensor living in a device buffer.
type deviceTensor struct {
	name  string
	shape []int
	buf   *cl.Buffer
	// off is the element offset at which the tensor begins in buf: activations share
	// one arena buffer, each at its planned offset.
	off int
	// view is the tensor as a buffer of its own (a sub-buffer at off), for custom
	// kernels, which take their tensors at the buffer's start; nil when off is 0.
	view *cl.Buffer
	// ready is the step whose completion makes the tensor readable; -1 for graph inputs
	// and constants.
	ready int
	// format is the layout the buffer holds: BFYX, unless a custom layer wrote another
	// that all its readers take.
	format customlayer.Format
	// half says the buffer holds half values (fp16 storage, storage.go): off then counts
	// halves.
	half bool
}

// elemBytes is the size of one of the tensor's elements in its buffer.
func (t *deviceTensor) elemBytes() int {
	if t.half {
		return 2
	}
	return 4
}

func (t *deviceTensor) byteOff() int { return t.elemBytes() * t.off }

func (t *deviceTensor) ref() builtinkernels.BufferRef {
	return builtinkernels.BufferRef{Buf: t.buf, Off: t.off}
}

// whole returns the tensor as a buffer that starts where it does, as custom kernels
// take it.
func (t *deviceTensor) whole() (*cl.Buffer, error) {
	switch {
	case t.off == 0:
		return t.buf, nil
	case t.view != nil:
		return t.view, nil
	}
	return nil, fmt.Errorf("tensor %q lies at offset %d of a shared buffer and has no view of its own", t.name, t.off)
}

// Network is a model compiled for one engine: buffers allocated, programs built, kernel
// arguments set. See the package documentation for its concurrency model.
type Network struct {
	// warnings are the custom layers' warnings of the compile, logged when every
	// layer is bound (logWarnings).
	warnings []jit.Warning
	engine   *Engine
	res      *resolver // decides, once per type, custom or built-in
	Model    *model.Model
	steps    []*step
	levels   [][]int
	tensors  map[string]*deviceTensor
	inputs   []*deviceTensor
	outputs  []*deviceTensor
	// emptyOutputs are the graph outputs with a dimension of 0, which no layer writes.
	emptyOutputs []TensorInfo
	owned        []*cl.Buffer // buffers to release (aliases appear once)
	slotBuf      map[string]*cl.Buffer
	// slotOff and slotView are each activation's element offset in its slotBuf and, for
	// those custom kernels read or write at a nonzero offset, its sub-buffer.
	slotOff  map[string]int
	slotView map[string]*cl.Buffer
	mem      []*memTensor
	// half holds the activations stored as half, halfLayers the layers whose plans store
	// half and halfScratch the scratch buffers (by scratchKey) holding half copies (fp16
	// storage, storage.go); all empty otherwise.
	half, halfLayers, halfScratch map[string]bool
	kernels                       []*cl.Kernel
	progs                         []*program
	// stageIn and stageOut are the pinned host buffers of the inputs and outputs, when
	// transfers go through them (Options.Pinned; transfer.go).
	stageIn, stageOut []*cl.HostBuffer
	// borrowed are the graph inputs kernels read from the caller's memory
	// (borrowed_inputs.go), by name.
	borrowed map[string]*borrowedInput
	// guard is the guarded memory of custom layers' tensors (guard.go); nil when guards
	// are off or no custom layer runs.
	guard *guards
	// stuck is set once an inference ran past its deadline with a kernel still running:
	// OpenCL cannot stop it, so the network (and its engine's queue) runs nothing more.
	stuck *TimeoutError
	// crashNote names the custom layers in the fault report while an inference runs
	// (cl.CrashNote).
	crashNote *cl.CrashNote
	stuckPins []*runtime.Pinner

	mu       sync.Mutex
	released bool
	profile  []LayerTime
	align    int // the arena's offset alignment
	// lastWaiter is, per step, the last step whose wait list holds it.
	lastWaiter []int
	// chain is every launch of an inference, enqueued in one call; launchAt maps its
	// launches to (step, launch of the step).
	chain    *cl.Chain
	launchAt [][2]int
	// inPlace marks the steps of Concats whose inputs are written into the output in
	// place (concatInPlace): they launch nothing.
	inPlace map[int]bool
	// events is submit's per-step event lists, reused from one inference to the next
	// (inferences are serial).
	events [][]*cl.Event
	// PlannedBytes is the device memory of activations; SumBytes the sum of every
	// activation's size (what a network without buffer reuse would take); PeakLiveBytes
	// the largest total of activations alive at one time (the bound a plan can reach).
	PlannedBytes, SumBytes, PeakLiveBytes int64
}

// LayerTime is the device time of one layer in the last inference (Options.Profile).
type LayerTime struct {
	Layer    string
	Type     string
	Custom   bool
	Kernels  int
	DeviceNs uint64
	// Flops is the layer's arithmetic per inference for Conv, Gemm and MatMul (0 for
	// others), so a profile can show achieved GFLOP/s.
	Flops float64 `json:",omitempty"`
	// QueuedNs, StartNs and EndNs place the layer on the inference's timeline: when
	// its first kernel was enqueued by the host, when its first kernel started and when
	// its last one ended, in ns from the first enqueue of the inference. Idle time
	// between layers, and whether the host enqueued too late to fill it, show there.
	QueuedNs, StartNs, EndNs uint64 `json:",omitempty"`
	// Halves says the layer ran as two launches of half the batch each
	// (Options.SplitBatch): DeviceNs adds both halves' times, which overlap each other
	// and the layers around them.
	Halves bool `json:",omitempty"`
}

// stepWaits lists the layers in execution order with the layers each waits on, as
// "name<-dep1,dep2" strings; tests use it to check wait lists.
func (n *Network) stepWaits() []string {
	out := make([]string, len(n.steps))
	for i, s := range n.steps {
		deps := make([]string, len(s.deps))
		for j, d := range s.deps {
			deps[j] = n.steps[d].layer
		}
		out[i] = s.layer + "<-" + strings.Join(deps, ",")
	}
	return out
}

// levelNames returns the layer names per topological level.
func (n *Network) levelNames() [][]string {
	out := make([][]string, len(n.levels))
	for i, lv := range n.levels {
		for _, s := range lv {
			out[i] = append(out[i], n.steps[s].layer)
		}
	}
	return out
}

// CustomLayers lists the layers that run a user's custom kernel, with the config file.
func (n *Network) CustomLayers() []string {
	var out []string
	for _, s := range n.steps {
		if s.custom {
			out = append(out, fmt.Sprintf("%s (%s)", s.layer, s.typ))
		}
	}
	return out
}

// Inputs and Outputs describe the network's graph inputs and outputs.
func (n *Network) Inputs() []TensorInfo { return infos(n.inputs) }
func (n *Network) Outputs() []TensorInfo {
	out := infos(n.outputs)
	for _, t := range n.emptyOutputs {
		out = append(out, TensorInfo{Name: t.Name, Shape: slices.Clone(t.Shape)})
	}
	return out
}

// TensorInfo names a graph input or output and gives its shape.
type TensorInfo struct {
	Name  string
	Shape []int
}

func infos(ts []*deviceTensor) []TensorInfo {
	out := make([]TensorInfo, len(ts))
	for i, t := range ts {
		out[i] = TensorInfo{Name: t.name, Shape: append([]int(nil), t.shape...)}
	}
	return out
}

func (n *Network) release() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.released {
		return
	}
	n.released = true
	if n.stuck != nil {
		return // its kernels may still run: nothing is released
	}
	n.crashNote.Free()
	for _, k := range n.kernels {
		k.Release()
	}
	for _, h := range append(n.stageIn, n.stageOut...) {
		h.Release()
	}
	n.stageIn, n.stageOut = nil, nil
	if n.guard != nil && n.guard.host != nil {
		n.guard.host.Release()
	}
	// Newest first: sub-buffers before the arena they view.
	for i := len(n.owned) - 1; i >= 0; i-- {
		n.owned[i].Release()
	}
	n.kernels, n.owned = nil, nil
}

// Close releases the network's buffers and kernels (programs stay with the engine).
func (n *Network) Close() {
	n.release()
	e := n.engine
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.networks {
		if x == n {
			e.networks = append(e.networks[:i], e.networks[i+1:]...)
			break
		}
	}
}
