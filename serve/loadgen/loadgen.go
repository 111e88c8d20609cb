// Package loadgen times a server of the Open Inference Protocol (KServe V2: clhost
// serve, or any other) over HTTP: clients send the same request of random inputs, each
// as soon as its previous answer arrived, with the tensors as binary data (the
// protocol's binary tensor extension) or in shared memory (the system shared-memory
// extension), and the run reports throughput and latency percentiles as the clients
// saw them.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clhost/clhost/serve/shmclient"
)

// Options say what to time.
type Options struct {
	URL         string // the server, http://HOST:PORT
	Model       string // the name of the served model
	Batch       int    // items per request: the size of each input's variable first dimension
	Concurrency int    // clients sending requests at once
	Seed        int64  // seed of the random inputs
	// SharedMemory puts each client's inputs and outputs in a shared-memory region
	// of its own, registered with the server (which must be on this host): requests
	// carry no tensor data. Close removes the regions.
	SharedMemory bool
}

// Result is one timed run, as `clhost bench --url --json` prints it.
type Result struct {
	URL           string  `json:"url"`
	Model         string  `json:"model"`
	Concurrency   int     `json:"concurrency"`
	Batch         int     `json:"batch"`
	SharedMemory  bool    `json:"shared_memory,omitempty"`
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	Interrupted   bool    `json:"interrupted,omitempty"`
	WallS         float64 `json:"wall_s"`
	ThroughputRPS float64 `json:"requests_per_s"`
	ItemsPerS     float64 `json:"items_per_s"`
	MeanMs        float64 `json:"mean_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P90Ms         float64 `json:"p90_ms"`
	P99Ms         float64 `json:"p99_ms"`
	MinMs         float64 `json:"min_ms"`
	MaxMs         float64 `json:"max_ms"`
	// FirstError is the first failed request's error, nil when none failed.
	FirstError error `json:"-"`
}

// Generator sends one model's requests to one server.
type Generator struct {
	opt    Options
	client *http.Client
	url    string // the model's infer endpoint
	body   []byte // the request: its JSON header, then the tensors' bytes
	header string // the JSON header's length, as the protocol's header field says it
	// With Options.SharedMemory: each client's request (JSON only) and region.
	bodies  [][]byte
	regions []*shmclient.Region
	shm     *shmclient.Client
}

// New reads the model's metadata from the server and builds the request of random
// inputs that every client sends. Batch and Concurrency below 1 count as 1.
func New(opt Options) (*Generator, error) {
	opt.URL = strings.TrimRight(opt.URL, "/")
	opt.Batch, opt.Concurrency = max(opt.Batch, 1), max(opt.Concurrency, 1)
	c := opt.Concurrency
	g := &Generator{opt: opt,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}, Timeout: 5 * time.Minute},
		url:    opt.URL + "/v2/models/" + opt.Model + "/infer"}
	meta, err := readMeta(g.client, opt.URL, opt.Model)
	if err != nil {
		return nil, err
	}
	shapes, blobs, err := randomInputs(meta, opt.Batch, opt.Seed)
	if err != nil {
		return nil, err
	}
	if opt.SharedMemory {
		if err := g.setupShm(meta, shapes, blobs); err != nil {
			return nil, errors.Join(err, g.closeShm())
		}
		return g, nil
	}
	if g.body, g.header, err = buildRequest(meta, shapes, blobs); err != nil {
		return nil, err
	}
	return g, nil
}

// Close removes what New set up on the server and on this host: the shared-memory
// regions.
func (g *Generator) Close() error { return g.closeShm() }

// request is client k's request body and its JSON header's length.
func (g *Generator) request(k int) ([]byte, string) {
	if g.bodies != nil {
		b := g.bodies[k]
		return b, strconv.Itoa(len(b)) // JSON only: the header is the whole body
	}
	return g.body, g.header
}

// send sends client k's request through net/http's client and reads the whole answer.
func (g *Generator) send(k int) error {
	body, header := g.request(k)
	req, err := http.NewRequest("POST", g.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Inference-Header-Content-Length", header)
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// Warmup sends n untimed requests one after another; the first failure ends it. It
// stops early, without an error, when ctx ends.
func (g *Generator) Warmup(ctx context.Context, n int) error {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if err := g.send(0); err != nil {
			return fmt.Errorf("warm-up request: %w", err)
		}
	}
	return nil
}

// Run sends n timed requests from Concurrency clients. When ctx ends, the clients stop
// after their request in flight and the result covers what ran (Interrupted). Failed
// requests are counted and the first kept in FirstError; Run returns an error only when
// no request succeeded.
func (g *Generator) Run(ctx context.Context, n int) (*Result, error) {
	c := g.opt.Concurrency
	// Timed requests go over a connection per client, written and read on the client's
	// own goroutine where the URL is plain HTTP (conn).
	newSender := func(k int) (func() error, func()) { return func() error { return g.send(k) }, func() {} }
	if u, err := neturl.Parse(g.url); err == nil && u.Scheme == "http" {
		newSender = func(k int) (func() error, func()) {
			body, header := g.request(k)
			b := newConn(u, header, body)
			return b.send, b.close
		}
	}
	var next, errs atomic.Int64
	var firstErr error
	var errOnce sync.Once
	lat := make([][]time.Duration, c)
	var wg sync.WaitGroup
	start := time.Now()
	for k := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send, done := newSender(k)
			defer done()
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				t := time.Now()
				if err := send(); err != nil {
					errs.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				lat[k] = append(lat[k], time.Since(t))
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	all := slices.Concat(lat...)
	if len(all) == 0 {
		if firstErr != nil {
			return nil, fmt.Errorf("no request succeeded: %w", firstErr)
		}
		return nil, errors.New("interrupted before any timed request")
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	res := &Result{URL: g.opt.URL, Model: g.opt.Model, Concurrency: c, Batch: g.opt.Batch, SharedMemory: g.opt.SharedMemory,
		Requests: len(all), Errors: int(errs.Load()),
		Interrupted: ctx.Err() != nil, WallS: wall.Seconds(),
		ThroughputRPS: float64(len(all)) / wall.Seconds(),
		MeanMs:        ms(sum / time.Duration(len(all))), P50Ms: ms(percentile(all, 50)), P90Ms: ms(percentile(all, 90)),
		P99Ms: ms(percentile(all, 99)), MinMs: ms(all[0]), MaxMs: ms(all[len(all)-1]), FirstError: firstErr}
	res.ItemsPerS = res.ThroughputRPS * float64(g.opt.Batch)
	return res, nil
}

// percentile is the p-th percentile of sorted latencies, the nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[min(i, len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
