package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/builtin_kernels"
	"github.com/clhost/clhost/model"
)

// slowFastOp is a test op with three plans of one copy kernel: the first (its own
// choice) spins a long time per element, the others do not, so the tuner must pick one of
// the fast ones.
type slowFastOp struct{ timed *int }

const slowFastSrc = `__kernel void copy(__global const float* x, int x_off, __global float* y, int y_off, const int spin) {
	x += x_off;
	y += y_off;
	int i = get_global_id(0);
	float v = x[i];
	for (int s = 0; s < spin; s++) v = v * 1.0000001f + 1e-9f;
	y[i] = spin > 0 ? x[i] + (v - v) : x[i];
}
`

func (o slowFastOp) plan(spin int, tag string) *builtinkernels.Plan {
	return &builtinkernels.Plan{
		Source: "// " + tag + "\n" + slowFastSrc,
		Launches: []builtinkernels.Launch{{Kernel: "copy", Global: []int{256}, Args: []builtinkernels.Arg{
			{Kind: builtinkernels.ArgInput, Index: 0}, {Kind: builtinkernels.ArgOutput, Index: 0}, {Kind: builtinkernels.ArgInt, Int: int32(spin)}}}},
		AliasInput: -1,
	}
}

func (o slowFastOp) Plan(p builtinkernels.Params, in, out [][]int, dev builtinkernels.DeviceInfo) (*builtinkernels.Plan, error) {
	return o.plan(20000, "slow"), nil
}

func (o slowFastOp) Candidates(p builtinkernels.Params, in, out [][]int, dev builtinkernels.DeviceInfo) ([]*builtinkernels.Plan, error) {
	*o.timed++
	return []*builtinkernels.Plan{o.plan(20000, "slow"), o.plan(0, "fast a"), o.plan(0, "fast b")}, nil
}

func (o slowFastOp) Reference(p builtinkernels.Params, in []*builtinkernels.HostTensor, out [][]int) ([]*builtinkernels.HostTensor, error) {
	return []*builtinkernels.HostTensor{{Shape: out[0], Data: append([]float32(nil), in[0].Data...)}}, nil
}

var slowFastCalls int

func init() {
	builtinkernels.Register("clhost.test.SlowFast", slowFastOp{timed: &slowFastCalls})
}

