package host

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host/cl"
	"github.com/clhost/clhost/host/model"
)

// tuner picks, for layers whose op offers several plans (tile sizes, K splits on GPUs),
// the one that runs fastest on this device, by timing each with profiling events. The
// choices are kept in CacheDir/tuning.json, keyed by device, driver, layer type, shapes
// and attributes, so a second run measures nothing.
type tuner struct {
	e       *Engine
	path    string
	mu      sync.Mutex
	choices map[string]string // layer key → signature of the chosen plan
	dirty   bool
	queue   *cl.Queue
}

// TuneMode is Options.Tune.
type TuneMode int

// Tune modes.
const (
	TuneAuto TuneMode = iota
	TuneOn
	TuneOff
)

// tuning resolves Options.Tune for the engine's device. On CPUs the tuned plans were no
// faster than each op's own (a layer timed alone does not show how kernels share the
// cores), while the candidates cost seconds of compiling each.
func (e *Engine) tuning() bool {
	switch e.opts.Tune {
	case TuneOn:
		return true
	case TuneOff:
		return false
	}
	return e.Device.IsGPU()
}

func newTuner(e *Engine) *tuner {
	t := &tuner{e: e, choices: map[string]string{}}
	if e.opts.CacheDir != "" {
		t.path = filepath.Join(e.opts.CacheDir, "tuning.json")
		if b, err := os.ReadFile(t.path); err == nil {
			// A damaged file only costs a re-measurement.
			_ = json.Unmarshal(b, &t.choices)
		}
	}
	return t
}

// key identifies a layer instance on this device and driver in tuning.json.
func (t *tuner) key(l *model.Layer, in, out [][]int) string {
	dev := t.e.Device
	return hashText(dev.Platform.Name, dev.Name, dev.DriverVersion, l.Type, fmt.Sprint(in, out), fmt.Sprint(l.Attrs))[:24]
}

// known returns the index of the candidate chosen on an earlier run, or -1.
func (t *tuner) known(l *model.Layer, in, out [][]int, cands []*builtinkernels.Plan) int {
	t.mu.Lock()
	sig, ok := t.choices[t.key(l, in, out)]
	t.mu.Unlock()
	if ok {
		for i, c := range cands {
			if planSignature(c) == sig {
				return i
			}
		}
	}
	return -1
}

func planSignature(p *builtinkernels.Plan) string {
	return hashText(p.Source, p.Options, fmt.Sprint(p.Setup), fmt.Sprint(p.Launches), fmt.Sprint(p.Scratch))[:16]
}

// choose returns the fastest of the op's candidate plans for this layer instance.
func (t *tuner) choose(l *model.Layer, op builtinkernels.Tunable, in, out [][]int) (*builtinkernels.Plan, error) {
	dev := t.e.Device
	cands, err := op.Candidates(l, in, out, builtinkernels.DeviceInfoOf(dev))
	if err != nil {
		return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	if i := t.known(l, in, out, cands); i >= 0 {
		return cands[i], nil
	}
	key := t.key(l, in, out)
	t.prebuild(l.Type, cands)
	best, bestNs := 0, uint64(math.MaxUint64)
	for i, c := range cands {
		ns, err := t.time(l, c, in, out)
		if err != nil {
			// A candidate the device refuses (too many resources, say) is skipped.
			t.e.logf("tuning layer %q: candidate %d: %v", l.Name, i, err)
			continue
		}
		if ns < bestNs {
			best, bestNs = i, ns
		}
	}
	if bestNs == math.MaxUint64 {
		return cands[0], nil
	}
	t.mu.Lock()
	t.choices[key] = planSignature(cands[best])
	t.dirty = true
	t.mu.Unlock()
	return cands[best], nil
}

// prebuild compiles a layer's candidates several at once before they are timed one at
// a time: compiling is nearly all of a cold start, and a driver compiles on the calling
// thread. Only on GPUs: PoCL measured no faster (it builds one program at a time).
// CLHOST_BUILD_THREADS sets the number of threads (1: no prebuild). Failures are left
// for the timing to report against the candidate.
func (t *tuner) prebuild(layerType string, cands []*builtinkernels.Plan) {
	threads := runtime.NumCPU()
	if !t.e.Device.IsGPU() {
		threads = 1
	}
	if v, err := strconv.Atoi(os.Getenv("CLHOST_BUILD_THREADS")); err == nil && v > 0 {
		threads = v
	}
	threads = min(threads, len(cands))
	if threads < 2 {
		return
	}
	work := make(chan *builtinkernels.Plan)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				_, _ = t.e.programs.get(layerType, c.Source, c.Options)
			}
		}()
	}
	for _, c := range cands {
		work <- c
	}
	close(work)
	wg.Wait()
}

