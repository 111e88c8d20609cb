package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeServer answers the metadata of model "m" (one FP32 input of shape [-1, 3]) and
// every infer request; it fails the request numbered failAt (from 1, 0: none) and checks
// that each request carries batch items as binary data.
func fakeServer(t *testing.T, batch int, failAt int64) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/models/m", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"m","inputs":[{"name":"x","datatype":"FP32","shape":[-1,3]}]}`)
	})
	mux.HandleFunc("POST /v2/models/m/infer", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k, err := strconv.Atoi(r.Header.Get("Inference-Header-Content-Length"))
		if err != nil || k > len(body) {
			t.Errorf("request header length %q for a body of %d bytes", r.Header.Get("Inference-Header-Content-Length"), len(body))
			http.Error(w, "bad header length", http.StatusBadRequest)
			return
		}
		var head struct {
			Inputs []struct{ Shape []int }
		}
		if err := json.Unmarshal(body[:k], &head); err != nil || len(head.Inputs) != 1 || head.Inputs[0].Shape[0] != batch || len(body)-k != 4*3*batch {
			t.Errorf("request %s with %d bytes of data; want shape [%d 3] and %d bytes", body[:k], len(body)-k, batch, 4*3*batch)
		}
		if n.Add(1) == failAt {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.Write(binary.LittleEndian.AppendUint32(nil, 0))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, &n
}

// TestRun: warm-up and timed requests all reach the server with the batch asked for; one
// failed request is counted and kept, not fatal.
func TestRun(t *testing.T) {
	s, n := fakeServer(t, 2, 5)
	g, err := New(Options{URL: s.URL + "/", Model: "m", Batch: 2, Concurrency: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Warmup(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	r, err := g.Run(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 22 || r.Requests != 19 || r.Errors != 1 || r.FirstError == nil || !strings.Contains(r.FirstError.Error(), "status 503: overloaded") {
		t.Errorf("%d requests served; result %+v", n.Load(), r)
	}
	if r.URL != s.URL || r.Batch != 2 || r.Concurrency != 3 || r.MinMs > r.P50Ms || r.P50Ms > r.MaxMs || r.ItemsPerS != 2*r.ThroughputRPS {
		t.Errorf("result %+v", r)
	}
}

// TestErrors: an unknown model fails at New naming it; a run whose every request fails
// is an error carrying the first failure; a cancelled run that timed nothing says so.
func TestErrors(t *testing.T) {
	s, _ := fakeServer(t, 1, 1)
	if _, err := New(Options{URL: s.URL, Model: "other"}); err == nil || !strings.Contains(err.Error(), `model "other" metadata: status 404`) {
		t.Errorf("unknown model: %v", err)
	}
	g, err := New(Options{URL: s.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "no request succeeded: status 503") {
		t.Errorf("every request failed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Run(ctx, 10); err == nil || err.Error() != "interrupted before any timed request" {
		t.Errorf("cancelled: %v", err)
	}
}
