package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

func init() {
	register(command{name: "run", summary: "run a model once: inputs from .npy (or seeded random), outputs to .npy", run: runRun})
}

// engineFlags are the flags every command that opens an engine shares.
type engineFlags struct {
	model       *string
	weights     *string
	configs     stringList
	device      *string
	dumpKernels *string
	dumpTensors *string
	cacheDir    *string
	batch       *int
	queue       *string
	tune        *autoBool
	pinned      *autoBool
	copyInputs  *bool
	fuseFire    *bool
	arena       *autoBool
	split       *autoBool
	guard       *guardFlag
	precision   *precisionFlag
	quiet       *bool
	// inputShapes are the shapes of the -i files, for models with dynamic dimensions.
	inputShapes map[string][]int
	inputFiles  []string
}

func addEngineFlags(fs *flag.FlagSet, ef *engineFlags) {
	ef.model = fs.String("m", "", "model file (.clm, .json, .onnx, or an OpenVINO IR .xml with its .bin beside it)")
	ef.weights = fs.String("weights", "", "an OpenVINO IR's weights `file` (default: the .bin beside the -m .xml)")
	fs.Var(&ef.configs, "c", "custom-layer configuration XML (repeatable; later files replace earlier layers)")
	ef.device = fs.String("d", "", "device: cpu, gpu, an index from 'clhost devices', or part of its name (default: first GPU, else first CPU)")
	ef.dumpKernels = fs.String("dump-kernels", "", "write every compiled program to this folder")
	ef.dumpTensors = fs.String("dump-tensors", "", "write every tensor of the inference to this folder as .npy")
	ef.cacheDir = fs.String("cache-dir", defaultCacheDir(), "cache folder of compiled programs and tuning choices (\"\" to disable; see 'clhost cache info')")
	ef.batch = fs.Int("batch", 0, "batch size for models with a dynamic batch dimension (default: the model's, or 1)")
	ef.queue = fs.String("queue", "auto", "command queue: auto (out of order on CPUs, in order on GPUs), in-order or out-of-order")
	ef.tune = &autoBool{}
	fs.Var(ef.tune, "tune", "time the alternative kernel plans of layers without a stored choice at compile time and store the fastest in the cache folder (seconds per layer on a GPU; 'clhost tune' does it once ahead); default: take stored choices, else each op's own plan, timing nothing")
	ef.pinned = &autoBool{}
	fs.Var(ef.pinned, "pinned", "copy inputs and outputs through pinned host buffers; default: on for GPUs, off for CPUs")
	ef.copyInputs = fs.Bool("copy-inputs", false, "write each input into the network's own memory first; by default a CPU device's kernels read the inputs where they lie")
	ef.fuseFire = fs.Bool("fuse-fire", true, "run each fire module (squeeze, two expansions, Concat) as one layer on CPU devices; -fuse-fire=false keeps the four")
	ef.arena = &autoBool{}
	fs.Var(ef.arena, "arena", "activations at offsets of one arena buffer (least memory; the default) rather than a buffer per reuse slot (-arena=false)")
	ef.guard = &guardFlag{}
	fs.Var(ef.guard, "guard", "guard zone on each side of every tensor a custom kernel takes, checked after each inference (bytes, or with K or M; 0 or off: none); a guard is as large as its tensor where that is larger")
	ef.quiet = fs.Bool("quiet", false, "show no compile progress on stderr")
	ef.precision = addPrecisionFlag(fs)
	ef.split = &autoBool{}
	fs.Var(ef.split, "split-batch", "run each layer as two launches of half the batch whose kernels overlap (even batches); default: on for CPUs of 8 or more compute units at batches of 16 or more, in networks that are mostly one chain")
}

// autoBool is a boolean flag that also knows whether it was given at all.
type autoBool struct{ set, on bool }

func (b *autoBool) String() string {
	if b == nil || !b.set {
		return "auto"
	}
	return strconv.FormatBool(b.on)
}

func (b *autoBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	b.set, b.on = true, v
	return nil
}

// guardFlag is --guard: a size in bytes (K and M multiply by 1,024 and 1,024²), 0 or
// "off" for none; left out, the engine's default (host.DefaultGuardBytes).
type guardFlag struct{ bytes int }

func (g *guardFlag) String() string {
	switch {
	case g == nil || g.bytes == 0:
		return fmt.Sprintf("%dK", host.DefaultGuardBytes>>10)
	case g.bytes < 0:
		return "off"
	}
	return strconv.Itoa(g.bytes)
}

