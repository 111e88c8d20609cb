package host

import (
	"bytes"
	"context"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/host/cachedir"
	"github.com/clhost/clhost/model"
)

// privatePoCLEnv marks the child process in which TestCompileWorkersFillPoCLCache runs
// with a PoCL cache of its own.
const privatePoCLEnv = "CLHOST_TEST_PRIVATE_POCL"

// precompileWorkerEnv makes this test binary a compile worker (TestMain), as the CLI's
// compile-worker command is.
const precompileWorkerEnv = "CLHOST_TEST_COMPILE_WORKER"

// syncLog is a Log that a test reads while the engine writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	at  map[string]time.Time // when a line containing a key was written
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[string]time.Time{}
	}
	l.at[string(p)] = time.Now()
	return l.buf.Write(p)
}

// TestCompileWorkersFillPoCLCache: on PoCL with a cold cache, the built-in layers'
// programs and kernels compile in worker processes, this process then compiles none of
// them (no kernel file in PoCL's cache is newer than the workers' end), the outputs
// match an engine without workers, and a second Compile starts no workers.
func TestCompileWorkersFillPoCLCache(t *testing.T) {
	if os.Getenv(privatePoCLEnv) != "1" {
		// PoCL reads its cache folder once per process, and other test processes may
		// compile into a shared one meanwhile: the check runs in a child process with a
		// cache of its own, so that their kernels cannot pass for this process's.
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompileWorkersFillPoCLCache$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), privatePoCLEnv+"=1", "POCL_CACHE_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("--- PASS: TestCompileWorkersFillPoCLCache/halves")) {
			t.Fatalf("the check did not run:\n%s", out)
		}
		return
	}
	// The PoCL path, on the CPU whichever device the other tests use (PoCL is the CPU
	// runtime wherever the suite runs).
	probe := newTestEngine(t, Options{NoGlobalConfig: true, Device: "cpu"})
	if !isPoCL(probe.device) {
		t.Fatalf("the CPU device %q is not PoCL (install pocl-opencl-icd)", probe.device.Name)
	}
	t.Setenv(precompileWorkerEnv, "1")
	t.Setenv("CLHOST_COMPILE_WORKERS", "2")
	t.Run("whole", func(t *testing.T) { checkCompileWorkers(t, Options{NoGlobalConfig: true, Device: "cpu"}, 1) })
	// Layers that run in halves: the workers compile the half plans.
	t.Run("halves", func(t *testing.T) {
		checkCompileWorkers(t, Options{NoGlobalConfig: true, Device: "cpu", SplitBatch: On, Queue: QueueOutOfOrder}, 2)
	})
}

func checkCompileWorkers(t *testing.T, opts Options, batch int) {
	// Shapes no other test uses, so that their programs are not in PoCL's cache yet (the
	// clock picks the input channels, so that a rerun on the same cache is cold too).
	c := 5 + int(time.Now().UnixNano()%7)
	build := func() *model.Model {
		b := model.NewBuilder("precompile")
		w := uniformConsts(b, rand.New(rand.NewSource(4)), 0.3)
		x := b.Input("x", model.Float32, batch, c, 11, 13)
		c1 := b.Layer("Conv", "c1", []string{x, w("w1", 7, c, 3, 3), w("b1", 7)}, model.IntsAttr("pads", 1, 1, 1, 1))
		r := b.Layer("Relu", "r", []string{c1})
		c2 := b.Layer("Conv", "c2", []string{r, w("w2", 9, 7, 1, 1), w("b2", 9)})
		b.Output(b.Layer("MaxPool", "p", []string{c2}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2)))
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := build()
	cache := t.TempDir()
	log := &syncLog{}
	o := opts
	o.CacheDir, o.WorkerCommand, o.Log = cache, []string{os.Args[0]}, log
	e := newTestEngine(t, o)
	n, err := e.Compile(m)
	if batch > 1 && len(n.SplitLayers()) == 0 {
		t.Fatal("no layer runs in halves")
	}
	if err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	text := log.buf.String()
	var workersEnd time.Time
	for line, at := range log.at {
		if regexp.MustCompile(`worker processes in`).MatchString(line) {
			workersEnd = at
		}
	}
	log.mu.Unlock()
	got := regexp.MustCompile(`compiled (\d+) of (\d+) layers' kernels in 2 worker processes`).FindStringSubmatch(text)
	if got == nil {
		t.Fatalf("no workers ran; log:\n%s", text)
	}
	if done, all := got[1], got[2]; done != all || done == "0" {
		t.Fatalf("workers compiled %s of %s layers; log:\n%s", done, all, text)
	}
	if last := regexp.MustCompile(`the last done, at [0-9.]+ s: layer "([^"]+)" \(`).FindStringSubmatch(text); last == nil || !slices.ContainsFunc(m.Layers, func(l model.Layer) bool { return l.Name == last[1] }) {
		t.Errorf("the log does not name the model's layer the workers finished last:\n%s", text)
	}
	in := map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(2)), batch, c, 11, 13)}
	out, err := n.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Every kernel this process ran was in PoCL's cache already.
	var newer []string
	filepath.WalkDir(cachedir.PoCLDir(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".so" {
			if info, err := d.Info(); err == nil && info.ModTime().After(workersEnd) {
				newer = append(newer, path)
			}
		}
		return nil
	})
	if len(newer) > 0 {
		t.Errorf("%d kernels compiled by this process after the workers ended: %v", len(newer), newer)
	}
	plain := newTestEngine(t, opts)
	pn, err := plain.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pn.Infer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		for i, v := range w.Data {
			if d := math.Abs(float64(out[name].Data[i] - v)); d > 1e-5 {
				t.Fatalf("output %s[%d]: %g, the engine without workers %g", name, i, out[name].Data[i], v)
			}
		}
	}
	// Marked built: the same model compiles again with no workers.
	again := &syncLog{}
	o.Log = again
	e2 := newTestEngine(t, o)
	if _, err := e2.Compile(m); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(again.buf.Bytes(), []byte("worker processes")) {
		t.Errorf("second compile started workers:\n%s", again.buf.String())
	}
}

