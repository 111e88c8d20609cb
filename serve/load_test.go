package serve

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/clhost/clhost/cl"
	pb "github.com/clhost/clhost/serve/inferencepb"
)

// metricSum adds up a counter or a histogram's sample count and sum over every label
// set of the named family.
func metricSum(t testing.TB, s *Server, family string) (count uint64, sum float64) {
	t.Helper()
	fams, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				sum += m.GetCounter().GetValue()
				count += uint64(m.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM:
				count += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return count, sum
}

// TestLoad: 64 clients send 10,240 requests over REST (JSON and binary) and gRPC to a
// server with two engines; every response matches the same image's single-request
// result, requests are batched, each is answered once, and no goroutine or OpenCL
// object is left behind.
func TestLoad(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 2, Options{MaxBatch: 4, MaxDelay: time.Millisecond})
	const images, clients, perClient = 16, 64, 160
	row := imgC * imgH * imgW
	rng := rand.New(rand.NewSource(3))
	imgs := make([][]float32, images)
	single := make([][]float32, images) // pooled, as a request of one image alone gets it
	url := ts.httpURL + "/v2/models/relu/infer"
	for i := range imgs {
		imgs[i] = randomImage(rng, 1)
		code, r := post(t, url, jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
			"shape": []int{1, imgC, imgH, imgW}, "data": imgs[i]}}}), nil)
		if code != 200 {
			t.Fatalf("single request: %d %s", code, r.Error)
		}
		single[i] = r.floats("pooled")
		_, want := reluReference(imgs[i])
		compareFloats(t, "single-request pooled", single[i], want)
	}
	gc := grpcClient(t, ts.grpcAddr)
	if _, err := gc.ServerLive(context.Background(), &pb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	httpClient.CloseIdleConnections()
	goroutines := settle(0)
	objects := cl.LiveObjects()
	requestsBefore, _ := metricSum(t, ts.Server, "clhost_inference_requests_total")

	var failures atomic.Int64
	var firstErr sync.Once
	fail := func(format string, args ...any) {
		failures.Add(1)
		firstErr.Do(func() { t.Errorf(format, args...) })
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perClient {
				// One request in eight carries two images.
				a, b := (c*7+j)%images, -1
				if j%8 == 3 {
					b = (a + 5) % images
				}
				items := imgs[a]
				if b >= 0 {
					items = append(append([]float32(nil), imgs[a]...), imgs[b]...)
				}
				n := len(items) / row
				var got []float32
				switch c % 4 {
				case 0:
					res, err := gc.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
						Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{int64(n), imgC, imgH, imgW}}},
						Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "pooled"}},
						RawInputContents: [][]byte{float32Bytes(items)}})
					if err != nil {
						fail("gRPC client %d request %d: %v", c, j, err)
						continue
					}
					got = bytesFloat32(res.RawOutputContents[0])
				case 1:
					code, r := post(t, url, jsonRequest(t, map[string]any{"id": fmt.Sprint(c, "/", j),
						"inputs":  []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{n, imgC, imgH, imgW}, "data": items}},
						"outputs": []map[string]any{{"name": "pooled"}}}), nil)
					if code != 200 || r.ID != fmt.Sprint(c, "/", j) {
						fail("JSON client %d request %d: %d %q id %q", c, j, code, r.Error, r.ID)
						continue
					}
					got = r.floats("pooled")
				default:
					body, h := binaryRequest(t, map[string]any{
						"inputs":  []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{n, imgC, imgH, imgW}, "parameters": map[string]any{paramBinarySize: 4 * len(items)}}},
						"outputs": []map[string]any{{"name": "pooled", "parameters": map[string]any{"binary_data": true}}}}, float32Bytes(items))
					code, r := post(t, url, body, h)
					if code != 200 {
						fail("binary client %d request %d: %d %q", c, j, code, r.Error)
						continue
					}
					got = r.floats("pooled")
				}
				want := single[a]
				if b >= 0 {
					want = append(append([]float32(nil), single[a]...), single[b]...)
				}
				if len(got) != len(want) {
					fail("client %d request %d: %d values, want %d", c, j, len(got), len(want))
					continue
				}
				for k := range got {
					if !closeEnough(got[k], want[k]) {
						fail("client %d request %d: pooled[%d] = %g, the single-request result is %g", c, j, k, got[k], want[k])
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := clients * perClient
	t.Logf("%d requests from %d clients in %v (%.0f/s)", total, clients, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	if failures.Load() > 0 {
		t.Fatalf("%d of %d requests failed or differed", failures.Load(), total)
	}
	requests, _ := metricSum(t, ts.Server, "clhost_inference_requests_total")
	if got := requests - requestsBefore; got != uint64(total) {
		t.Errorf("the server answered %d requests, %d were sent", got, total)
	}
	if n := doubleAnswers.Load(); n != 0 {
		t.Errorf("%d requests were answered twice", n)
	}
	batches, items := metricSum(t, ts.Server, "clhost_batch_size")
	t.Logf("%d batches of %.2f items on average", batches, items/float64(batches))
	if items/float64(batches) < 1.5 {
		t.Errorf("batches averaged %.2f items under 64 clients: requests were not batched", items/float64(batches))
	}
	httpClient.CloseIdleConnections()
	if n := settle(goroutines); n > goroutines {
		t.Errorf("%d goroutines after the load, %d before", n, goroutines)
	}
	if n := cl.LiveObjects(); n != objects {
		t.Errorf("%d live OpenCL objects after the load, %d before", n, objects)
	}
}