func (g *guardFlag) Set(s string) error {
	if s == "off" || s == "0" {
		g.bytes = -1
		return nil
	}
	unit := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		unit, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		unit, s = 1<<20, s[:len(s)-1]
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 1<<30/unit {
		return fmt.Errorf("want a size in bytes such as 65536, 64K or 1M, or off")
	}
	if v == 0 {
		g.bytes = -1
		return nil
	}
	g.bytes = v * unit
	return nil
}

// IsBoolFlag lets -tune stand alone for -tune=true.
func (b *autoBool) IsBoolFlag() bool { return true }

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "clhost", "programs")
	}
	return ""
}

// openEngine loads the model and opens an engine for it; stderr receives the notes.
func (ef *engineFlags) open(profile bool) (*host.Engine, *host.Network, error) {
	return ef.openWith(host.Options{Profile: profile})
}

// openWith is open with more engine options set by the command.
func (ef *engineFlags) openWith(o host.Options) (*host.Engine, *host.Network, error) {
	if *ef.model == "" {
		return nil, nil, usagef("missing -m MODEL")
	}
	if *ef.batch < 0 {
		return nil, nil, usagef("-batch %d: must be positive", *ef.batch)
	}
	o, err := ef.options(o)
	if err != nil {
		return nil, nil, err
	}
	var prog *compileProgress
	if !*ef.quiet && o.Progress == nil {
		prog = newCompileProgress(os.Stderr, stderrIsTerminal())
		o.Progress = prog.update
	}
	e, err := host.NewEngine(o)
	if err != nil {
		prog.finish()
		return nil, nil, err
	}
	// The model is read once the configurations are: a node a custom layer implements is
	// imported as written, for the user's kernel.
	m, err := host.LoadOptions{Batch: *ef.batch, InputShapes: ef.inputShapes, Layers: e.Layers, Log: o.Log, Weights: *ef.weights}.Load(*ef.model)
	if err != nil {
		prog.finish()
		e.Close()
		return nil, nil, ef.shapeHint(err, e.Layers)
	}
	n, err := e.Compile(m)
	prog.finish()
	if err != nil {
		e.Close()
		return nil, nil, fmt.Errorf("%s: %w", *ef.model, err)
	}
	return e, n, nil
}

// firstInferenceNote says, unless --quiet, when the first inference takes long; the
// returned function ends the wait.
func (ef *engineFlags) firstInferenceNote() func() {
	if *ef.quiet {
		return func() {}
	}
	return slowNote(os.Stderr, "first inference: the driver compiles each kernel at its first launch")
}

// options sets the engine options the flags give; a flag left out leaves its option at
// the zero value, whose Auto modes let the device decide.
func (ef *engineFlags) options(o host.Options) (host.Options, error) {
	o.Device, o.Configs = *ef.device, ef.configs
	o.DumpKernels, o.DumpTensors = *ef.dumpKernels, *ef.dumpTensors
	switch *ef.queue {
	case "auto":
		o.Queue = host.QueueAuto
	case "in-order":
		o.Queue = host.QueueInOrder
	case "out-of-order":
		o.Queue = host.QueueOutOfOrder
	default:
		return o, usagef("-queue %q: want auto, in-order or out-of-order", *ef.queue)
	}
	o.CacheDir, o.Log = *ef.cacheDir, os.Stderr
	o.Tune = mode(ef.tune, host.Auto, host.On, host.Off)
	o.Pinned = mode(ef.pinned, host.Auto, host.On, host.Off)
	o.CopyInputs = *ef.copyInputs
	o.KeepFires = !*ef.fuseFire
	o.SplitBatch = mode(ef.split, host.Auto, host.On, host.Off)
	o.Arena = mode(ef.arena, host.Auto, host.On, host.Off)
	o.GuardBytes = ef.guard.bytes
	o.Precision = ef.precision.p
	if exe, err := os.Executable(); err == nil {
		o.WorkerCommand = []string{exe, compileWorkerCommand}
	}
	return o, nil
}

// mode is the option value of an auto flag: auto when the flag is left out.
func mode[M any](b *autoBool, auto, on, off M) M {
	switch {
	case !b.set:
		return auto
	case b.on:
		return on
	}
	return off
}

