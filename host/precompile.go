package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/host/cachedir"
)

// Drivers compile one program at a time per process however many threads ask (PoCL
// under a lock, also each kernel's work-group function at its first launch; NVIDIA's
// builds gain little from threads). On a cold cache, a network's built-in layers
// therefore compile in worker processes (Options.WorkerCommand). On PoCL each worker
// runs its share of the layers' plans once on zeros, which leaves the programs and
// kernels in PoCL's cache; on other drivers it builds the programs and stores their
// binaries in the cache folder. This process then finds them there.
// docs/runtime.md#compiling-in-worker-processes has the design.

// precompileJobs is the file the workers read: the device and the plans to run.
type precompileJobs struct {
	// The engine's device: its index in cl.AllDevices, checked against its names.
	Index    int
	Platform string
	Device   string
	// BuildOnly jobs are built and their binaries stored in CacheDir (drivers but PoCL);
	// the others are run.
	BuildOnly bool
	CacheDir  string
	Jobs      []precompileJob
}

// precompileJob is one built-in layer's plan with the shapes of its tensors.
type precompileJob struct {
	Layer     string
	LayerType string
	Plan      *builtinkernels.Plan
	Inputs    [][]int
	Outputs   [][]int
	// Storage is which tensors the run holds as half (fp16 storage, storage.go).
	Storage builtinkernels.Storage `json:",omitempty"`
}

// precompile compiles the built-in layers' programs in worker processes where workers
// are configured, the cache folder is on and some program is not there yet (on PoCL:
// not marked built; elsewhere: no stored binary). Failures only cost the time: this
// process builds whatever the workers left out.
func (n *Network) precompile(prepared []*preparedLayer) {
	e := n.engine
	pocl := isPoCL(e.device) && !e.buildOnlyWorkers
	if len(e.opts.WorkerCommand) == 0 || e.opts.CacheDir == "" || !pocl && !e.programs.store {
		return
	}
	if pocl && os.Getenv("POCL_KERNEL_CACHE") == "0" {
		return // PoCL keeps nothing a worker compiles
	}
	var jobs []precompileJob
	var origin []*preparedLayer // the layer of each job
	cold := false
	seen := map[string]bool{}
	for si, p := range prepared {
		built := p.built()
		if built == nil || n.inPlace[si] {
			continue
		}
		key := e.programs.key(built.Source, e.programs.withExtra(built.Options))
		if seen[key] {
			continue
		}
		seen[key] = true
		var in, out [][]int
		if pocl {
			// A run needs the tensors' shapes (a build alone does not).
			var err error
			if p.half != nil {
				var ok bool
				if in, out, ok = n.halfShapes(p.l, 2); !ok {
					continue
				}
			} else if in, out, err = n.layerShapes(p.l); err != nil {
				continue
			}
			if hasNil(in) {
				continue // an absent optional input: this process compiles the layer
			}
		}
		mark := filepath.Join(e.opts.CacheDir, cachedir.MarksDir, key)
		plan := *built
		if pocl {
			// Run by RunPlan, which adds no options of its own.
			plan.Options = e.programs.withExtra(plan.Options)
		} else {
			mark = filepath.Join(e.opts.CacheDir, key[:32]+cachedir.BinaryExt)
		}
		if _, err := os.Stat(mark); err != nil {
			cold = true
		}
		jobs = append(jobs, precompileJob{Layer: p.l.Name, LayerType: p.l.Type, Plan: &plan, Inputs: in, Outputs: out, Storage: n.layerStorage(p)})
		origin = append(origin, p)
	}
	orderHeaviestFirst(jobs, origin)
	n0, explicit := precompileWorkers()
	if !explicit && len(jobs) < minWorkerJobs {
		return
	}
	workers := min(n0, len(jobs))
	if !pocl {
		// Each worker holds a context on the GPU, and its memory, while it builds.
		workers = min(workers, maxGPUWorkers)
	}
	if !cold || workers < 2 {
		return
	}
	start := time.Now()
	// This process builds each program as soon as its job is done, from PoCL's cache,
	// while the workers compile the rest; a failed build here is made again, and
	// reported, by prebuild.
	finished := make(chan int, len(jobs))
	// The job finished last names the layer that sets the workers' time: what to look
	// at when a cold start is slow.
	last, lastAt := -1, time.Duration(0)
	var builder sync.WaitGroup
	builder.Add(1)
	go func() {
		defer builder.Done()
		for i := range finished {
			p, built := origin[i], origin[i].built()
			_, _ = e.programs.get(p.l.Type, built.Source, built.Options)
		}
	}()
	what := "kernels"
	if !pocl {
		what = "programs"
	}
	all := precompileJobs{Index: e.device.Index, Platform: e.device.Platform.Name, Device: e.device.Name, BuildOnly: !pocl, CacheDir: e.opts.CacheDir, Jobs: jobs}
	done, err := runPrecompileWorkers(e.opts.WorkerCommand, all, workers,
		e.progress(fmt.Sprintf("%s in %d processes", what, workers), len(jobs)), func(i int) {
			last, lastAt = i, time.Since(start)
			finished <- i
		})
	close(finished)
	builder.Wait()
	if err != nil {
		e.logf("compiling in worker processes: %v; this process compiles the rest", err)
	}
	slowest := ""
	if last >= 0 && done > 1 {
		slowest = fmt.Sprintf("; the last done, at %.1f s: layer %q (%s)", lastAt.Seconds(), jobs[last].Layer, jobs[last].LayerType)
	}
	e.logf("compiled %d of %d layers' %s in %d worker processes in %.1f s%s", done, len(jobs), what, workers, time.Since(start).Seconds(), slowest)
}

