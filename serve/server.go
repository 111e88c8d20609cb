// Package serve is clhost's inference server: the Open Inference Protocol (KServe V2)
// over HTTP/REST and gRPC, in front of a set of models compiled on every device of the
// host.
//
// Each model has one queue. The requests that arrive while the devices are busy, or
// within Options.MaxDelay while others are still being received, are run together in
// batches of up to Options.MaxBatch items (rows of the batch dimension); a scheduler
// sends each batch to the device expected to finish it first, which splits the batch
// into inferences of the batch sizes compiled there (padding the last) and splits the
// results back per request. A batch runs on the goroutine that finds it due with its
// device free: the handler of its last request, the device's worker after its previous
// batch, or else the model's batcher hands it to the device's worker. Batching is checked at load: a model whose batched results differ
// from its single-item results beyond a stated tolerance is served one item at a time.
//
// A request is answered exactly once. Drain stops new requests (HTTP 503, gRPC
// Unavailable) while those already accepted complete.
package serve

import (
	"context"
	"errors"
	"fmt"
	"github.com/clhost/clhost/internal/graph"
	"io"
	"math"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/model"
)

// Options configure a Server. The zero value of each field takes its default.
type Options struct {
	// Devices are the devices every model is compiled on, from cl.AllDevices (an
	// engine opens each by its Index). A device listed twice gets two engines, which run
	// batches side by side.
	Devices []*cl.Device
	// DeviceNames label Devices in logs and metrics (default: "d<index> <name>").
	DeviceNames []string
	// Engine is the template of every engine: Device is set per device and
	// the model's configurations are appended to Configs.
	Engine host.Options
	// MaxBatch is the most items one batch holds (default 8).
	MaxBatch int
	// MaxDelay is how long after its oldest request a batch that is not full may
	// wait for requests that were being received when it began to wait (default
	// 2 ms), and how long after the model's latest answer it may wait for as many
	// requests to begin as that answer's batch held (queue.due). Otherwise a batch
	// never waits for requests that have not reached the server, nor for those that
	// began arriving after it began to wait, while a device is free.
	MaxDelay time.Duration
	// InferTimeout bounds one inference on a device (DefaultInferTimeout when 0): past
	// it the custom layer still running is named, the batch's requests fail, and the
	// device is taken out of service (OpenCL cannot stop a kernel).
	InferTimeout time.Duration
	// BatchSizes are the batch sizes compiled per device for a model that batches
	// (default: 1, the powers of 4 below MaxBatch, and MaxBatch); a batch runs as
	// inferences of these sizes.
	BatchSizes []int
	// MaxBodyBytes bounds a request's size (default 64 MiB): a larger HTTP body gets
	// 413, a larger gRPC message ResourceExhausted.
	MaxBodyBytes int64
	// MaxInflightBytes bounds the memory all requests in flight hold together: their
	// bodies, decoded inputs and outputs (default DefaultMaxInflightBytes, from the
	// machine's memory). A request beyond what is left gets 429 (gRPC
	// ResourceExhausted); one that alone needs more gets 413.
	MaxInflightBytes int64
	// ReadTimeout bounds how long a client may take to send one request over HTTP,
	// headers and body, and to take its answer (default DefaultReadTimeout): a client
	// that trickles its body or never reads must not hold a connection and its memory.
	ReadTimeout time.Duration
	// IdleTimeout closes a connection, HTTP or gRPC, idle that long (default
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once on each listener (default
	// DefaultMaxConnections); beyond it, new ones wait to be accepted.
	MaxConnections int
	// IsolatedCheck, when set, checks a model with custom layers in a process of its own
	// before any of its kernels runs in this one (see isolatedCheck); it returns why the
	// model must not be served, or "".
	IsolatedCheck func(src Source, dev *cl.Device) string
	// Strict refuses to start when any model fails to load or to pass its check;
	// otherwise the server serves the models that load, and each broken one answers
	// not ready, with its error.
	Strict bool
	// SharedMemory lets clients register regions of this host's POSIX shared memory
	// and have inputs read from and outputs written into them (the system
	// shared-memory extension): only for clients on the host that are trusted with
	// its shared memory.
	SharedMemory bool
	// Version is the server version metadata reports.
	Version string
	// Log receives load-time notes; nil discards them.
	Log io.Writer
}

// Defaults.
const (
	DefaultMaxBatch = 8
	DefaultMaxDelay = 2 * time.Millisecond
	// DefaultInferTimeout is Options.InferTimeout's default.
	DefaultInferTimeout = time.Minute
	DefaultMaxBodyBytes = 64 << 20
	// DefaultReadTimeout is Options.ReadTimeout's default: a 64 MiB body at 2 MB/s.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout is Options.IdleTimeout's default.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConnections is Options.MaxConnections' default.
	DefaultMaxConnections = 1024
)

// Tolerance bounds how far a batched result may differ from the same item run alone:
// |batched - alone| ≤ Tolerance × (1 + |alone|). Different batch sizes may take other
// kernel plans, so sums may be taken in another order.
const Tolerance = 1e-4

// Server serves a set of models. Create it with New, expose it with Handler and
// RegisterGRPC (or Serve), stop it with Drain and Close.
type Server struct {
	opts    Options
	models  map[string]*servedModel
	order   []*servedModel
	devices []*device
	sched   *scheduler
	metrics *metrics
	budget  *budget // bytes the requests in flight hold
	shm     shmRegistry

	mu       sync.Mutex
	draining bool
	inflight int
	idle     chan struct{} // closed once draining with nothing in flight

	batchers, workers sync.WaitGroup
	closed            bool
}

// New loads every model, compiles it on every device at every batch size, checks that
// batching keeps each model's results, and starts the batchers and device workers.
func New(sources []Source, opts Options) (*Server, error) {
	if len(opts.Devices) == 0 {
		return nil, errors.New("no device to serve on")
	}
	if len(sources) == 0 {
		return nil, errors.New("no model to serve")
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxBatch < 1 {
		return nil, fmt.Errorf("max batch %d: must be at least 1", opts.MaxBatch)
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.MaxDelay < 0 {
		opts.MaxDelay = 0
	}
	if opts.InferTimeout <= 0 {
		opts.InferTimeout = DefaultInferTimeout
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxInflightBytes <= 0 {
		opts.MaxInflightBytes = DefaultMaxInflightBytes()
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if len(opts.BatchSizes) == 0 {
		opts.BatchSizes = defaultBatchSizes(opts.MaxBatch)
	}
	sizes := slices.Clone(opts.BatchSizes)
	sort.Ints(sizes)
	sizes = slices.Compact(sizes)
	if sizes[0] < 1 {
		return nil, fmt.Errorf("batch sizes %v: each must be at least 1", opts.BatchSizes)
	}
	if sizes[0] != 1 {
		sizes = append([]int{1}, sizes...) // a lone item runs unpadded
	}
	opts.BatchSizes = sizes
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, models: map[string]*servedModel{}, sched: &scheduler{changed: make(chan struct{})},
		budget: &budget{limit: opts.MaxInflightBytes}}
	for i, d := range opts.Devices {
		name := fmt.Sprintf("d%d %s", i, d.Name)
		if i < len(opts.DeviceNames) && opts.DeviceNames[i] != "" {
			name = opts.DeviceNames[i]
		}
		s.devices = append(s.devices, &device{index: i, name: name, cl: d, jobs: make(chan job)})
	}
	s.sched.devices = s.devices
	s.metrics = newMetrics()
	s.metrics.watch(s)
	ok := false
	defer func() {
		if !ok {
			s.closeEngines()
		}
	}()
	// Every model is loaded, even after a broken one, so that all of them are named.
	var broken []error
	for _, src := range sources {
		if _, dup := s.models[src.Name]; dup {
			return nil, fmt.Errorf("two models are named %q", src.Name)
		}
		m, err := s.load(src)
		if err != nil {
			m = brokenModel(src, err)
			s.logf("model %q is not served: %s", m.name, m.unready)
		}
		if m.unready != "" {
			broken = append(broken, fmt.Errorf("model %q: %s", m.name, m.unready))
		}
		s.models[m.name] = m
		s.order = append(s.order, m)
	}
	switch {
	case len(broken) > 0 && opts.Strict:
		return nil, fmt.Errorf("%d of %d models are broken (strict):\n%w", len(broken), len(sources), errors.Join(broken...))
	case len(broken) == len(sources):
		return nil, fmt.Errorf("no model can be served:\n%w", errors.Join(broken...))
	}
	ok = true
	for _, d := range s.devices {
		s.workers.Add(1)
		go s.work(d)
	}
	for _, m := range s.order {
		s.batchers.Add(1)
		go s.batch(m)
	}
	return s, nil
}

// brokenModel stands for a model that failed to load: it is listed, its readiness is
// false and its metadata and inference requests answer err, while the other models
// serve.
func brokenModel(src Source, err error) *servedModel {
	platform := src.Platform
	if platform == "" {
		platform = "clhost"
	}
	// The error names the model already, as the answers that carry it do.
	reason := strings.TrimPrefix(err.Error(), fmt.Sprintf("model %q: ", src.Name))
	return &servedModel{name: src.Name, platform: platform, q: queue{wake: make(chan struct{}, 1)}, sizes: []int{1}, unready: reason}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, "clhost serve: "+format+"\n", args...)
	}
}

// load reads a model at the batch sizes it takes and compiles it on every device.
func (s *Server) load(src Source) (*servedModel, error) {
	if src.err != nil {
		return nil, fmt.Errorf("model %q: %w", src.Name, src.err)
	}
	if src.Load == nil {
		return nil, fmt.Errorf("model %q: no loader", src.Name)
	}
	// The configurations the model's engines load, read once more here: the importer
	// passes the nodes they implement through as written.
	eo := s.opts.Engine
	eo.Configs = append(slices.Clone(eo.Configs), src.Configs...)
	layers, err := host.LoadConfigs(eo)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", src.Name, err)
	}
	stored, err := src.Load(0, layers)
	if err == nil {
		stored, err = withShapes(stored, layers.Implements)
	}
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", src.Name, err)
	}
	if reason := s.isolatedCheck(src, stored, layers); reason != "" {
		return nil, fmt.Errorf("model %q: %s", src.Name, reason)
	}
	m := &servedModel{name: src.Name, platform: src.Platform, q: queue{wake: make(chan struct{}, 1)}}
	if m.platform == "" {
		m.platform = "clhost"
	}
	// Items are rows of the batch dimension when the model has one and reads at
	// batch 1; otherwise requests run at the model's own shapes.
	byBatch := map[int]*model.Model{}
	if _, ok := graph.BatchOf(stored); ok {
		for _, b := range s.opts.BatchSizes {
			mb, err := src.Load(b, layers)
			if err == nil {
				mb, err = withShapes(mb, layers.Implements)
			}
			if err == nil {
				if got, ok := graph.BatchOf(mb); !ok || got != b {
					err = fmt.Errorf("the model read at batch %d has inputs or outputs of another batch", b)
				}
			}
			if err != nil {
				if b == 1 {
					s.logf("model %q: no batch of 1 (%v): it runs one request per inference at its own shapes", src.Name, err)
					break
				}
				s.logf("model %q: batch %d left out: %v", src.Name, b, err)
				continue
			}
			byBatch[b] = mb
		}
	}
	if byBatch[1] != nil {
		m.batched = true
		for b := range byBatch {
			m.sizes = append(m.sizes, b)
		}
		sort.Ints(m.sizes)
	} else {
		byBatch = map[int]*model.Model{1: stored}
		m.sizes = []int{1}
	}
	if m.inputs, err = newTensorMetas(byBatch[1], byBatch[1].Inputs, m.batched, src.InputTypes); err != nil {
		return nil, err
	}
	if m.outputs, err = newTensorMetas(byBatch[1], byBatch[1].Outputs, m.batched, nil); err != nil {
		return nil, err
	}
	if err := s.compile(m, src, byBatch); err != nil {
		return nil, err
	}
	if reason := s.checkCustomLayers(m, src, byBatch[m.sizes[0]]); reason != "" {
		s.logf("model %q is not served: %s", m.name, reason)
		m.unready = reason
		if !m.instances[0].engine.Stuck() {
			m.closeEngines()
		}
		m.instances = nil
		return m, nil
	}
	if m.batched && len(m.sizes) > 1 {
		if err := s.checkBatching(m); err != nil {
			s.logf("model %q: batched results differ from single ones, so it runs one item per inference: %v", m.name, err)
			for _, in := range m.instances {
				for b, n := range in.nets {
					if b != 1 {
						n.Close()
						delete(in.nets, b)
					}
				}
			}
			m.sizes = []int{1}
		}
	}
	if err := s.warmUp(m); err != nil {
		m.closeEngines()
		return nil, err
	}
	return m, nil
}