func runRun(args []string) error {
	fs := newFlagSet("run")
	var ef engineFlags
	addEngineFlags(fs, &ef)
	var inputs stringList
	fs.Var(&inputs, "i", "input NAME=FILE.npy (repeatable; FILE.npy alone for a single-input model)")
	outDir := fs.String("o", "out", "folder for the outputs, written as <output name>.npy")
	var cf checkFlags
	addCheckFlags(fs, &cf)
	profile := fs.Bool("profile", false, "print the device time of every layer")
	seed := fs.Int64("seed", 1, "seed of the random data for inputs not given with -i")
	timeout := fs.Duration("timeout", time.Minute, "longest wait for the inference's kernels; past it the custom layer still running is named and run exits 1 (0: wait for ever)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *timeout < 0 {
		return usagef("-timeout %s: must not be negative", *timeout)
	}
	// Every form takes its shapes from the -i files: an ONNX model's or an IR's dynamic
	// dims, and the batch a native model (or an IR of a fixed batch) is rebatched to.
	if *ef.batch == 0 {
		shapes, err := inputFileShapes(inputs)
		if err != nil {
			return err
		}
		ef.inputShapes, ef.inputFiles = shapes, inputs
	}
	if err := checkOutDir(*outDir); err != nil {
		return err
	}
	if err := cf.readExpect(); err != nil {
		return err
	}
	e, n, err := ef.openWith(host.Options{Profile: *profile, KeepIntermediates: cf.any()})
	if err != nil {
		return configHint(err, ef.configs)
	}
	defer e.Close()
	if err := cf.openOther(ef); err != nil {
		return err
	}
	defer cf.close()
	for _, c := range n.CustomLayers() {
		fmt.Fprintf(os.Stderr, "clhost: custom layer %s runs on %s\n", c, e.Device().Name)
	}
	in, err := readInputs(n, *ef.model, inputs, *seed, os.Stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	var outs map[string]*host.Tensor
	var report *host.CheckReport
	stop := ef.firstInferenceNote()
	if cf.any() {
		outs, report, err = cf.run(ctx, n, in)
	} else {
		outs, err = n.Infer(ctx, in)
	}
	stop()
	if err != nil {
		return err
	}
	for _, o := range n.Outputs() {
		t := outs[o.Name]
		path := filepath.Join(*outDir, safeName(o.Name)+".npy")
		if err := tensorio.WriteFile(path, t.Shape, t.Data); err != nil {
			return err
		}
		fmt.Printf("output %s %v -> %s\n  %s\n", o.Name, t.Shape, path, summarize(t.Data))
	}
	if report != nil {
		if err := report.Write(os.Stdout); err != nil {
			return err
		}
		if report.Failed() {
			return errCheckFailed
		}
	}
	if *profile {
		printProfile(os.Stdout, n.Profile())
	}
	return nil
}

// inputFileShapes reads the shapes of the -i files (NAME=FILE, or FILE alone under "").
func inputFileShapes(specs []string) (map[string][]int, error) {
	shapes := map[string][]int{}
	for _, s := range specs {
		name, file, ok := strings.Cut(s, "=")
		if !ok {
			name, file = "", s
		}
		a, err := tensorio.ReadFile(file)
		if err != nil {
			if name == "" {
				return nil, fmt.Errorf("input: %w", err) // the model's one input, not known yet
			}
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		shapes[name] = a.Shape
	}
	return shapes, nil
}

// readInputs reads the -i files and fills the other inputs with seeded random data, or
// zeros for the integer inputs of the model file at path.
func readInputs(n *host.Network, path string, specs []string, seed int64, log io.Writer) (map[string]*host.Tensor, error) {
	want := n.Inputs()
	integerInputs := host.IntegerInputTypes(n.Model, path)
	in := map[string]*host.Tensor{}
	for _, s := range specs {
		name, file, ok := strings.Cut(s, "=")
		if !ok {
			if len(want) != 1 {
				return nil, usagef("-i %s: name the input (NAME=FILE.npy); the model has %d inputs", s, len(want))
			}
			name, file = want[0].Name, s
		}
		var shape []int
		found := false
		for _, w := range want {
			if w.Name == name {
				shape, found = w.Shape, true
			}
		}
		if !found {
			names := make([]string, len(want))
			for i, w := range want {
				names[i] = w.Name
			}
			return nil, usagef("-i %s: the model has no input %q (inputs: %s)", s, name, strings.Join(names, ", "))
		}
		a, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		if !slices.Equal(a.Shape, shape) {
			return nil, fmt.Errorf("input %q: %s has shape %v (%s), the model wants %v", name, file, a.Shape, a.DType, shape)
		}
		in[name] = &host.Tensor{Shape: a.Shape, Data: a.Data}
	}
	rng := rand.New(rand.NewSource(seed))
	for _, w := range want {
		if _, ok := in[w.Name]; ok {
			continue
		}
		data := make([]float32, elementsOf(w.Shape))
		if typ, ok := integerInputs[w.Name]; ok {
			// Integer inputs are mostly indices (token ids): zeros index any table, where
			// random values would fall outside it.
			fmt.Fprintf(log, "clhost: input %q %v: zeros (%s; give -i for real values)\n", w.Name, w.Shape, typ)
			in[w.Name] = &host.Tensor{Shape: w.Shape, Data: data}
			continue
		}
		for i := range data {
			data[i] = float32(rng.NormFloat64())
		}
		fmt.Fprintf(log, "clhost: input %q %v: random normal data (seed %d)\n", w.Name, w.Shape, seed)
		in[w.Name] = &host.Tensor{Shape: w.Shape, Data: data}
	}
	return in, nil
}

func printProfile(w io.Writer, prof []host.LayerTime) {
	var total uint64
	for _, p := range prof {
		total += p.DeviceNs
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "layer\ttype\tkernels\tdevice ms\tshare\tGFLOP/s")
	halves := false
	for _, p := range prof {
		typ := p.Type
		if p.Custom {
			typ += " (custom)"
		}
		if p.Halves {
			typ += " *"
			halves = true
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(p.DeviceNs) / float64(total)
		}
		rate := ""
		if p.Flops > 0 && p.DeviceNs > 0 {
			rate = fmt.Sprintf("%.0f", p.Flops/float64(p.DeviceNs))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.1f%%\t%s\n", p.Layer, typ, p.Kernels, float64(p.DeviceNs)/1e6, share, rate)
	}
	fmt.Fprintf(tw, "total\t\t\t%.3f\t\n", float64(total)/1e6)
	tw.Flush()
	if halves {
		fmt.Fprintln(w, "* ran as two launches of half the batch (--split-batch), which overlap each other and the layers around them: the device time adds both halves', so the total can exceed the span")
	}
	printTimeline(w, prof, total)
}

// printTimeline says how much of the inference's device span the kernels kept the
// device busy, and where it sat idle longest: a gap the next layer was enqueued into
// late is the host's enqueue cost, one it was queued well before is the device's own
// (a launch's start-up, a transfer in between).
func printTimeline(w io.Writer, prof []host.LayerTime, busy uint64) {
	var first, last uint64 = math.MaxUint64, 0
	for _, p := range prof {
		if p.EndNs > 0 {
			first, last = min(first, p.StartNs), max(last, p.EndNs)
		}
	}
	if last <= first {
		return
	}
	type gap struct {
		layer      string
		idle, late int64
	}
	var gaps []gap
	prevEnd := int64(-1)
	for _, p := range prof {
		if p.EndNs == 0 {
			continue
		}
		if prevEnd >= 0 && int64(p.StartNs) > prevEnd {
			gaps = append(gaps, gap{p.Layer, int64(p.StartNs) - prevEnd, int64(p.QueuedNs) - prevEnd})
		}
		prevEnd = max(prevEnd, int64(p.EndNs))
	}
	span := last - first
	fmt.Fprintf(w, "device span %.3f ms, busy %.3f ms (%.0f%%)\n", float64(span)/1e6, float64(busy)/1e6, 100*float64(busy)/float64(span))
	sort.Slice(gaps, func(i, j int) bool { return gaps[i].idle > gaps[j].idle })
	for _, g := range gaps[:min(5, len(gaps))] {
		how := "queued in time: the device's own delay, such as a kernel's first launch"
		if g.late > 0 {
			how = fmt.Sprintf("enqueued %s after the device went idle", fitNs(g.late))
		}
		fmt.Fprintf(w, "  idle %s before %s (%s)\n", fitNs(g.idle), g.layer, how)
	}
}

func summarize(d []float32) string {
	if len(d) == 0 {
		return "empty"
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range d {
		f := float64(v)
		lo, hi, sum = math.Min(lo, f), math.Max(hi, f), sum+f
	}
	head := d[:min(5, len(d))]
	parts := make([]string, len(head))
	for i, v := range head {
		parts[i] = fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("min %.4g max %.4g mean %.4g first [%s]", lo, hi, sum/float64(len(d)), strings.Join(parts, " "))
}

func safeName(s string) string {
	r := strings.NewReplacer("/", "_", "\\", "_", ":", "_", " ", "_")
	s = r.Replace(s)
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

func elementsOf(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// fitNs prints a span of nanoseconds in the unit that fits it (µs, ms or s), so a
// first launch's 0.64 s reads as 642.4 ms, not 642353.7 µs.
func fitNs(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
}
