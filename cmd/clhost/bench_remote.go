package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// remoteFlags are bench's flags for timing a server (clhost serve, or any server of the
// Open Inference Protocol) instead of a local network.
type remoteFlags struct {
	url         *string
	concurrency *int
}

func addRemoteFlags(fs *flag.FlagSet) remoteFlags {
	return remoteFlags{
		url:         fs.String("url", "", "time a server of the Open Inference Protocol at this URL (http://HOST:PORT) instead of a local network: -m names the model, -n counts requests, -batch sets the items per request"),
		concurrency: fs.Int("concurrency", 1, "with -url: clients sending requests at once, each as soon as its previous answer arrived"),
	}
}

// remoteResult is what `clhost bench --url --json` prints.
type remoteResult struct {
	URL           string  `json:"url"`
	Model         string  `json:"model"`
	Concurrency   int     `json:"concurrency"`
	Batch         int     `json:"batch"`
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
}

// runRemoteBench sends -n requests of random inputs from -concurrency clients, each
// request's tensors as binary data (the protocol's binary tensor extension), and reports
// throughput and latency percentiles.
func runRemoteBench(f *benchFlags) error {
	base := strings.TrimRight(*f.remote.url, "/")
	c := *f.remote.concurrency
	if c < 1 {
		return usagef("-concurrency %d: must be at least 1", c)
	}
	name := *f.ef.model
	if name == "" {
		return usagef("-url needs -m MODEL: the name of the served model (a model file's path names it too)")
	}
	name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	batch := max(*f.ef.batch, 1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}, Timeout: 5 * time.Minute}
	body, header, err := remoteRequest(client, base, name, batch, *f.seed)
	if err != nil {
		return err
	}
	url := base + "/v2/models/" + name + "/infer"
	send := func() error {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Inference-Header-Content-Length", header)
		resp, err := client.Do(req)
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
	// Timed requests go over a connection per client, written and read on the client's
	// own goroutine where the URL is plain HTTP (benchConn).
	newSender := func() (func() error, func()) { return send, func() {} }
	if u, err := neturl.Parse(url); err == nil && u.Scheme == "http" {
		newSender = func() (func() error, func()) {
			b := newBenchConn(u, header, body)
			return b.send, b.close
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for i := 0; i < *f.warmup && ctx.Err() == nil; i++ {
		if err := send(); err != nil {
			return fmt.Errorf("warm-up request: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "clhost: timing %d requests from %d clients (Ctrl-C stops early and reports what ran)\n", *f.n, c)
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
			send, done := newSender()
			defer done()
			for next.Add(1) <= int64(*f.n) && ctx.Err() == nil {
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
			return fmt.Errorf("no request succeeded: %w", firstErr)
		}
		return errors.New("interrupted before any timed request")
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	res := remoteResult{URL: base, Model: name, Concurrency: c, Batch: batch, Requests: len(all), Errors: int(errs.Load()),
		Interrupted: ctx.Err() != nil, WallS: wall.Seconds(),
		ThroughputRPS: float64(len(all)) / wall.Seconds(),
		MeanMs:        ms(sum / time.Duration(len(all))), P50Ms: ms(percentile(all, 50)), P90Ms: ms(percentile(all, 90)),
		P99Ms: ms(percentile(all, 99)), MinMs: ms(all[0]), MaxMs: ms(all[len(all)-1])}
	res.ItemsPerS = res.ThroughputRPS * float64(batch)
	if *f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Printf("model %s at %s, concurrency %d, batch %d per request\n", name, base, c, batch)
		fmt.Printf("%d requests in %.2f s: %.1f requests/s (%.1f items/s), %d errors\n", res.Requests, res.WallS, res.ThroughputRPS, res.ItemsPerS, res.Errors)
		fmt.Printf("latency ms (client to client): mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  min %.3f  max %.3f\n", res.MeanMs, res.P50Ms, res.P90Ms, res.P99Ms, res.MinMs, res.MaxMs)
	}
	if firstErr != nil {
		return fmt.Errorf("%d of %d requests failed, the first: %w", res.Errors, res.Errors+res.Requests, firstErr)
	}
	return nil
}

// remoteRequest reads the model's metadata and builds one request of random inputs
// with batch items, as binary tensor data; it returns the body and the JSON header's
// length.
func remoteRequest(client *http.Client, base, name string, batch int, seed int64) ([]byte, string, error) {
	resp, err := client.Get(base + "/v2/models/" + name)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("model %q metadata: status %d: %s", name, resp.StatusCode, bytes.TrimSpace(b))
	}
	var meta struct {
		Inputs []struct {
			Name, Datatype string
			Shape          []int64
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, "", fmt.Errorf("model %q metadata: %w", name, err)
	}
	rng := rand.New(rand.NewSource(seed))
	var inputs []map[string]any
	var blobs []byte
	for _, in := range meta.Inputs {
		shape := slices.Clone(in.Shape)
		n := int64(1)
		for i, d := range shape {
			if d < 0 {
				if i != 0 {
					return nil, "", fmt.Errorf("input %q: shape %v has a variable dimension other than the batch", in.Name, in.Shape)
				}
				shape[i] = int64(batch)
			}
			n *= shape[i]
		}
		blob, err := randomBlob(in.Datatype, int(n), rng)
		if err != nil {
			return nil, "", fmt.Errorf("input %q: %w", in.Name, err)
		}
		inputs = append(inputs, map[string]any{"name": in.Name, "datatype": in.Datatype, "shape": shape,
			"parameters": map[string]any{"binary_data_size": len(blob)}})
		blobs = append(blobs, blob...)
	}
	header, err := json.Marshal(map[string]any{"inputs": inputs, "parameters": map[string]any{"binary_data_output": true}})
	if err != nil {
		return nil, "", err
	}
	return append(header, blobs...), strconv.Itoa(len(header)), nil
}

func randomBlob(datatype string, n int, rng *rand.Rand) ([]byte, error) {
	switch datatype {
	case "FP32":
		b := make([]byte, 0, 4*n)
		for range n {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(rng.NormFloat64())))
		}
		return b, nil
	case "INT8", "UINT8":
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Intn(8))
		}
		return b, nil
	case "INT32":
		b := make([]byte, 0, 4*n)
		for range n {
			b = binary.LittleEndian.AppendUint32(b, uint32(rng.Intn(8)))
		}
		return b, nil
	case "INT64":
		b := make([]byte, 0, 8*n)
		for range n {
			b = binary.LittleEndian.AppendUint64(b, uint64(rng.Intn(8)))
		}
		return b, nil
	}
	return nil, fmt.Errorf("datatype %s: bench sends FP32 and integer tensors only", datatype)
}