// slowFastModel is one clhost.test.SlowFast layer over a 1×256 input.
func slowFastModel(t *testing.T) *model.Model {
	t.Helper()
	b := model.NewBuilder("tune")
	x := b.Input("x", model.Float32, 1, 256)
	y := b.Tensor("y", model.Float32, 1, 256)
	b.LayerOutputs("clhost.test.SlowFast", "sf", []string{x}, []string{y})
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTunerPicksFastestAndRemembers(t *testing.T) {
	cache := t.TempDir()
	m := slowFastModel(t)
	var logs strings.Builder
	compile := func() *Network {
		e := newTestEngine(t, Options{CacheDir: cache, Log: &logs, NoGlobalConfig: true, Tune: On})
		n, err := e.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := compile()
	if got := n.steps[0].prog.source; !strings.HasPrefix(got, "// fast") {
		t.Fatalf("tuner chose %q, want a fast plan", strings.SplitN(got, "\n", 2)[0])
	}
	raw, err := os.ReadFile(filepath.Join(cache, "tuning.json"))
	if err != nil {
		t.Fatal(err)
	}
	var choices map[string]string
	if err := json.Unmarshal(raw, &choices); err != nil || len(choices) != 1 {
		t.Fatalf("tuning.json: %v, %s", err, raw)
	}
	in := make([]float32, 256)
	for i := range in {
		in[i] = float32(i)
	}
	out, err := n.Infer(context.Background(), map[string]*Tensor{"x": {Shape: []int{1, 256}, Data: in}})
	if err != nil || out["y"].Data[255] != 255 {
		t.Fatalf("tuned layer output: %v %v", err, out)
	}
	// A second engine finds the choice in the cache: it asks for the candidates (to find
	// the remembered one) but builds none of the slow plan's program.
	before := len(choices)
	n2 := compile()
	if got := n2.steps[0].prog.source; !strings.HasPrefix(got, "// fast") {
		t.Errorf("second engine chose %q", strings.SplitN(got, "\n", 2)[0])
	}
	for _, p := range n2.engine.programs.order {
		if strings.HasPrefix(p.source, "// slow") {
			t.Errorf("second engine built the slow candidate again: the choice was not remembered")
		}
	}
	raw, _ = os.ReadFile(filepath.Join(cache, "tuning.json"))
	_ = json.Unmarshal(raw, &choices)
	if len(choices) != before {
		t.Errorf("tuning.json has %d entries after a cached run, want %d", len(choices), before)
	}
	// A damaged tuning file is measured again, not fatal.
	if err := os.WriteFile(filepath.Join(cache, "tuning.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	n3 := compile()
	if !strings.HasPrefix(n3.steps[0].prog.source, "// fast") {
		t.Errorf("after a damaged tuning file: chose %q", strings.SplitN(n3.steps[0].prog.source, "\n", 2)[0])
	}
	if !strings.Contains(logs.String(), "tuning.json is damaged") {
		t.Errorf("no note of the damaged tuning file in:\n%s", logs.String())
	}
}

// TestTuneAutoTimesNothing: without Tune set, a layer takes the choice an earlier Tune On
// run stored, else the op's own plan, and no candidate is timed or built; a table written
// by WriteTuningTable serves an engine whose cache holds no choice.
func TestTuneAutoTimesNothing(t *testing.T) {
	cache := t.TempDir()
	m := slowFastModel(t)
	compile := func(o Options) (*Engine, *Network) {
		t.Helper()
		o.NoGlobalConfig = true
		e := newTestEngine(t, o)
		n, err := e.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		return e, n
	}
	head := func(n *Network) string { return strings.SplitN(n.steps[0].prog.source, "\n", 2)[0] }
	calls := slowFastCalls
	e, n := compile(Options{CacheDir: cache})
	if head(n) != "// slow" || slowFastCalls != calls || len(e.programs.order) != 1 {
		t.Errorf("empty cache: chose %q after %d candidate listings, built %d programs; want the op's own plan, nothing listed, one program",
			head(n), slowFastCalls-calls, len(e.programs.order))
	}
	var steps []int
	_, n = compile(Options{CacheDir: cache, Tune: On, Progress: func(done, total int, what string) {
		if what == "layers tuned" {
			steps = append(steps, done, total)
		}
	}})
	if !strings.HasPrefix(head(n), "// fast") {
		t.Fatalf("On chose %q", head(n))
	}
	if fmt.Sprint(steps) != "[0 1 1 1]" {
		t.Errorf("tuning progress %v, want 0 of 1 then 1 of 1", steps)
	}
	e, n = compile(Options{CacheDir: cache})
	if !strings.HasPrefix(head(n), "// fast") || len(e.programs.order) != 1 {
		t.Errorf("stored choice: chose %q and built %d programs, want the fast plan alone", head(n), len(e.programs.order))
	}
	path := filepath.Join(t.TempDir(), "device.json")
	if err := e.WriteTuningTable(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var table tuningTable
	if err := json.Unmarshal(raw, &table); err != nil || len(table) != 1 || len(table[e.tableDevice()]) != 1 {
		t.Fatalf("table %s: %v", raw, err)
	}
	shipped := table[e.tableDevice()]
	o := Options{NoGlobalConfig: true}
	o.Device = testDeviceSpec()
	fresh, err := NewEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fresh.tuner.shipped = shipped
	if n, err = fresh.Compile(m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(head(n), "// fast") {
		t.Errorf("shipped table: chose %q, want the fast plan", head(n))
	}
}

// TestShippedTuningTablesParse: every table in host/tuning parses as choices per device.
func TestShippedTuningTablesParse(t *testing.T) {
	files, err := fs.Glob(shippedTables, "tuning/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, _ := shippedTables.ReadFile(f)
		var table tuningTable
		if err := json.Unmarshal(b, &table); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestTunerPrebuildsInParallel: with CLHOST_BUILD_THREADS above 1 the candidates are
// compiled several at once (the program cache saw overlapping builds), and the tuner
// still picks a fast one.
func TestTunerPrebuildsInParallel(t *testing.T) {
	t.Setenv("CLHOST_BUILD_THREADS", "3")
	m := slowFastModel(t)
	e := newTestEngine(t, Options{NoGlobalConfig: true, Tune: On})
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(e.programs.order); got != 3 {
		t.Errorf("%d programs built, want the 3 candidates", got)
	}
	if e.programs.peakBuilding < 2 {
		t.Errorf("at most %d build in progress at once, want several", e.programs.peakBuilding)
	}
	if got := n.steps[0].prog.source; !strings.HasPrefix(got, "// fast") {
		t.Errorf("tuner chose %q, want a fast plan", strings.SplitN(got, "\n", 2)[0])
	}
}