// compile builds the model's networks on every device, the devices side by side.
func (s *Server) compile(m *servedModel, src Source, byBatch map[int]*model.Model) error {
	m.instances = make([]*instance, len(s.devices))
	errs := make([]error, len(s.devices))
	var wg sync.WaitGroup
	for i, d := range s.devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.instances[i], errs[i] = s.compileOn(m, src, d, byBatch)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		m.closeEngines()
		return err
	}
	return nil
}

func (s *Server) compileOn(m *servedModel, src Source, d *device, byBatch map[int]*model.Model) (*instance, error) {
	o := s.opts.Engine
	o.Device = strconv.Itoa(d.cl.Index)
	o.Configs = append(slices.Clone(o.Configs), src.Configs...)
	e, err := host.NewEngine(o)
	if err != nil {
		return nil, fmt.Errorf("model %q on %s: %w", m.name, d.name, err)
	}
	in := &instance{model: m, dev: d, engine: e, nets: map[int]*host.Network{},
		staging: map[int]map[string]*host.Tensor{}, dirty: map[int][]int{}, est: map[int]float64{},
		series: s.metrics.seriesFor(m.name, d.name), timeout: s.opts.InferTimeout}
	for _, b := range m.sizes {
		n, err := e.Compile(byBatch[b])
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("model %q on %s at batch %d: %w", m.name, d.name, b, err)
		}
		in.nets[b] = n
		st := map[string]*host.Tensor{}
		for _, t := range n.Inputs() {
			// Packed where the network's transfer starts (a GPU's pinned buffer), a
			// batch is not copied a second time before it crosses.
			data := n.InputStaging(t.Name)
			if data == nil {
				data = make([]float32, elements(t.Shape))
			} else {
				in.pinnedStaging = true
			}
			st[t.Name] = &host.Tensor{Shape: t.Shape, Data: data}
		}
		in.staging[b] = st
		in.dirty[b] = make([]int, len(m.inputs))
		for i, t := range m.inputs {
			in.dirty[b][i] = len(st[t.name].Data) // the start-up checks fill it
		}
	}
	return in, nil
}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// checkBatching runs every compiled batch size on the first device with distinct random
// items and compares each item's result with the same item run at batch 1.
func (s *Server) checkBatching(m *servedModel) error {
	in := m.instances[0]
	rng := rand.New(rand.NewSource(1))
	largest := m.sizes[len(m.sizes)-1]
	rows := make([][][]float32, largest) // per item, per input
	for r := range rows {
		rows[r] = make([][]float32, len(m.inputs))
		for i, t := range m.inputs {
			v := make([]float32, t.row)
			for k := range v {
				if t.datatype == "FP32" {
					v[k] = float32(rng.NormFloat64())
				} else {
					v[k] = float32(rng.Intn(8))
				}
			}
			rows[r][i] = v
		}
	}
	alone := make([]map[string]*host.Tensor, largest)
	for r := range rows {
		reqIn := map[string]*host.Tensor{}
		for i, t := range m.inputs {
			reqIn[t.name] = &host.Tensor{Shape: in.staging[1][t.name].Shape, Data: rows[r][i]}
		}
		out, err := in.nets[1].Infer(context.Background(), reqIn)
		if err != nil {
			return err
		}
		alone[r] = out
	}
	for _, b := range m.sizes[1:] {
		bIn := map[string]*host.Tensor{}
		for i, t := range m.inputs {
			st := in.staging[b][t.name]
			for r := range b {
				copy(st.Data[r*t.row:], rows[r][i])
			}
			bIn[t.name] = st
		}
		out, err := in.nets[b].Infer(context.Background(), bIn)
		if err != nil {
			return err
		}
		for _, t := range m.outputs {
			for r := range b {
				got := out[t.name].Data[r*t.row : (r+1)*t.row]
				want := alone[r][t.name].Data
				for k := range got {
					if !within(got[k], want[k]) {
						return fmt.Errorf("output %q at batch %d, item %d, element %d: %g, alone %g", t.name, b, r, k, got[k], want[k])
					}
				}
			}
		}
	}
	return nil
}