// orderHeaviestFirst sorts the jobs, and their layers alongside, by their programs'
// source length, longest first, keeping the network's order among equals. Workers claim
// jobs in the file's order, so a heavy job met late would start only when a worker is
// free and end alone after the others (longest-processing-time-first scheduling). The
// source's length stands for the compile's cost: the long sources are the fused blocks
// and tiled convolutions, whose unrolled work-group functions PoCL compiles longest.
func orderHeaviestFirst(jobs []precompileJob, origin []*preparedLayer) {
	idx := make([]int, len(jobs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return len(jobs[idx[a]].Plan.Source) > len(jobs[idx[b]].Plan.Source)
	})
	j2, o2 := slices.Clone(jobs), slices.Clone(origin)
	for to, from := range idx {
		jobs[to], origin[to] = j2[from], o2[from]
	}
}

// markBuilt records that the programs of the network's built-in layers are in PoCL's
// cache, so that the next Compile of them starts no workers.
func (n *Network) markBuilt(prepared []*preparedLayer) {
	e := n.engine
	if len(e.opts.WorkerCommand) == 0 || !isPoCL(e.device) || e.opts.CacheDir == "" {
		return // elsewhere the stored binaries are the marks
	}
	dir := filepath.Join(e.opts.CacheDir, cachedir.MarksDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	for _, p := range prepared {
		if built := p.built(); built != nil {
			key := e.programs.key(built.Source, e.programs.withExtra(built.Options))
			_ = os.WriteFile(filepath.Join(dir, key), nil, 0o644)
		}
	}
}

// built is the plan of a built-in layer whose program the network builds (its half's,
// where it runs in halves), or nil: a custom layer, or one that launches nothing.
func (p *preparedLayer) built() *builtinkernels.Plan {
	plan := p.plan
	if p.half != nil {
		plan = p.half
	}
	if p.custom != nil || plan == nil || len(plan.Launches) == 0 {
		return nil
	}
	return plan
}

func hasNil(shapes [][]int) bool {
	for _, s := range shapes {
		if s == nil {
			return true
		}
	}
	return false
}

// maxGPUWorkers bounds the worker processes on a GPU, each of which holds a context.
const maxGPUWorkers = 8

// minWorkerJobs is the fewest layers to compile for which workers start unless
// CLHOST_COMPILE_WORKERS asks for them: below it starting processes costs more than it
// saves (the demo's two layers compiled in 7.0 s with workers, 6.0 s without).
const minWorkerJobs = 4

// precompileWorkers is how many worker processes start: one per CPU, or
// CLHOST_COMPILE_WORKERS (0 or 1 turns them off), and whether the variable set it.
func precompileWorkers() (int, bool) {
	if v, err := strconv.Atoi(os.Getenv("CLHOST_COMPILE_WORKERS")); err == nil && v >= 0 {
		return v, true
	}
	return runtime.NumCPU(), false
}

// runPrecompileWorkers writes the jobs to a temporary folder, starts the workers on it
// and waits for them, stepping prog as jobs finish. It returns how many finished.
func runPrecompileWorkers(command []string, jobs precompileJobs, workers int, prog *progress, jobDone func(i int)) (int, error) {
	dir, err := os.MkdirTemp("", "clhost-precompile-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	b, err := json.Marshal(jobs)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(dir, "jobs.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return 0, err
	}
	for _, sub := range []string{"claimed", "done"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return 0, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		cmd := exec.Command(command[0], append(command[1:len(command):len(command)], file)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return 0, fmt.Errorf("starting %s: %w", command[0], err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[w] = fmt.Errorf("worker %d: %v: %s", w, err, bytes.TrimSpace(stderr.Bytes()))
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	seen := make([]bool, len(jobs.Jobs))
	reported := 0
	for waiting := true; waiting; {
		select {
		case <-finished:
			waiting = false
		case <-time.After(50 * time.Millisecond):
		}
		entries, _ := os.ReadDir(filepath.Join(dir, "done"))
		for _, de := range entries {
			if i, err := strconv.Atoi(de.Name()); err == nil && i >= 0 && i < len(seen) && !seen[i] {
				seen[i] = true
				reported++
				prog.step()
				jobDone(i)
			}
		}
	}
	return reported, errors.Join(errs...)
}

// RunCompileWorker is the one hook of the compile workers: the body of the process that
// Options.WorkerCommand starts, which passes it the jobs file named by its last
// argument. A program that sets WorkerCommand to itself calls it first thing in main
// when started so (the clhost command: `clhost compile-worker FILE`) and exits. For each
// job of the file that no other worker has claimed, it runs the plan on zeros, so that
// PoCL compiles its program and kernels into its cache (its results are thrown away), or
// on other drivers builds the program and stores its binary in the cache folder.
func RunCompileWorker(jobsFile string) error {
	b, err := os.ReadFile(jobsFile)
	if err != nil {
		return err
	}
	var jobs precompileJobs
	if err := json.Unmarshal(b, &jobs); err != nil {
		return fmt.Errorf("%s: %w", jobsFile, err)
	}
	dev, err := findDevice(jobs.Index, jobs.Platform, jobs.Device)
	if err != nil {
		return err
	}
	ctx, err := cl.NewContext(dev)
	if err != nil {
		return err
	}
	defer ctx.Release()
	q, err := ctx.NewQueue(cl.QueueOptions{})
	if err != nil {
		return err
	}
	defer q.Release()
	dir := filepath.Dir(jobsFile)
	var programs *programCache
	if jobs.BuildOnly {
		programs = newProgramCache(ctx, jobs.CacheDir, true, func(string, ...any) {})
	}
	var errs []error
	for i, job := range jobs.Jobs {
		// Claiming by creating a file: whichever worker creates it runs the job.
		f, err := os.OpenFile(filepath.Join(dir, "claimed", strconv.Itoa(i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			continue
		}
		f.Close()
		if jobs.BuildOnly {
			if _, err := programs.get(job.LayerType, job.Plan.Source, job.Plan.Options); err != nil {
				errs = append(errs, fmt.Errorf("layer %q: %w", job.Layer, err))
			}
		} else {
			inputs := make([]*builtinkernels.HostTensor, len(job.Inputs))
			for k, s := range job.Inputs {
				inputs[k] = &builtinkernels.HostTensor{Shape: s, Data: make([]float32, elements(s))}
			}
			if _, err := builtinkernels.RunPlanStored(ctx, q, job.Plan, inputs, job.Outputs, job.Storage); err != nil {
				errs = append(errs, fmt.Errorf("layer %q: %w", job.Layer, err))
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "done", strconv.Itoa(i)), nil, 0o644)
	}
	return errors.Join(errs...)
}

// findDevice is the device at index of cl.AllDevices where its platform and name match
// (of several alike GPUs, the engine's own), else the first device of that platform and
// name.
func findDevice(index int, platform, name string) (*cl.Device, error) {
	all, err := cl.AllDevices()
	if err != nil {
		return nil, err
	}
	if index >= 0 && index < len(all) && all[index].Platform != nil && all[index].Platform.Name == platform && all[index].Name == name {
		return all[index], nil
	}
	for _, d := range all {
		if d.Platform != nil && d.Platform.Name == platform && d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no device %q of platform %q", name, platform)
}
