package host

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/host/cachedir"
	"github.com/clhost/clhost/model"
)

// tuner picks, for layers whose op offers several plans (tile sizes, K splits on GPUs),
// the one that runs fastest on this device, by timing each with profiling events. The
// choices are kept in CacheDir/tuning.json, keyed by device, driver, layer type, shapes
// and attributes, so a second run measures nothing. Timing costs seconds per layer on a
// GPU (every candidate is compiled), so only Tune On measures; Tune Auto takes stored
// choices: the user's tuning.json first, then a table shipped in host/tuning for the
// device (keyed without the driver version), else the op's own plan.
type tuner struct {
	e       *Engine
	path    string
	mu      sync.Mutex
	choices map[string]string // layer key → signature of the chosen plan
	// shipped are the choices of the tables in host/tuning, by tableKey.
	shipped map[string]string
	// table is every choice this engine made or took, by tableKey, for WriteTuningTable.
	table map[string]string
	dirty bool
	queue *cl.Queue
}

// shippedTables are tuning tables for known devices, consulted after the user's cache.
//
//go:embed tuning
var shippedTables embed.FS

// measuring says whether plans without a stored choice are timed (Options.Tune). Timing
// at the first run made a GPU's cold start take minutes; CPUs gained nothing from it (a
// layer timed alone does not show how kernels share the cores).
func (e *Engine) measuring() bool { return e.opts.Tune == On }

func newTuner(e *Engine) *tuner {
	t := &tuner{e: e, choices: map[string]string{}, shipped: map[string]string{}, table: map[string]string{}}
	if e.opts.CacheDir != "" {
		t.path = filepath.Join(e.opts.CacheDir, cachedir.TuningFile)
		if b, err := os.ReadFile(t.path); err == nil {
			if err := json.Unmarshal(b, &t.choices); err != nil {
				// A damaged file only costs the choices it held.
				e.logf("tuning choices: %s is damaged (%v); its choices are made again", t.path, err)
				t.choices = map[string]string{}
			}
		}
	}
	if e.opts.Tune != Off {
		t.loadShipped()
	}
	return t
}

// tuningTable is the form of a shipped table: choices by tableKey, per device
// (tableDevice), so that an engine takes those of its own device alone.
type tuningTable map[string]map[string]string

// tableDevice names the engine's device in a tuning table.
func (e *Engine) tableDevice() string { return e.device.Platform.Name + " / " + e.device.Name }

// loadShipped reads the shipped tables' choices for the engine's device; a table that
// does not parse is skipped (a test keeps them valid).
func (t *tuner) loadShipped() {
	files, _ := fs.Glob(shippedTables, "tuning/*.json")
	for _, f := range files {
		b, err := shippedTables.ReadFile(f)
		if err != nil {
			continue
		}
		var table tuningTable
		if json.Unmarshal(b, &table) == nil {
			maps.Copy(t.shipped, table[t.e.tableDevice()])
		}
	}
}

// key identifies a layer instance on this device and driver in tuning.json.
func (t *tuner) key(l *model.Layer, in, out [][]int) string {
	dev := t.e.device
	return hashText(dev.Platform.Name, dev.Name, dev.DriverVersion, l.Type, fmt.Sprint(in, out), fmt.Sprint(l.Attrs)+t.precisionKey())[:24]
}

// precisionKey sets the choices made at a reduced precision apart: their candidates
// include tensor-core plans, which an fp32 run must not take. It is empty at fp32, so
// that the keys of fp32 choices, and the shipped tables, stay as they were.
func (t *tuner) precisionKey() string {
	if p := t.e.planDevice().Precision; p != builtinkernels.PrecisionFP32 {
		return " precision " + p.String()
	}
	return ""
}

// tableKey identifies a layer instance on this device in a shipped table: without the
// driver version, so a table measured once serves the drivers after it (a choice that no
// candidate matches any more is ignored).
func (t *tuner) tableKey(l *model.Layer, in, out [][]int) string {
	dev := t.e.device
	return hashText(dev.Platform.Name, dev.Name, l.Type, fmt.Sprint(in, out), fmt.Sprint(l.Attrs)+t.precisionKey())[:24]
}

