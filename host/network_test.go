package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/model"
)

func newTestEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.Device == "" && opts.device == nil {
		opts.Device = testDeviceSpec()
	}
	e, err := NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func randomTensor(rng *rand.Rand, shape ...int) *Tensor {
	d := make([]float32, elements(shape))
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return &Tensor{Shape: shape, Data: d}
}

// diamond: x → a (Relu), x → b (Sigmoid), a+b → c (Add), c → three consumers d, e, f,
// outputs e and f... and the Add joins the branches.
func diamondModel(t testing.TB) *model.Model {
	b := model.NewBuilder("diamond")
	x := b.Input("x", model.Float32, 2, 3, 5, 7)
	a := b.Layer("Relu", "a", []string{x})
	s := b.Layer("Sigmoid", "b", []string{x})
	c := b.Layer("Add", "c", []string{a, s})
	d := b.Layer("Relu", "d", []string{c})
	e := b.Layer("LeakyRelu", "e", []string{c}, model.FloatAttr("alpha", 0.2))
	f := b.Layer("Mul", "f", []string{c, d})
	b.Output(e, f)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sigmoid(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) }

func TestDiamondLevelsWaitListsAndResults(t *testing.T) {
	e := newTestEngine(t, Options{})
	n, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	levels := n.levelNames()
	want := [][]string{{"a", "b"}, {"c"}, {"d", "e"}, {"f"}}
	if fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
	steps := n.stepWaits()
	wantSteps := []string{"a<-", "b<-", "c<-a,b", "d<-c", "e<-c", "f<-c,d"}
	if !slices.Equal(steps, wantSteps) {
		t.Errorf("wait lists %v, want %v", steps, wantSteps)
	}
	rng := rand.New(rand.NewSource(3))
	x := randomTensor(rng, 2, 3, 5, 7)
	out, err := n.Infer(context.Background(), map[string]*Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("%d outputs, want 2", len(out))
	}
	for i, v := range x.Data {
		c := max(v, 0) + sigmoid(v)
		wantE := c
		if c < 0 {
			wantE = 0.2 * c
		}
		wantF := c * max(c, 0)
		if d := math.Abs(float64(out["e"].Data[i] - wantE)); d > 1e-5 {
			t.Fatalf("e[%d] = %v, want %v", i, out["e"].Data[i], wantE)
		}
		if d := math.Abs(float64(out["f"].Data[i] - wantF)); d > 1e-5 {
			t.Fatalf("f[%d] = %v, want %v", i, out["f"].Data[i], wantF)
		}
	}
}