// defaultBatchSizes are 1, the powers of 4 below max, and max: a batch of any size then
// pads at most to four times its items, or splits, while each size compiled costs
// compile time.
func defaultBatchSizes(max int) []int {
	sizes := []int{1}
	for b := 4; b < max; b *= 4 {
		sizes = append(sizes, b)
	}
	return append(sizes, max)
}

// within reports whether a batched value matches the value computed alone.
func within(got, want float32) bool {
	if math.IsNaN(float64(want)) {
		return math.IsNaN(float64(got))
	}
	return math.Abs(float64(got-want)) <= Tolerance*(1+math.Abs(float64(want)))
}

// warmUp runs every network a few times with zeros, so that first-run costs are paid
// before any request, and takes the median time of the later runs as the first
// estimate of each batch size (a single run on a busy machine can be far off).
func (s *Server) warmUp(m *servedModel) error {
	const untimed, timed = 2, 5
	for _, in := range m.instances {
		for b, n := range in.nets {
			var times []float64
			for i := range untimed + timed {
				t0 := time.Now()
				if _, err := n.Infer(context.Background(), in.staging[b]); err != nil {
					return fmt.Errorf("model %q on %s at batch %d: warm-up: %w", m.name, in.dev.name, b, err)
				}
				if i >= untimed {
					times = append(times, time.Since(t0).Seconds())
				}
			}
			slices.Sort(times)
			in.mu.Lock()
			in.est[b] = times[len(times)/2]
			in.mu.Unlock()
		}
	}
	return nil
}

