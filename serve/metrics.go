package serve

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series, in a registry of its own so that
// several servers in one process keep separate counts.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	failures *prometheus.CounterVec
	queue    *prometheus.HistogramVec
	compute  *prometheus.HistogramVec
	batches  *prometheus.HistogramVec
	latency  *prometheus.HistogramVec
}

// noDevice labels requests that failed before reaching a device.
const noDevice = "none"

func newMetrics() *metrics {
	timeBuckets := prometheus.ExponentialBuckets(50e-6, 2, 16) // 50 µs to 1.6 s
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clhost_inference_requests_total",
			Help: "Inference requests answered, by model and the device that ran them (none: failed before).",
		}, []string{"model", "device"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "clhost_inference_failures_total",
			Help: "Inference requests answered with an error, by model, device and kind (invalid, not_found, unavailable, too_large, overloaded, timeout, internal, canceled).",
		}, []string{"model", "device", "kind"}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clhost_queue_seconds",
			Help:    "Time from a request's arrival in its model's queue to the start of its batch on a device.",
			Buckets: timeBuckets,
		}, []string{"model", "device"}),
		compute: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clhost_compute_seconds",
			Help:    "Device time of one batch: its inferences, inputs in and outputs out.",
			Buckets: timeBuckets,
		}, []string{"model", "device"}),
		batches: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clhost_batch_size",
			Help:    "Items (rows of the batch dimension) per batch.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, []string{"model", "device"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "clhost_request_seconds",
			Help:    "Time from a request's arrival in its model's queue to its answer.",
			Buckets: timeBuckets,
		}, []string{"model", "device"}),
	}
	m.reg.MustRegister(m.requests, m.failures, m.queue, m.compute, m.batches, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watch adds the server's state now: the requests in flight and the bytes they hold
// of the budget, which an operator sets --max-inflight-bytes by.
func (m *metrics) watch(s *Server) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "clhost_inflight_requests",
			Help: "Inference requests accepted and not yet answered.",
		}, func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.inflight)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "clhost_inflight_bytes",
			Help: "Bytes the requests in flight hold: bodies, decoded inputs and outputs.",
		}, func() float64 { return float64(s.budget.used.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "clhost_inflight_bytes_limit",
			Help: "The budget of bytes requests in flight may hold (--max-inflight-bytes).",
		}, func() float64 { return float64(s.budget.limit) }),
	)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// series are one model's series on one device, looked up once: a lookup by label
// values hashes them again on every request.
type series struct {
	requests                         prometheus.Counter
	queue, compute, batches, latency prometheus.Observer
}

func (m *metrics) seriesFor(model, device string) *series {
	return &series{
		requests: m.requests.WithLabelValues(model, device),
		queue:    m.queue.WithLabelValues(model, device),
		compute:  m.compute.WithLabelValues(model, device),
		batches:  m.batches.WithLabelValues(model, device),
		latency:  m.latency.WithLabelValues(model, device),
	}
}

// batch records one batch a device ran.
func (sr *series) batch(items int, compute time.Duration) {
	sr.compute.Observe(compute.Seconds())
	sr.batches.Observe(float64(items))
}

// answered records a request's answer.
func (m *metrics) answered(model string, r *request, rep *reply) {
	dev := rep.device
	if dev == "" {
		dev = noDevice
	}
	sr := rep.series
	if sr == nil {
		sr = &series{requests: m.requests.WithLabelValues(model, dev)}
	}
	sr.requests.Inc()
	if rep.err != nil {
		m.failures.WithLabelValues(model, dev, kindOf(rep.err).label()).Inc()
	}
	if r != nil && !r.started.IsZero() {
		if sr.queue == nil {
			sr.queue, sr.latency = m.queue.WithLabelValues(model, dev), m.latency.WithLabelValues(model, dev)
		}
		sr.queue.Observe(r.started.Sub(r.arrived).Seconds())
		sr.latency.Observe(time.Since(r.arrived).Seconds())
	}
}

// rejected records a request that failed before it was queued.
func (m *metrics) rejected(model string, err error) {
	m.requests.WithLabelValues(model, noDevice).Inc()
	m.failures.WithLabelValues(model, noDevice, kindOf(err).label()).Inc()
}