func TestInputErrors(t *testing.T) {
	e := newTestEngine(t, Options{})
	n, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := map[string]map[string]*Tensor{
		`input "x" [2 3 5 7] is missing`:   {},
		`input "x" has shape [1 3 5 7]`:    {"x": {Shape: []int{1, 3, 5, 7}, Data: make([]float32, 105)}},
		`input "x" has 3 values for shape`: {"x": {Shape: []int{2, 3, 5, 7}, Data: make([]float32, 3)}},
		`"y" is not an input of the model`: {"x": {Shape: []int{2, 3, 5, 7}, Data: make([]float32, 210)}, "y": {}},
	}
	for want, in := range cases {
		if _, err := n.Infer(ctx, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}

func TestUnknownLayerTypesListedAtOnce(t *testing.T) {
	b := model.NewBuilder("unknown")
	x := b.Input("x", model.Float32, 1, 4)
	y := b.Tensor("y", model.Float32, 1, 4)
	b.LayerOutputs("Frobnicate", "f1", []string{x}, []string{y})
	z := b.Tensor("z", model.Float32, 1, 4)
	b.LayerOutputs("Twiddle", "t1", []string{y}, []string{z})
	b.Output(z)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{})
	_, err = e.Compile(m)
	for _, want := range []string{
		`no implementation for layer type "Frobnicate" (layer "f1"): neither a built-in layer nor a loaded custom-layer configuration defines it`,
		`no implementation for layer type "Twiddle" (layer "t1")`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// TestConcurrentInferIsSerialAndIdentical: 32 goroutines share one Network; each result
// must be bit-identical to the serial run of the same input (run with -race in CI).
func TestConcurrentInferIsSerialAndIdentical(t *testing.T) {
	e := newTestEngine(t, Options{})
	n, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	const workers = 32
	rng := rand.New(rand.NewSource(9))
	inputs := make([]*Tensor, workers)
	serial := make([]map[string]*Tensor, workers)
	for i := range inputs {
		inputs[i] = randomTensor(rng, 2, 3, 5, 7)
		if serial[i], err = n.Infer(context.Background(), map[string]*Tensor{"x": inputs[i]}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for rep := 0; rep < 3; rep++ {
				out, err := n.Infer(context.Background(), map[string]*Tensor{"x": inputs[w]})
				if err != nil {
					errs <- err
					return
				}
				for name, o := range out {
					for i, v := range o.Data {
						if math.Float32bits(v) != math.Float32bits(serial[w][name].Data[i]) {
							errs <- fmt.Errorf("worker %d output %s[%d]: %v vs serial %v", w, name, i, v, serial[w][name].Data[i])
							return
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// InferAsync gives the same answer.
	p := n.InferAsync(context.Background(), map[string]*Tensor{"x": inputs[0]})
	out, err := p.Wait()
	if err != nil || math.Float32bits(out["e"].Data[5]) != math.Float32bits(serial[0]["e"].Data[5]) {
		t.Errorf("InferAsync: %v", err)
	}
}

// TestResourceHygiene: many inferences leave the number of live OpenCL objects and the
// Go heap flat; closing the engine releases every object it created.
func TestResourceHygiene(t *testing.T) {
	base := cl.LiveObjects()
	e, err := NewEngine(Options{Device: testDeviceSpec(), NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(1)), 2, 3, 5, 7)}
	ctx := context.Background()
	run := func(k int) {
		for i := 0; i < k; i++ {
			if _, err := n.Infer(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(200)
	afterWarm := cl.LiveObjects()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapInuse
	run(10000)
	if got := cl.LiveObjects(); got != afterWarm {
		t.Errorf("live OpenCL objects went from %d to %d over 10000 inferences", afterWarm, got)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grow := int64(ms.HeapInuse) - int64(heap0); grow > 4<<20 {
		t.Errorf("heap grew by %d bytes over 10000 inferences", grow)
	}
	e.Close()
	e.Close()
	if got := cl.LiveObjects(); got != base {
		t.Errorf("after Close: %d live OpenCL objects, want %d", got, base)
	}
	if _, err := n.Infer(ctx, in); err == nil {
		t.Error("Infer after Close succeeded")
	}
}

// TestDeviceFaultsAreRecoverable: a model too large for the device, a custom kernel
// that fails to build and one whose work-group the device cannot run each end in an
// error naming the layer, and the engine then runs a sane model.
func TestDeviceFaultsAreRecoverable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.cl", "__kernel void bad(__global const float* a, __global float* b) { b[0] = a[0] +; }\n")
	writeFile(t, dir, "big.cl", "__kernel void big(__global const float* a, __global float* b) { int i = get_global_id(0); b[i] = a[i]; }\n")
	writeFile(t, dir, "faults.xml", `<CustomLayers>
<CustomLayer name="BadBuild" type="SimpleGPU" version="1">
  <Kernel entry="bad"><Source filename="bad.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
</CustomLayer>
<CustomLayer name="HugeGroup" type="SimpleGPU" version="1">
  <Kernel entry="big"><Source filename="big.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
  <WorkSizes global="B*F*Y*X*1024" local="B*F*Y*X*1024"/>
</CustomLayer>
</CustomLayers>`)
	e := newTestEngine(t, Options{Configs: []string{dir + "/faults.xml"}, Log: io.Discard})
	oneLayer := func(typ string, shape ...int) *model.Model {
		b := model.NewBuilder(typ)
		x := b.Input("x", model.Float32, shape...)
		y := b.Tensor("y", model.Float32, shape...)
		b.LayerOutputs(typ, "the_"+typ, []string{x}, []string{y})
		b.Output(y)
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := cl.LiveObjects()
	// Too large: one tensor past the device's largest allocation (named: the input, or the
	// output where the input is borrowed from the caller).
	cols := int(e.device.MaxAllocBytes/4/1024) + 1
	if _, err := e.Compile(oneLayer("Relu", 1024, cols)); err == nil || !strings.Contains(err.Error(), `"x"`) && !strings.Contains(err.Error(), `"y"`) && !strings.Contains(err.Error(), `"the_Relu"`) {
		t.Errorf("oversized model: %v", err)
	}
	if _, err := e.Compile(oneLayer("BadBuild", 1, 8)); err == nil || !strings.Contains(err.Error(), `layer "the_BadBuild"`) || !strings.Contains(err.Error(), "bad.cl:1") {
		t.Errorf("build failure: %v", err)
	}
	if got := cl.LiveObjects(); got != before {
		t.Errorf("failed compiles leaked %d OpenCL objects", got-before)
	}
	// A work-group larger than the kernel runs with is refused when the network
	// compiles, with the limit, rather than by the driver at the launch.
	if _, err := e.Compile(oneLayer("HugeGroup", 1, 8)); err == nil || !strings.Contains(err.Error(), `layer "the_HugeGroup"`) || !strings.Contains(err.Error(), "CL_KERNEL_WORK_GROUP_SIZE") {
		t.Errorf("work-group too large: %v", err)
	}
	good, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Infer(context.Background(), map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(2)), 2, 3, 5, 7)}); err != nil {
		t.Fatalf("inference after faults: %v", err)
	}
}

// TestMemoryPlanChain: a chain of ten layers needs two activation buffers besides the
// input, and the results match the plain computation.
func TestMemoryPlanChain(t *testing.T) {
	b := model.NewBuilder("chain")
	x := b.Input("x", model.Float32, 1, 4, 8, 8)
	y := x
	for i := 0; i < 10; i++ {
		y = b.Layer("LeakyRelu", fmt.Sprintf("r%d", i), []string{y}, model.FloatAttr("alpha", 0.5))
	}
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// The arena (one buffer, each tensor at its planned offset) and reuse slots (a
	// buffer each) plan the same two tensors' worth here, on both kinds of queue.
	for _, o := range []Options{{Arena: On}, {Arena: Off}, {Arena: Off, Queue: QueueInOrder}} {
		t.Run(fmt.Sprintf("arena%d_queue%d", o.Arena, o.Queue), func(t *testing.T) {
			e := newTestEngine(t, o)
			n, err := e.Compile(m)
			if err != nil {
				t.Fatal(err)
			}
			arena := o.Arena == On
			if shared := n.slotBuf["r0"] == n.slotBuf["r1"]; shared != arena {
				t.Errorf("arena %v: r0 and r1, alive together, in one buffer object: %v", o.Arena, shared)
			}
			if n.slotBuf["r0"] != n.slotBuf["r2"] || n.slotOff["r0"] != n.slotOff["r2"] {
				t.Errorf("arena %v: r2 does not reuse r0's memory", o.Arena)
			}
			if arena && n.slotOff["r0"] == n.slotOff["r1"] {
				t.Errorf("r0 and r1 at the same arena offset %d", n.slotOff["r0"])
			}
			tensor := int64(4 * 4 * 8 * 8)
			inputs := tensor // the input is borrowed from the caller where the device is a CPU
			if n.borrowed != nil {
				inputs = 0
			}
			if n.SumBytes != 10*tensor+inputs || n.PlannedBytes != 2*tensor || n.PeakLiveBytes != 2*tensor {
				t.Errorf("arena %v: sum %d planned %d peak %d bytes; want %d, %d, %d", o.Arena, n.SumBytes, n.PlannedBytes, n.PeakLiveBytes, 10*tensor+inputs, 2*tensor, 2*tensor)
			}
			for rep := 0; rep < 2; rep++ { // the second run starts with dirty reused buffers
				checkLeakyChain(t, n, 10, 4, 1, 4, 8, 8)
			}
		})
	}
}

// checkLeakyChain runs a chain of depth LeakyRelu layers of alpha 0.5 (r0 … r<depth-1>)
// on seeded random input of the given shape and checks the last output.
func checkLeakyChain(t *testing.T, n *Network, depth int, seed int64, shape ...int) {
	t.Helper()
	in := randomTensor(rand.New(rand.NewSource(seed)), shape...)
	out, err := n.Infer(context.Background(), map[string]*Tensor{"x": in})
	if err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("r%d", depth-1)
	for i, v := range in.Data {
		want := v
		if v < 0 {
			want = v * float32(math.Pow(0.5, float64(depth)))
		}
		if d := math.Abs(float64(out[last].Data[i] - want)); d > 1e-6 {
			t.Fatalf("out[%d] = %v, want %v", i, out[last].Data[i], want)
		}
	}
}

// TestBinaryCacheWarmAndDumpStable: a second engine loads every program from the binary
// cache, a corrupt entry is rebuilt rather than fatal, and the kernel dump reads the same
// whether programs were compiled or loaded.
func TestBinaryCacheWarmAndDumpStable(t *testing.T) {
	cache, dump := t.TempDir(), t.TempDir()
	var logs strings.Builder
	compile := func() *Network {
		e := newTestEngine(t, Options{CacheDir: cache, Binaries: On, DumpKernels: dump, Log: &logs, NoGlobalConfig: true})
		n, err := e.Compile(diamondModel(t))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	compile()
	first := logs.String()
	if !strings.Contains(first, "kernel dump: wrote") {
		t.Fatalf("first compile wrote no dump: %s", first)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	if len(entries) == 0 {
		t.Fatal("no cache entries written")
	}
	logs.Reset()
	n := compile()
	if strings.Contains(logs.String(), "kernel dump: wrote") {
		t.Errorf("a compile from the cache rewrote the dump: %s", logs.String())
	}
	for _, p := range n.progs {
		if !p.fromCache {
			t.Errorf("program %s was rebuilt, not loaded from the cache", p.layerType)
		}
	}
	// Corrupt every entry: the next engine rebuilds and still runs.
	for _, e := range entries {
		if err := os.WriteFile(e, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n = compile()
	if _, err := n.Infer(context.Background(), map[string]*Tensor{"x": randomTensor(rand.New(rand.NewSource(5)), 2, 3, 5, 7)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range n.progs {
		if p.fromCache {
			t.Errorf("program %s claims the corrupt cache entry", p.layerType)
		}
	}
}

// TestCheckEveryLayer: --check compares every built-in layer on the device's own inputs, and
// the whole network against the CPU path.
func TestCheckEveryLayer(t *testing.T) {
	e := newTestEngine(t, Options{KeepIntermediates: true, NoGlobalConfig: true})
	n, err := e.Compile(diamondModel(t))
	if err != nil {
		t.Fatal(err)
	}
	x := randomTensor(rand.New(rand.NewSource(8)), 2, 3, 5, 7)
	r, _, err := n.Check(context.Background(), map[string]*Tensor{"x": x}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compared := slices.Clone(r.Outputs)
	for _, l := range r.Layers {
		compared = append(compared, l.Reference...)
	}
	if len(r.Outputs) != 2 || len(compared) != 2+6 {
		t.Fatalf("%d output reports and %d layer reports, want 2 and 6", len(r.Outputs), len(compared)-len(r.Outputs))
	}
	for _, o := range compared {
		if o.MaxAbs > 1e-5 {
			t.Errorf("%s: max abs error %g", o.Output, o.MaxAbs)
		}
	}
}

// TestArenaFallback: built-in kernels take arena tensors at an offset, and a custom
// kernel takes its tensors as sub-buffers of the arena. When the driver refuses those,
// every activation gets a buffer of its own and results hold. The refusal is forced first
// (any driver), then asked of the driver itself with offsets finer than the device's real
// alignment: PoCL refuses them, NVIDIA's driver accepts them, and either way the results
// must hold.
func TestArenaFallback(t *testing.T) {
	// x (1×3×5×7: 420 bytes, so offsets are not multiples of 128) → LeakyRelu → the
	// custom AffineAny → LeakyRelu → LeakyRelu: the custom layer's input and output sit
	// at nonzero offsets of the arena.
	shape := []int{1, 3, 5, 7}
	oddChain := func() *model.Model {
		b := model.NewBuilder("odd")
		y := b.Input("x", model.Float32, shape...)
		y = b.Layer("LeakyRelu", "r0", []string{y}, model.FloatAttr("alpha", 0.5))
		a := b.Tensor("aff", model.Float32, shape...)
		b.LayerOutputs("AffineAny", "aff", []string{y}, []string{a}, model.FloatAttr("alpha", 2), model.FloatAttr("beta", -0.25))
		y = a
		for i := 2; i < 4; i++ {
			y = b.Layer("LeakyRelu", fmt.Sprintf("r%d", i), []string{y}, model.FloatAttr("alpha", 0.5))
		}
		b.Output(y)
		return ctBuild(t, b)
	}
	opts := func(log *strings.Builder) Options {
		return Options{NoGlobalConfig: true, Log: log, Arena: On, Configs: []string{ctPath(t, "any.xml")}}
	}
	check := func(n *Network) {
		t.Helper()
		in := randomTensor(rand.New(rand.NewSource(6)), shape...)
		out, err := n.Infer(context.Background(), map[string]*Tensor{"x": in})
		if err != nil {
			t.Fatal(err)
		}
		leaky := func(v float32) float32 {
			if v < 0 {
				return v / 2
			}
			return v
		}
		for i, v := range in.Data {
			want := leaky(leaky(2*leaky(v) - 0.25))
			if d := math.Abs(float64(out["r3"].Data[i] - want)); d > 1e-6 {
				t.Fatalf("out[%d] = %v, want %v", i, out["r3"].Data[i], want)
			}
		}
	}

	var plainLog strings.Builder
	n, err := newTestEngine(t, opts(&plainLog)).Compile(oddChain())
	if err != nil {
		t.Fatal(err)
	}
	if n.slotOff["r0"] == 0 && n.slotOff["aff"] == 0 {
		t.Fatal("the custom layer's input and output both lie at the arena's start: nothing to test")
	}
	for _, name := range []string{"r0", "aff"} {
		if (n.slotOff[name] != 0) != (n.slotView[name] != nil) {
			t.Errorf("%s at element offset %d: has a view of its own: %v", name, n.slotOff[name], n.slotView[name] != nil)
		}
	}
	if n.slotView["r2"] != nil {
		t.Error("r2, which only built-in layers touch, got a sub-buffer")
	}
	check(n)

	var forcedLog strings.Builder
	forced := newTestEngine(t, opts(&forcedLog))
	forced.subBuffer = func(*cl.Buffer, int, int) (*cl.Buffer, error) {
		return nil, &cl.Error{Call: "clCreateSubBuffer", Code: cl.CodeInvalidValue}
	}
	if n, err = forced.Compile(oddChain()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(forcedLog.String(), "sub-buffers refused") {
		t.Fatalf("no fallback happened; log:\n%s", forcedLog.String())
	}
	check(n)

	var logs strings.Builder
	e := newTestEngine(t, opts(&logs))
	if e.device.BaseAlignBytes <= 64 {
		t.Fatalf("device alignment %d leaves no offset finer than the arena's 64 bytes to try", e.device.BaseAlignBytes)
	}
	e.device.BaseAlignBytes = 4
	if n, err = e.Compile(oddChain()); err != nil {
		t.Fatal(err)
	}
	check(n)
	t.Logf("misaligned sub-buffers refused by the driver: %v", strings.Contains(logs.String(), "sub-buffers refused"))
}

// TestPackedWeightsOnce: on a CPU device a conv's weights are packed once when the
// network compiles, the unpacked device copy is freed when nothing else reads it, and a
// weight tensor two convs share stays. GPU conv plans pack nothing, so there every
// weight keeps its device copy. Results are checked against the reference on both.
func TestPackedWeightsOnce(t *testing.T) {
	e := newTestEngine(t, Options{NoGlobalConfig: true})
	packs := !e.device.IsGPU()
	ws := []int{4, 8, 3, 3}
	w := ctRandSlice(40, elements(ws), -0.5, 0.5)
	b := model.NewBuilder("packed")
	x := b.Input("x", model.Float32, 1, 8, 6, 6)
	own := b.ConstFloat32("own.weight", ws, w)
	shared := b.ConstFloat32("shared.weight", []int{4, 4, 1, 1}, ctRandSlice(41, 16, -0.5, 0.5))
	c1 := b.Layer("Conv", "c1", []string{x, own}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	c2 := b.Layer("Conv", "c2", []string{c1, shared}, model.IntsAttr("kernel_shape", 1, 1))
	c3 := b.Layer("Conv", "c3", []string{c2, shared}, model.IntsAttr("kernel_shape", 1, 1))
	b.Output(c3)
	n, err := e.Compile(ctBuild(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := n.tensors["own.weight"]; kept == packs {
		t.Errorf("device copy of own.weight kept: %v, on a device whose conv plans pack weights: %v", kept, packs)
	}
	if _, kept := n.tensors["shared.weight"]; !kept {
		t.Error("shared.weight, read by two layers, was freed")
	}
	in := ctRand(42, 1, 8, 6, 6)
	r, _, err := n.Check(context.Background(), map[string]*Tensor{"x": in}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Outputs) == 0 {
		t.Fatal("no output compared")
	}
	for _, o := range r.Outputs {
		if o.MaxAbs > 1e-4 {
			t.Errorf("output %s differs from the reference by %g", o.Output, o.MaxAbs)
		}
	}
	for _, l := range r.Layers {
		for _, o := range l.Reference {
			if o.MaxAbs > 1e-4 {
				t.Errorf("layer %s differs from its reference by %g", l.Layer, o.MaxAbs)
			}
		}
	}
}

// TestSetupEveryInference: when a conv's weights are a graph input rather than a
// constant, its packing runs before the conv at every inference, so new weights give
// new results.
func TestSetupEveryInference(t *testing.T) {
	e := newTestEngine(t, Options{NoGlobalConfig: true})
	xs, ws := []int{1, 3, 5, 5}, []int{4, 3, 3, 3}
	b := model.NewBuilder("dynamic-weights")
	x := b.Input("x", model.Float32, xs...)
	w := b.Input("w", model.Float32, ws...)
	y := b.Layer("Conv", "c", []string{x, w}, model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	b.Output(y)
	n, err := e.Compile(ctBuild(t, b))
	if err != nil {
		t.Fatal(err)
	}
	in := ctRand(50, xs...)
	for i, seed := range []uint64{51, 52} {
		wt := ctRand(seed, ws...)
		out, err := n.Infer(context.Background(), map[string]*Tensor{"x": in, "w": wt})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ctConv(in.Data, xs, wt.Data, ws, make([]float32, ws[0]), 1, 1)
		for j, v := range out[y].Data {
			if d := math.Abs(float64(v - want[j])); d > 1e-4 {
				t.Fatalf("inference %d: out[%d] = %v, want %v", i, j, v, want[j])
			}
		}
	}
}

// TestBuildWarningsLogged checks that a custom kernel's compiler warnings reach the log
// with the layer type, file and line: some compilers print only "1 warning generated."
// to stderr themselves. The warning comes from a #warning directive, which every OpenCL
// compiler reports (PoCL in its log twice, from preprocessing and compiling): it is
// shown once.
func TestBuildWarningsLogged(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "warn.cl", "#warning clhost-test-warning\n__kernel void warn(__global const float* x, __global float* y) { size_t i = get_global_id(0); y[i] = x[i]; }\n")
	writeFile(t, dir, "warn.xml", `<CustomLayers>
<CustomLayer name="Warns" type="SimpleGPU" version="1">
  <Kernel entry="warn"><Source filename="warn.cl"/></Kernel>
  <Buffers><Tensor arg-index="0" type="input" port-index="0"/><Tensor arg-index="1" type="output" port-index="0"/></Buffers>
  <WorkSizes global="B*F*Y*X"/>
</CustomLayer>
</CustomLayers>`)
	var log bytes.Buffer
	e := newTestEngine(t, Options{Configs: []string{dir + "/warn.xml"}, Log: &log, NoGlobalConfig: true})
	b := model.NewBuilder("warns")
	x := b.Input("x", model.Float32, 1, 8)
	y := b.Tensor("y", model.Float32, 1, 8)
	b.LayerOutputs("Warns", "w", []string{x}, []string{y})
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	got := log.String()
	if !strings.Contains(got, "Warns: the OpenCL compiler warns:") || !strings.Contains(got, "clhost-test-warning") || !strings.Contains(got, "warn.cl:1") {
		t.Errorf("log does not show the warning with its layer type, file and line:\n%s", got)
	}
	if n := strings.Count(got, "clhost-test-warning"); n != 1 {
		t.Errorf("the warning is shown %d times, want once:\n%s", n, got)
	}
}
