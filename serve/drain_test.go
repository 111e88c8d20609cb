package serve

import (
	"context"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

func inflight(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDrain: with requests accepted and waiting for the device, a shutdown refuses new
// requests with 503 (gRPC Unavailable) and reports not ready, lets every accepted request
// complete with its result, and then returns cleanly.
func TestDrain(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/relu/infer"
	m := ts.models["relu"]
	// Hold the device, so accepted requests wait in the queue.
	d, ok, _ := ts.sched.claim(m, 1)
	if !ok {
		t.Fatal("could not hold the device")
	}
	const n = 8
	rng := rand.New(rand.NewSource(4))
	imgs := make([][]float32, n)
	codes200 := make([]int, n)
	got := make([][]float32, n)
	var wg sync.WaitGroup
	for i := range n {
		imgs[i] = randomImage(rng, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, r := post(t, url, jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
				"shape": []int{1, imgC, imgH, imgW}, "data": imgs[i]}}}), nil)
			codes200[i], got[i] = code, r.floats("pooled")
		}()
	}
	waitFor(t, "the requests to be accepted", func() bool { return inflight(ts.Server) == n })
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	waitFor(t, "the server to drain", func() bool { return !ts.Ready() })

	code, r := post(t, url, jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": []int{1, imgC, imgH, imgW}, "data": imgs[0]}}}), nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(r.Error, "shutting down") {
		t.Errorf("a request while draining: %d %q, want 503", code, r.Error)
	}
	resp, err := httpClient.Get(ts.httpURL + "/v2/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("ready while draining: %d, want 503", resp.StatusCode)
	}
	gc := grpcClient(t, ts.grpcAddr)
	_, err = gc.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(imgs[0])}})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("gRPC request while draining: %v, want Unavailable", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("the server stopped (%v) with %d requests accepted and not answered", err, inflight(ts.Server))
	case <-time.After(50 * time.Millisecond):
	}

	ts.sched.release(d, false)
	wg.Wait()
	for i := range n {
		if codes200[i] != 200 {
			t.Errorf("accepted request %d: status %d, want 200", i, codes200[i])
			continue
		}
		_, want := reluReference(imgs[i])
		compareFloats(t, "pooled", got[i], want)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve after the drain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop after the drain")
	}
}

// TestDeviceFailure: a batch that fails on one device fails its requests with 500 (gRPC
// Internal) naming the device; the server keeps serving on the other device, and the
// metrics count the failure per model and device.
func TestDeviceFailure(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 2, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/relu/infer"
	m := ts.models["relu"]
	broken := m.instances[0]
	// Make the broken device the scheduler's first choice, then break it: its engine's
	// networks are released, so the next inference there fails.
	for _, in := range m.instances {
		in.mu.Lock()
		for b := range in.est {
			in.est[b] = 1
		}
		in.mu.Unlock()
	}
	broken.mu.Lock()
	broken.est[1] = 1e-9
	broken.mu.Unlock()
	broken.engine.Close()

	img := randomImage(rand.New(rand.NewSource(5)), 1)
	_, want := reluReference(img)
	body := jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": []int{1, imgC, imgH, imgW}, "data": img}}})
	code, r := post(t, url, body, nil)
	if code != http.StatusInternalServerError || !strings.Contains(r.Error, broken.dev.name) {
		t.Fatalf("request on the broken device: %d %q, want 500 naming %s", code, r.Error, broken.dev.name)
	}
	for i := range 20 {
		code, r := post(t, url, body, nil)
		if code != 200 {
			t.Fatalf("request %d after the failure: %d %q", i, code, r.Error)
		}
		compareFloats(t, "pooled", r.floats("pooled"), want)
	}
	resp, err := httpClient.Get(ts.httpURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`clhost_inference_failures_total{device="` + broken.dev.name + `",kind="internal",model="relu"} 1`,
		`clhost_inference_requests_total{device="` + m.instances[1].dev.name + `",model="relu"} 20`,
		`clhost_queue_seconds_bucket{device="` + m.instances[1].dev.name + `",model="relu",le=`,
		`clhost_compute_seconds_count{device="` + m.instances[1].dev.name + `",model="relu"} 20`,
		`clhost_batch_size_sum{device="` + m.instances[1].dev.name + `",model="relu"} 20`,
		`clhost_request_seconds_count{device="` + m.instances[1].dev.name + `",model="relu"} 20`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