// benchConn is one client's keep-alive connection to the server. Requests are written
// and responses read on the client's own goroutine: net/http's Transport hands each
// request to a writing and a reading goroutine of the connection's own, whose wake-ups
// cost a loaded machine more time per request than a small model's whole inference,
// and the client would time them as the server's.
type benchConn struct {
	addr string
	head []byte // the request line and headers
	body []byte
	c    net.Conn
	br   *bufio.Reader
}

func newBenchConn(u *neturl.URL, jsonLength string, body []byte) *benchConn {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\n"+
		"Inference-Header-Content-Length: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, jsonLength, len(body))
	return &benchConn{addr: addr, head: []byte(head), body: body}
}

// send sends one request and reads its whole response, connecting first if need be.
func (b *benchConn) send() error {
	if b.c == nil {
		c, err := net.Dial("tcp", b.addr)
		if err != nil {
			return err
		}
		b.c, b.br = c, bufio.NewReaderSize(c, 64<<10)
	}
	bufs := net.Buffers{b.head, b.body}
	_, err := bufs.WriteTo(b.c)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(b.br, nil)
	}
	if err != nil {
		b.close()
		return err
	}
	var text []byte
	if resp.StatusCode == http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		text, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if err != nil || resp.Close {
		b.close()
	}
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(text))
	}
	return nil
}

func (b *benchConn) close() {
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}