// stored says whether any choice could apply, so that layers skip listing their
// candidates when none can.
func (t *tuner) stored() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.choices) > 0 || len(t.shipped) > 0
}

// known returns the index of the candidate an earlier run chose (the user's cache, then
// the shipped tables), or -1.
func (t *tuner) known(l *model.Layer, in, out [][]int, cands []*builtinkernels.Plan) int {
	t.mu.Lock()
	sigs := []string{t.choices[t.key(l, in, out)], t.shipped[t.tableKey(l, in, out)]}
	t.mu.Unlock()
	for _, sig := range sigs {
		if sig == "" {
			continue
		}
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

// plan returns a tunable layer's plan: a stored choice, else, when measuring, the
// fastest candidate, else the op's own plan.
func (t *tuner) plan(l *model.Layer, op builtinkernels.Op, tun builtinkernels.Tunable, in, out [][]int) (*builtinkernels.Plan, error) {
	dev := t.e.planDevice()
	if t.e.measuring() {
		return t.choose(l, tun, in, out)
	}
	if t.stored() {
		cands, err := tun.Candidates(l, in, out, dev)
		if err != nil {
			return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
		}
		if i := t.known(l, in, out, cands); i >= 0 {
			t.remember(l, in, out, cands[i], false)
			return cands[i], nil
		}
	}
	return op.Plan(l, in, out, dev)
}

// remember records a choice for WriteTuningTable and, when measured, for tuning.json.
func (t *tuner) remember(l *model.Layer, in, out [][]int, c *builtinkernels.Plan, measured bool) {
	sig := planSignature(c)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.table[t.tableKey(l, in, out)] = sig
	if measured {
		t.choices[t.key(l, in, out)] = sig
		t.dirty = true
	}
}

// choose returns the fastest of the op's candidate plans for this layer instance.
func (t *tuner) choose(l *model.Layer, op builtinkernels.Tunable, in, out [][]int) (*builtinkernels.Plan, error) {
	cands, err := op.Candidates(l, in, out, t.e.planDevice())
	if err != nil {
		return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.Type, err)
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	if i := t.known(l, in, out, cands); i >= 0 {
		t.remember(l, in, out, cands[i], false)
		return cands[i], nil
	}
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
	t.remember(l, in, out, cands[best], true)
	return cands[best], nil
}

// prebuild compiles a layer's candidates several at once before they are timed one at
// a time: compiling is nearly all of the tuning, and a driver compiles on the calling
// thread. Only on GPUs: PoCL measured no faster (it builds one program at a time).
// CLHOST_BUILD_THREADS sets the number of threads (1: no prebuild). Failures are left
// for the timing to report against the candidate.
func (t *tuner) prebuild(layerType string, cands []*builtinkernels.Plan) {
	threads := buildThreads()
	if !t.e.device.IsGPU() && os.Getenv("CLHOST_BUILD_THREADS") == "" {
		threads = 1
	}
	if min(threads, len(cands)) < 2 {
		return
	}
	reqs := make([]buildRequest, len(cands))
	for i, c := range cands {
		reqs[i] = buildRequest{layerType: layerType, source: c.Source, options: c.Options}
	}
	t.e.programs.buildAll(reqs, threads, nil)
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

// WriteTuningTable merges the tuning choices this engine made or took from its cache
// into the table at path, keyed without the driver version: a table to ship in
// host/tuning, consulted after the user's cache (Tune Auto) on the same device.
func (e *Engine) WriteTuningTable(path string) error {
	t := e.tuner
	table := tuningTable{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &table); err != nil {
			return fmt.Errorf("tuning table %s: %w", path, err)
		}
	}
	dev := e.tableDevice()
	if table[dev] == nil {
		table[dev] = map[string]string{}
	}
	t.mu.Lock()
	maps.Copy(table[dev], t.table)
	t.mu.Unlock()
	b, err := json.MarshalIndent(table, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("tuning table: %w", err)
	}
	return nil
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
