package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clhost/clhost/host"
)

func init() {
	register(command{name: "bench", summary: "measure throughput, latency percentiles and per-layer device time", run: runBench})
}

// benchResult is what `clhost bench --json` prints. FirstRunMs is a whole `clhost run`
// of the model with empty caches (--first-run); PeakTFLOPS the device's dense peak at
// the precision (bench_peak.go), where the device is in the table.
type benchResult struct {
	Model         string         `json:"model"`
	Device        string         `json:"device"`
	Precision     string         `json:"precision"`
	PeakTFLOPS    float64        `json:"peak_tflops,omitempty"`
	Batch         int            `json:"batch"`
	Inferences    int            `json:"inferences"`
	Interrupted   bool           `json:"interrupted,omitempty"`
	CompileMs     float64        `json:"compile_ms"`
	FirstRunMs    float64        `json:"first_run_ms,omitempty"`
	ThroughputIPS float64        `json:"inferences_per_s"`
	ItemsPerS     float64        `json:"items_per_s"`
	MeanMs        float64        `json:"mean_ms"`
	P50Ms         float64        `json:"p50_ms"`
	P90Ms         float64        `json:"p90_ms"`
	P99Ms         float64        `json:"p99_ms"`
	MinMs         float64        `json:"min_ms"`
	PlannedBytes  int64          `json:"activation_bytes_planned"`
	SumBytes      int64          `json:"activation_bytes_sum"`
	PeakLiveBytes int64          `json:"activation_bytes_peak_live"`
	Layers        []benchLayer   `json:"layers,omitempty"`
	Against       *againstResult `json:"against,omitempty"`
}

// againstResult is the second engine of `bench --against`, timed in alternation with
// the first.
type againstResult struct {
	Flags string  `json:"flags"`
	P50Ms float64 `json:"p50_ms"`
	MinMs float64 `json:"min_ms"`
	// FasterPairs counts the pairs of consecutive inferences in which the first engine
	// (the command's own flags) was the faster.
	FasterPairs int `json:"faster_pairs"`
	Pairs       int `json:"pairs"`
}

// compareAgainst summarises the second engine's latencies against the first's, pair by
// pair: on a machine whose speed drifts, the share of pairs won says more than the
// medians of two separate runs.
func compareAgainst(flags string, first, second []time.Duration) *againstResult {
	r := &againstResult{Flags: flags, Pairs: min(len(first), len(second))}
	for i := range r.Pairs {
		if first[i] < second[i] {
			r.FasterPairs++
		}
	}
	if len(second) > 0 {
		sorted := slices.Clone(second)
		slices.Sort(sorted)
		r.P50Ms, r.MinMs = ms(percentile(sorted, 50)), ms(sorted[0])
	}
	return r
}

// benchFlags are bench's flags.
type benchFlags struct {
	ef                   engineFlags
	n, warmup, layerRuns *int
	asJSON, layers       *bool
	seed                 *int64
	against              *string
	firstRun             *autoBool
	remote               remoteFlags
}

func newBenchFlags() (*flag.FlagSet, *benchFlags) {
	fs := newFlagSet("bench")
	f := &benchFlags{}
	addEngineFlags(fs, &f.ef)
	f.n = fs.Int("n", 100, "number of timed inferences")
	f.warmup = fs.Int("warmup", 10, "untimed inferences first")
	f.asJSON = fs.Bool("json", false, "print the result as JSON")
	f.layers = fs.Bool("layers", true, "also measure per-layer device time (a second, profiled pass)")
	f.layerRuns = fs.Int("layer-runs", 10, "profiled inferences whose per-layer median device time is reported")
	f.seed = fs.Int64("seed", 1, "seed of the random inputs")
	f.firstRun = &autoBool{}
	fs.Var(f.firstRun, "first-run", "also time a first run: 'clhost run' of the model in a child process with empty caches (clhost's, PoCL's, NVIDIA's), reported as first_run_ms; default: with -json")
	f.against = fs.String("against", "", "flags of a second engine (\"--split-batch=false\"), replacing these: both are timed in alternating inferences and compared pair by pair")
	f.remote = addRemoteFlags(fs)
	return fs, f
}