// TestCompileWorkersStoreBinaries: where the driver keeps no cache of its own (GPUs), the
// workers build the programs and store their binaries in the cache folder, from which
// this process then loads every one of them (reached on PoCL through buildOnlyWorkers).
func TestCompileWorkersStoreBinaries(t *testing.T) {
	t.Setenv(precompileWorkerEnv, "1")
	t.Setenv("CLHOST_COMPILE_WORKERS", "2")
	log := &syncLog{}
	e := newTestEngine(t, Options{NoGlobalConfig: true, CacheDir: t.TempDir(), Binaries: On, WorkerCommand: []string{os.Args[0]}, Log: log})
	e.buildOnlyWorkers = true
	// Three programs, each small.
	b := model.NewBuilder("binaries")
	w := uniformConsts(b, rand.New(rand.NewSource(6)), 0.3)
	x := b.Input("x", model.Float32, 1, 3, 6, 6)
	c := b.Layer("Conv", "c", []string{x, w("w", 4, 3, 3, 3), w("b", 4)})
	p := b.Layer("MaxPool", "p", []string{c}, model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(b.Layer("Softmax", "s", []string{p}, model.IntAttr("axis", 1)))
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Compile(m); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`compiled (\d+) of (\d+) layers' programs in 2 worker processes`).FindStringSubmatch(log.buf.String())
	if got == nil || got[1] != got[2] || got[1] == "0" {
		t.Fatalf("want every layer's program built by 2 workers; log:\n%s", log.buf.String())
	}
	e.programs.mu.Lock()
	defer e.programs.mu.Unlock()
	for _, p := range e.programs.order {
		if !p.fromCache {
			t.Errorf("program of %s built by this process, not loaded from a worker's binary", p.layerType)
		}
	}
	if len(e.programs.order) == 0 {
		t.Error("no programs")
	}
}

// TestFindWorkerDevice: a worker opens the engine's own device by its index where the
// names match (several alike GPUs), else the first device of that platform and name, and
// fails on a device that is not there.
func TestFindWorkerDevice(t *testing.T) {
	d := newTestEngine(t, Options{NoGlobalConfig: true}).device
	got, err := findDevice(d.Index, d.Platform.Name, d.Name)
	if err != nil || got.Index != d.Index {
		t.Fatalf("by index %d: %v, %v", d.Index, got, err)
	}
	if got, err := findDevice(d.Index+1000, d.Platform.Name, d.Name); err != nil || got.Name != d.Name {
		t.Errorf("by name: %v, %v", got, err)
	}
	if _, err := findDevice(d.Index, d.Platform.Name, "no such device"); err == nil {
		t.Error("a device that is not there was found")
	}
}

// TestCompileWorkersNotForFewLayers: a network of fewer than minWorkerJobs built-in
// programs compiles in this process unless CLHOST_COMPILE_WORKERS asks for workers.
func TestCompileWorkersNotForFewLayers(t *testing.T) {
	t.Setenv(precompileWorkerEnv, "1")
	t.Setenv("CLHOST_COMPILE_WORKERS", "") // not a number: not set
	for _, set := range []bool{false, true} {
		if set {
			t.Setenv("CLHOST_COMPILE_WORKERS", "2")
		}
		log := &syncLog{}
		e := newTestEngine(t, Options{NoGlobalConfig: true, CacheDir: t.TempDir(), Binaries: On, WorkerCommand: []string{os.Args[0]}, Log: log})
		e.buildOnlyWorkers = true
		b := model.NewBuilder("few")
		w := uniformConsts(b, rand.New(rand.NewSource(8)), 0.3)
		x := b.Input("x", model.Float32, 1, 3, 5, 5)
		c := b.Layer("Conv", "c", []string{x, w("w", 2, 3, 1, 1), w("b", 2)})
		b.Output(b.Layer("Softmax", "s", []string{c}, model.IntAttr("axis", 1)))
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compile(m); err != nil {
			t.Fatal(err)
		}
		if ran := bytes.Contains(log.buf.Bytes(), []byte("worker processes")); ran != set {
			t.Errorf("CLHOST_COMPILE_WORKERS set %v: workers ran %v; log:\n%s", set, ran, log.buf.String())
		}
	}
}

// TestOrderHeaviestFirst: the workers meet the longest programs first, equals stay in the
// network's order, and each job keeps its layer.
func TestOrderHeaviestFirst(t *testing.T) {
	sources := []string{"aa", "aaaa", "a", "aaaa", "aaa"}
	var jobs []precompileJob
	var origin []*preparedLayer
	for i, s := range sources {
		jobs = append(jobs, precompileJob{Layer: string(rune('A' + i)), Plan: &builtinkernels.Plan{Source: s}})
		origin = append(origin, &preparedLayer{})
	}
	layerOf := map[*preparedLayer]string{}
	for i, p := range origin {
		layerOf[p] = jobs[i].Layer
	}
	orderHeaviestFirst(jobs, origin)
	var got []string
	for i, j := range jobs {
		got = append(got, j.Layer)
		if layerOf[origin[i]] != j.Layer {
			t.Errorf("job %d (layer %s) lost its layer: now %s's", i, j.Layer, layerOf[origin[i]])
		}
	}
	if want := []string{"B", "D", "E", "A", "C"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
