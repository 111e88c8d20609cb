// Package host runs models on an OpenCL device. An Engine owns the device, its context,
// its command queue and a program cache; Engine.Compile turns a model into a Network, in
// which every layer is bound to a built-in kernel or to a user's custom-layer kernel, with
// every buffer allocated, every program built and every kernel argument set. Network.Infer
// then only copies inputs in, enqueues the kernels and copies outputs out.
//
// LoadModel reads a model in any form clhost reads (.clm, .json, .onnx). Options.Configs
// adds custom-layer configurations, whose XML and generated defines docs/custom-layers.md
// describes. The zero Options choose for the device what the clhost command does.
//
// Network.Check runs an inference and checks it: each built-in layer against its CPU
// reference, custom layers through a sanitizer, tensors against expected values, the
// outputs against the whole network on the CPU. Options.CacheDir keeps compiled programs
// and tuning choices across runs; package host/cachedir describes that folder.
//
// Concurrency: a Network may be used from any number of goroutines. Its device buffers
// and kernel arguments are shared, so inferences are serialized (submission and wait of
// one inference complete before the next starts); results are identical to a serial run.
// Use several Networks (they may share one Engine) for inferences that overlap.
package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	builtinkernels "github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/customlayer"
)

// Options configure an Engine.
type Options struct {
	// Device is a device spec as for `clhost -d`: "" (the first GPU, else the first
	// CPU), "cpu", "gpu", an index in `clhost devices`' list (DeviceInfo.Index) or part
	// of a device's or platform's name.
	Device string
	// device, when set, is the device itself, and Device is ignored: the tests open
	// engines on a device they chose once.
	device *cl.Device
	// Configs are custom-layer configuration files, loaded in order after the global
	// configuration; ConfigFS adds configurations from file systems (embedded configs).
	Configs  []string
	ConfigFS []ConfigFile
	// NoGlobalConfig skips the global configuration (configs/).
	NoGlobalConfig bool
	// DumpKernels, when set, is a folder that receives every compiled program.
	DumpKernels string
	// DumpTensors, when set, is a folder that receives every tensor of each inference.
	DumpTensors string
	// KeepIntermediates gives every activation a buffer of its own, so all of them can
	// be read after an inference (Network.Check, tensor dumps); otherwise activations
	// whose lifetimes do not overlap share buffers.
	KeepIntermediates bool
	// NoFuse keeps every layer as the model has it: no BatchNormalization folding, no
	// activation or residual fusion.
	NoFuse bool
	// KeepFires keeps a fire module (a squeeze Conv, its two expansion Convs and their
	// Concat) as those four layers on CPU devices too, where by default it runs as one
	// fused layer of type "clhost.Fire".
	KeepFires bool
	// Tune says how the plans some ops offer (tile sizes, K splits) are chosen. Auto (the
	// default) takes the choices an earlier run with On stored in CacheDir (or a table
	// shipped for the device), else each op's own choice, and times nothing; On times
	// the plans of layers without a stored choice at compile time and stores the fastest
	// (seconds per layer on a GPU); Off takes each op's own choice.
	Tune Mode
	// Pinned copies inputs and outputs through pinned host buffers of the network's own
	// (transfer.go): Auto (the default) on GPUs only, On, Off.
	Pinned Mode
	// CopyInputs writes every graph input into memory of the network's own before each
	// inference. Without it, on a CPU device the kernels read each input from the
	// caller's Tensor itself (borrowed_inputs.go), whose data must then not change until
	// the inference ends.
	CopyInputs bool
	// Arena says how activations share memory: On (and Auto, the default) places them
	// at planned offsets of one buffer (the least memory: the largest live set), which
	// built-in kernels take as the buffer and an offset; Off gives each reuse slot a
	// buffer of its own (more memory). Both run equally fast on GPUs; the arena is
	// offsets, not sub-buffers, which NVIDIA's driver enqueues late
	// (docs/runtime.md#memory).
	Arena Mode
	// GuardBytes is the smallest guard zone on each side of every tensor a custom
	// kernel takes (guard.go): 0 is DefaultGuardBytes, a negative value turns guards
	// off. A guard is as large as its tensor where that is larger.
	GuardBytes int
	// Profile turns on event profiling, so Network.Profile reports device times.
	Profile bool
	// Queue is the kind of command queue: QueueAuto (the default) is out of order on
	// CPUs, where independent branches run on different cores, and in order on GPUs,
	// where events cost more than the overlap gains; QueueInOrder, QueueOutOfOrder.
	Queue QueueMode
	// SplitBatch says whether layers run as two launches of half the batch each, whose
	// kernels overlap (split.go): Auto (the default) on CPU devices where it measured
	// faster, On on any device with an out-of-order queue, Off never. It needs an
	// out-of-order queue and is off while intermediates are kept or dumped.
	SplitBatch Mode
	// CacheDir holds compiled program binaries and tuning choices across runs; empty
	// disables the cache.
	CacheDir string
	// Binaries says whether built programs are written to CacheDir: Auto (the default)
	// on every driver but PoCL (see storeBinaries), On, Off. Binaries already in
	// CacheDir are loaded in every mode.
	Binaries Mode
	// Progress, when set, is called as Compile advances, one call at a time: done of
	// total steps of what ("programs" built, "layers" tuned). A caller shows it when
	// compiling takes long.
	Progress func(done, total int, what string)
	// WorkerCommand, when set, is a command that runs RunCompileWorker on the file named
	// by its last argument (the clhost command: its own binary). On PoCL, whose compiler
	// works one program at a time per process, a cold Compile then compiles the built-in
	// layers in that many processes at once, one per CPU (CLHOST_COMPILE_WORKERS); nil
	// compiles in this process alone.
	WorkerCommand []string
	// Precision is what convolutions and GEMMs compute in and how activations are stored
	// (precision.go): FP32 (the default) as always; TF32 on tensor cores where the device
	// takes them, else FP32; FP16 stores activations and the weights the kernels read as
	// half, computing in float where the device has no half arithmetic.
	Precision builtinkernels.Precision
	// Log receives notes (device choice, overrides, reorders); nil discards them.
	Log io.Writer
}