func runBench(args []string) error {
	fs, f := newBenchFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	ef, n, warmup, layers, layerRuns, asJSON, seed := f.ef, f.n, f.warmup, f.layers, f.layerRuns, f.asJSON, f.seed
	if *n <= 0 || *warmup < 0 || *layerRuns <= 0 {
		return usagef("-n and -layer-runs must be positive and -warmup not negative")
	}
	if *f.remote.url != "" {
		return runRemoteBench(f)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var firstRun time.Duration
	if f.firstRun.on || !f.firstRun.set && *asJSON {
		// Before any engine here compiles, so that the child has the machine to itself.
		if !*ef.quiet {
			fmt.Fprintln(os.Stderr, "clhost: timing a first run with empty caches")
		}
		var err error
		if firstRun, err = measureFirstRun(fs, &ef); err != nil {
			return err
		}
	}
	var other *host.Network
	if *f.against != "" {
		// The second engine's flags are these followed by --against's: a later flag
		// replaces an earlier one (a -c adds a config).
		afs, af := newBenchFlags()
		if err := parseFlags(afs, append(slices.Clone(args), strings.Fields(*f.against)...)); err != nil {
			return usagef("-against %q: %v", *f.against, err)
		}
		if afs.NArg() > 0 || *af.against != *f.against || *af.n != *n || *af.warmup != *warmup || *af.asJSON != *asJSON ||
			*af.layers != *layers || *af.layerRuns != *layerRuns || *af.seed != *seed || af.firstRun.String() != f.firstRun.String() {
			return usagef("-against %q: engine flags only (the timing flags are the run's)", *f.against)
		}
		ae, anet, err := af.ef.open(false)
		if err != nil {
			return fmt.Errorf("-against %q: %w", *f.against, err)
		}
		defer ae.Close()
		other = anet
	}

	t0 := time.Now()
	e, net, err := ef.open(false)
	if err != nil {
		return err
	}
	defer e.Close()
	res := benchResult{Model: *ef.model, Device: e.Device().Name, Precision: e.Precision().String(), CompileMs: ms(time.Since(t0)), FirstRunMs: ms(firstRun),
		PlannedBytes: net.PlannedBytes, SumBytes: net.SumBytes, PeakLiveBytes: net.PeakLiveBytes}
	peak, peakOf := peakFor(res.Device, e.Precision())
	res.PeakTFLOPS = peak
	in := randomInputs(net, *seed)
	if ins := net.Inputs(); len(ins) > 0 && len(ins[0].Shape) > 0 {
		res.Batch = ins[0].Shape[0]
	}
	var otherIn map[string]*host.Tensor
	var otherLat []time.Duration
	if other != nil {
		otherIn = randomInputs(other, *seed)
	}
	bar := newProgress(*warmup + *n)
	for i := 0; i < *warmup; i++ {
		if ctx.Err() != nil {
			break
		}
		stop := func() {}
		if i == 0 {
			stop = ef.firstInferenceNote()
		}
		_, err := net.Infer(ctx, in)
		stop()
		if err != nil {
			return interrupted(err)
		}
		if other != nil {
			if _, err := other.Infer(ctx, otherIn); err != nil {
				return interrupted(err)
			}
		}
		bar.step()
	}
	lat := make([]time.Duration, 0, *n)
	fmt.Fprintf(os.Stderr, "clhost: timing %d inferences (Ctrl-C stops early and reports what ran)\n", *n)
	start := time.Now()
	for i := 0; i < *n; i++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		t := time.Now()
		if _, err := net.Infer(ctx, in); err != nil {
			if errors.Is(err, context.Canceled) {
				res.Interrupted = true
				break
			}
			return err
		}
		lat = append(lat, time.Since(t))
		if other != nil {
			// Alternating, both engines meet the machine in the same phases.
			t := time.Now()
			if _, err := other.Infer(ctx, otherIn); err != nil {
				if errors.Is(err, context.Canceled) {
					res.Interrupted = true
					lat = lat[:len(lat)-1]
					break
				}
				return err
			}
			otherLat = append(otherLat, time.Since(t))
		}
		bar.step()
	}
	wall := time.Since(start)
	bar.done()
	if len(lat) == 0 {
		return errors.New("interrupted before any timed inference")
	}
	res.Inferences = len(lat)
	if other != nil {
		wall = 0 // the other engine's inferences ran in between
		for _, d := range lat {
			wall += d
		}
		res.Against = compareAgainst(*f.against, lat, otherLat)
	}
	res.ThroughputIPS = float64(len(lat)) / wall.Seconds()
	res.ItemsPerS = res.ThroughputIPS * float64(max(res.Batch, 1))
	sorted := append([]time.Duration(nil), lat...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	res.MeanMs = ms(sum / time.Duration(len(sorted)))
	res.P50Ms, res.P90Ms, res.P99Ms = ms(percentile(sorted, 50)), ms(percentile(sorted, 90)), ms(percentile(sorted, 99))
	res.MinMs = ms(sorted[0])

	if *layers && !res.Interrupted {
		e.Close()
		pe, pnet, err := ef.open(true)
		if err != nil {
			return err
		}
		defer pe.Close()
		// The first profiled inferences warm the new engine's buffers; a single profile
		// then varies by tens of percent per layer on a shared machine, so each layer
		// reports its median over layerRuns inferences.
		var runs [][]host.LayerTime
		for i := 0; i < 2+*layerRuns && ctx.Err() == nil; i++ {
			if _, err := pnet.Infer(ctx, in); err != nil {
				return interrupted(err)
			}
			if i >= 2 {
				runs = append(runs, pnet.Profile())
			}
		}
		res.Layers = benchLayers(medianProfile(runs), peak)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Printf("model %s on %s, batch %d, precision %s\n", res.Model, res.Device, res.Batch, res.Precision)
	if peak > 0 {
		fmt.Printf("device peak at %s: %.1f TFLOP/s (%s, dense)\n", res.Precision, peak, peakOf)
	}
	if res.Interrupted {
		fmt.Printf("interrupted: %d of %d timed inferences ran\n", res.Inferences, *n)
	}
	if res.FirstRunMs > 0 {
		fmt.Printf("first run (empty caches, a whole 'clhost run') %.1f ms\n", res.FirstRunMs)
	}
	fmt.Printf("compile %.1f ms; %d inferences: %.1f inferences/s (%.1f items/s)\n", res.CompileMs, res.Inferences, res.ThroughputIPS, res.ItemsPerS)
	fmt.Printf("latency ms (host to host): mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  min %.3f\n", res.MeanMs, res.P50Ms, res.P90Ms, res.P99Ms, res.MinMs)
	if a := res.Against; a != nil {
		fmt.Printf("against %s: p50 %.3f  min %.3f; these flags faster in %d of %d alternating pairs\n", a.Flags, a.P50Ms, a.MinMs, a.FasterPairs, a.Pairs)
	}
	fmt.Printf("activation memory: %s planned (%.2f× the largest live set, %s), %s without reuse\n",
		humanBytes(res.PlannedBytes), float64(res.PlannedBytes)/float64(max(res.PeakLiveBytes, 1)), humanBytes(res.PeakLiveBytes), humanBytes(res.SumBytes))
	if len(res.Layers) > 0 {
		printProfile(os.Stdout, layerTimes(res.Layers))
	}
	return nil
}

// medianProfile is the last run's profile with each layer's device time replaced by its
// median over all runs; the timeline (queued, start, end) stays the last run's.
func medianProfile(runs [][]host.LayerTime) []host.LayerTime {
	if len(runs) == 0 {
		return nil
	}
	last := append([]host.LayerTime(nil), runs[len(runs)-1]...)
	times := make([]uint64, 0, len(runs))
	for i := range last {
		times = times[:0]
		for _, r := range runs {
			if i < len(r) && r[i].Layer == last[i].Layer {
				times = append(times, r[i].DeviceNs)
			}
		}
		slices.Sort(times)
		last[i].DeviceNs = times[len(times)/2]
	}
	return last
}

func interrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted")
	}
	return err
}

func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[min(i, len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func randomInputs(n *host.Network, seed int64) map[string]*host.Tensor {
	rng := rand.New(rand.NewSource(seed))
	in := map[string]*host.Tensor{}
	for _, w := range n.Inputs() {
		d := make([]float32, elementsOf(w.Shape))
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		in[w.Name] = &host.Tensor{Shape: w.Shape, Data: d}
	}
	return in
}

// progress draws a bar on stderr when it is a terminal, and nothing otherwise.
type progress struct {
	total, done_ int
	tty          bool
	last         time.Time
}

func newProgress(total int) *progress {
	return &progress{total: total, tty: stderrIsTerminal()}
}

func (p *progress) step() {
	p.done_++
	if !p.tty || time.Since(p.last) < 50*time.Millisecond && p.done_ < p.total {
		return
	}
	p.last = time.Now()
	const width = 40
	fill := width * p.done_ / max(p.total, 1)
	fmt.Fprintf(os.Stderr, "\r[%s%s] %d/%d", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.done_, p.total)
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}