// Describe lists the devices and models as the server's startup lines print them.
func (s *Server) Describe() (devices, models []string) {
	for _, d := range s.devices {
		devices = append(devices, d.name)
	}
	for _, m := range s.order {
		if m.unready != "" {
			models = append(models, fmt.Sprintf("%s (%s; not served: %s)", m.name, m.platform, m.unready))
			continue
		}
		how := "one request per inference"
		if m.batched {
			how = fmt.Sprintf("batches of up to %d", s.opts.MaxBatch)
		}
		// The warm-up's time of each compiled size on the first device.
		in := m.instances[0]
		in.mu.Lock()
		var times []string
		for _, b := range m.sizes {
			times = append(times, fmt.Sprintf("%d: %.3f ms", b, in.est[b]*1e3))
		}
		in.mu.Unlock()
		how += fmt.Sprintf(", batch sizes %s on %s", strings.Join(times, ", "), in.dev.name)
		var ins []string
		for _, t := range m.inputs {
			ins = append(ins, fmt.Sprintf("%s %s%v", t.name, t.datatype, t.metaShape(m.batched)))
		}
		models = append(models, fmt.Sprintf("%s (%s; inputs %s; %s)", m.name, m.platform, strings.Join(ins, ", "), how))
	}
	return devices, models
}

// accept counts a request in, unless the server drains.
func (s *Server) accept() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return errorf(KindUnavailable, "the server is shutting down")
	}
	s.inflight++
	return nil
}

// done counts a request out.
func (s *Server) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.draining && s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Ready reports whether the server takes inference requests for every model.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return false
	}
	for _, m := range s.order {
		if m.unready != "" {
			return false
		}
	}
	return true
}

// modelReady reports whether the server takes requests for m, and if not, why.
func (s *Server) modelReadiness(m *servedModel) (bool, string) {
	if m.unready != "" {
		return false, m.unready
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return false, "the server is shutting down"
	}
	return true, ""
}
