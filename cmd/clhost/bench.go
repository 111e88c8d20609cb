package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"time"

	"clhost/host"
)

func init() {
	register(command{name: "bench", summary: "measure throughput, latency percentiles and per-layer device time", run: runBench})
}

// benchResult is what `clhost bench --json` prints.
type benchResult struct {
	Model         string           `json:"model"`
	Device        string           `json:"device"`
	Batch         int              `json:"batch"`
	Inferences    int              `json:"inferences"`
	Interrupted   bool             `json:"interrupted,omitempty"`
	CompileMs     float64          `json:"compile_ms"`
	ThroughputIPS float64          `json:"inferences_per_s"`
	ItemsPerS     float64          `json:"items_per_s"`
	MeanMs        float64          `json:"mean_ms"`
	P50Ms         float64          `json:"p50_ms"`
	P90Ms         float64          `json:"p90_ms"`
	P99Ms         float64          `json:"p99_ms"`
	MinMs         float64          `json:"min_ms"`
	PlannedBytes  int64            `json:"activation_bytes_planned"`
	SumBytes      int64            `json:"activation_bytes_sum"`
	PeakLiveBytes int64            `json:"activation_bytes_peak_live"`
	Layers        []host.LayerTime `json:"layers,omitempty"`
}

func runBench(args []string) error {
	fs := newFlagSet("bench")
	var ef engineFlags
	addEngineFlags(fs, &ef)
	n := fs.Int("n", 100, "number of timed inferences")
	warmup := fs.Int("warmup", 10, "untimed inferences first")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	layers := fs.Bool("layers", true, "also measure per-layer device time (a second, profiled pass)")
	layerRuns := fs.Int("layer-runs", 10, "profiled inferences whose per-layer median device time is reported")
	seed := fs.Int64("seed", 1, "seed of the random inputs")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *n <= 0 || *warmup < 0 || *layerRuns <= 0 {
		return usagef("-n and -layer-runs must be positive and -warmup not negative")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	t0 := time.Now()
	e, net, err := ef.open(false)
	if err != nil {
		return err
	}
	defer e.Close()
	res := benchResult{Model: *ef.model, Device: e.Device.Name, CompileMs: ms(time.Since(t0)),
		PlannedBytes: net.PlannedBytes, SumBytes: net.SumBytes, PeakLiveBytes: net.PeakLiveBytes}
	in := randomInputs(net, *seed)
	if ins := net.Inputs(); len(ins) > 0 && len(ins[0].Shape) > 0 {
		res.Batch = ins[0].Shape[0]
	}
	bar := newProgress(*warmup + *n)
	for i := 0; i < *warmup; i++ {
		if ctx.Err() != nil {
			break
		}
		if _, err := net.Infer(ctx, in); err != nil {
			return interrupted(err)
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
		bar.step()
	}
	wall := time.Since(start)
	bar.done()
	if len(lat) == 0 {
		return errors.New("interrupted before any timed inference")
	}
	res.Inferences = len(lat)
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
		res.Layers = medianProfile(runs)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Printf("model %s on %s, batch %d\n", res.Model, res.Device, res.Batch)
	if res.Interrupted {
		fmt.Printf("interrupted: %d of %d timed inferences ran\n", res.Inferences, *n)
	}
	fmt.Printf("compile %.1f ms; %d inferences: %.1f inferences/s (%.1f items/s)\n", res.CompileMs, res.Inferences, res.ThroughputIPS, res.ItemsPerS)
	fmt.Printf("latency ms (host to host): mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  min %.3f\n", res.MeanMs, res.P50Ms, res.P90Ms, res.P99Ms, res.MinMs)
	fmt.Printf("activation memory: %s planned (%.2f× the largest live set, %s), %s without reuse\n",
		humanBytes(res.PlannedBytes), float64(res.PlannedBytes)/float64(max(res.PeakLiveBytes, 1)), humanBytes(res.PeakLiveBytes), humanBytes(res.SumBytes))
	if len(res.Layers) > 0 {
		printProfile(os.Stdout, res.Layers)
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
	st, err := os.Stderr.Stat()
	return &progress{total: total, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
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