// Mode is a setting the engine chooses for its device (Auto, the zero value) or that
// the caller forces On or Off: Options.Tune, Pinned, Arena, SplitBatch and Binaries.
type Mode int

// Modes.
const (
	Auto Mode = iota
	On
	Off
)

// useArena resolves Options.Arena for the engine's device.
func (e *Engine) useArena() bool {
	switch e.opts.Arena {
	case On:
		return true
	case Off:
		return false
	}
	return true
}

// QueueMode is Options.Queue.
type QueueMode int

// Queue modes.
const (
	QueueAuto QueueMode = iota
	QueueInOrder
	QueueOutOfOrder
)

// ConfigFile names a custom-layer configuration inside a file system.
type ConfigFile struct {
	FS   fs.FS
	Path string
}

// Engine is one device with its context, queue, custom-layer registry and programs.
type Engine struct {
	opts   Options
	device *cl.Device
	// info describes device, listed once: describing it walks every platform's devices.
	info     DeviceInfo
	infoOnce sync.Once
	ctx      *cl.Context
	queue    *cl.Queue
	// Layers are the custom layers the engine loaded (Options.Configs and the global
	// configuration): a layer whose type one of them names runs its kernel.
	Layers   *customlayer.Registry
	programs *programCache
	tuner    *tuner
	mu       sync.Mutex
	networks []*Network
	closed   bool
	// stuck is the timeout of a network whose kernel ran past an inference's deadline
	// (Network.stuck); nil while none has.
	stuck atomic.Pointer[TimeoutError]
	// subBuffer creates an activation's view of the arena; the tests replace it to
	// reach the buffer-per-tensor fallback on drivers that never refuse a sub-buffer.
	subBuffer func(arena *cl.Buffer, offset, size int) (*cl.Buffer, error)
	// buildOnlyWorkers makes compile workers build and store binaries on PoCL too, as
	// they do on other drivers; the tests set it to reach that path on PoCL.
	buildOnlyWorkers bool
	// guardCheckKernel makes a CPU device check guards with the check kernel, as GPUs
	// do; the tests set it to reach that path on PoCL.
	guardCheckKernel bool
	// warned holds the warnings already logged: a network compiled again (another
	// batch, another device order) must not repeat a layer's warning.
	warned sync.Map
}

// warnOnce logs a warning the first time this engine sees it.
func (e *Engine) warnOnce(w string) {
	if _, seen := e.warned.LoadOrStore(w, true); !seen {
		e.logf("warning: %s", w)
	}
}

// NewEngine opens the device and loads the custom-layer configurations. Every
// configuration problem is reported at once.
func NewEngine(opts Options) (*Engine, error) {
	e := &Engine{opts: opts, subBuffer: func(arena *cl.Buffer, offset, size int) (*cl.Buffer, error) {
		return arena.Sub(cl.MemReadWrite, offset, size)
	}}
	reg, err := loadConfigs(opts, e.logf)
	if err != nil {
		return nil, err
	}
	e.Layers = reg
	dev := opts.device
	if dev == nil {
		d, note, err := cl.Select(opts.Device)
		if err != nil {
			return nil, err
		}
		e.logf("%s", note)
		dev = d
	}
	e.device = dev
	if e.ctx, err = cl.NewContext(dev); err != nil {
		return nil, err
	}
	ooo := opts.Queue == QueueOutOfOrder || opts.Queue == QueueAuto && !dev.IsGPU()
	e.queue, err = e.ctx.NewQueue(cl.QueueOptions{OutOfOrder: ooo, Profiling: opts.Profile})
	if err != nil {
		e.ctx.Release()
		return nil, err
	}
	e.programs = newProgramCache(e.ctx, opts.CacheDir, e.storeBinaries(), e.logf)
	e.tuner = newTuner(e)
	return e, nil
}

func (e *Engine) logf(format string, args ...any) {
	if e.opts.Log != nil {
		fmt.Fprintf(e.opts.Log, "clhost: "+format+"\n", args...)
	}
}

// Device describes the engine's device, as Devices lists it.
func (e *Engine) Device() DeviceInfo {
	e.infoOnce.Do(func() { e.info = describeDevice(e.device) })
	return e.info
}

// OutOfOrder reports whether the engine's queue runs independent kernels out of order.
func (e *Engine) OutOfOrder() bool { return e.queue.OutOfOrder }

// Close releases every network compiled by the engine, its programs, queue and context.
// Safe to call more than once.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.closed = true
	for _, n := range e.networks {
		n.release()
	}
	e.networks = nil
	if e.stuck.Load() != nil {
		return // a kernel still runs: finishing the queue would wait for ever
	}
	if e.queue != nil {
		_ = e.queue.Finish()
	}
	e.tuner.release()
	e.programs.release()
	e.queue.Release()
	e.ctx.Release()
}

// hashText is the short content hash used for program keys and dump file names.
func hashText(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ensureDir creates a dump folder, with an error that names it.
func ensureDir(dir, what string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s folder: %w", what, err)
	}
	return nil
}

// layerOrigin names the configuration file a custom layer type came from.
func (e *Engine) layerOrigin(typ string) string {
	if l, ok := e.Layers.Lookup(typ); ok {
		return l.Origin
	}
	return "?"
}