// time runs one candidate on scratch buffers and returns its device time (the best of a
// few runs).
func (t *tuner) time(l *model.Layer, plan *builtinkernels.Plan, in, out [][]int) (uint64, error) {
	if t.queue == nil {
		q, err := t.e.ctx.NewQueue(cl.QueueOptions{Profiling: true})
		if err != nil {
			return 0, err
		}
		t.queue = q
	}
	prog, err := t.e.programs.get(l.Type, plan.Source, plan.Options)
	if err != nil {
		return 0, err
	}
	var bufs []*cl.Buffer
	var kernels []*cl.Kernel
	defer func() {
		for _, k := range kernels {
			k.Release()
		}
		for _, b := range bufs {
			b.Release()
		}
	}()
	alloc := func(shape []int) (*cl.Buffer, error) {
		b, err := t.e.ctx.NewBuffer(cl.MemReadWrite, 4*max(elements(shape), 1))
		if err == nil {
			bufs = append(bufs, b)
			ev, ferr := t.queue.Fill(b, make([]byte, 4), 0, b.Size(), nil)
			if ferr == nil {
				ev.Release()
			}
		}
		return b, err
	}
	ins := make([]*cl.Buffer, len(in))
	for i, s := range in {
		if s != nil {
			if ins[i], err = alloc(s); err != nil {
				return 0, err
			}
		}
	}
	outs := make([]*cl.Buffer, len(out))
	for i, s := range out {
		// A plan asked for an output batch stride writes its images that far apart.
		if outs[i], err = alloc([]int{plan.OutputSpan(i, s)}); err != nil {
			return 0, err
		}
	}
	scratch := make([]*cl.Buffer, len(plan.Scratch))
	for i, size := range plan.Scratch {
		if scratch[i], err = alloc([]int{(size + 3) / 4}); err != nil {
			return 0, err
		}
	}
	bind := func(las []builtinkernels.Launch) ([]launch, error) {
		ls, ks, err := bindLaunches(prog.prog, las, builtinkernels.Refs(ins), builtinkernels.Refs(outs), builtinkernels.Refs(scratch))
		kernels = append(kernels, ks...)
		return ls, err
	}
	// Setup work (weight packing) runs once per network, so it is run but not timed.
	setup, err := bind(plan.Setup)
	if err != nil {
		return 0, err
	}
	if len(setup) > 0 {
		if err := runInOrder(t.queue, setup); err != nil {
			return 0, err
		}
	}
	launches, err := bind(plan.Launches)
	if err != nil {
		return 0, err
	}
	best := uint64(math.MaxUint64)
	for rep := 0; rep < 4; rep++ {
		var total uint64
		for _, la := range launches {
			ev, err := t.queue.EnqueueNDRange(la.kernel, la.global, la.local, nil)
			if err != nil {
				return 0, err
			}
			err = ev.Wait()
			_, start, end, perr := ev.Profile()
			ev.Release()
			if err != nil {
				return 0, err
			}
			if perr != nil {
				return 0, perr
			}
			total += end - start
		}
		if rep > 0 { // the first run warms caches and the driver
			best = min(best, total)
		}
	}
	return best, nil
}

// save writes the choices made so far; failures only cost re-measurement next time.
func (t *tuner) save() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dirty || t.path == "" {
		return
	}
	b, err := json.MarshalIndent(t.choices, "", " ")
	if err != nil || os.MkdirAll(filepath.Dir(t.path), 0o755) != nil {
		return
	}
	writeAtomic(filepath.Dir(t.path), t.path, b)
	t.dirty = false
}

func (t *tuner) release() {
	t.queue.Release()
}

// bindLaunches creates the kernels of launches from prog and binds their arguments. The
// kernels come back even on error, for the caller to release.
func bindLaunches(prog *cl.Program, las []builtinkernels.Launch, ins, outs, scratch []builtinkernels.BufferRef) ([]launch, []*cl.Kernel, error) {
	var out []launch
	var kernels []*cl.Kernel
	for _, la := range las {
		k, err := prog.Kernel(la.Kernel)
		if err != nil {
			return nil, kernels, err
		}
		kernels = append(kernels, k)
		if err := builtinkernels.SetArgs(k, la.Args, ins, outs, scratch); err != nil {
			return nil, kernels, err
		}
		out = append(out, launch{kernel: k, global: la.Global, local: la.Local})
	}
	return out, kernels, nil
}

// runInOrder runs launches one after another on q and waits for the last.
func runInOrder(q *cl.Queue, ls []launch) error {
	var prev *cl.Event
	defer func() { prev.Release() }()
	for _, la := range ls {
		var wait []*cl.Event
		if prev != nil {
			wait = []*cl.Event{prev}
		}
		ev, err := q.EnqueueNDRange(la.kernel, la.global, la.local, wait)
		if err != nil {
			return err
		}
		prev.Release()
		prev = ev
	}
	if prev == nil {
		return nil
	}
	return prev.Wait()
}
