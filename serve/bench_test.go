package serve

import (
	"bytes"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHTTPInfer times one binary-tensor inference of the relu test model over
// loopback HTTP, one request after another: the server's and client's overhead above
// the network's own time (BenchmarkBareInfer).
func BenchmarkHTTPInfer(b *testing.B) {
	ts := startServer(b, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	img := randomImage(rand.New(rand.NewSource(1)), 1)
	body, h := binaryRequest(b, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW},
		"parameters": map[string]any{paramBinarySize: 4 * len(img)}}}, "parameters": map[string]any{"binary_data_output": true}}, float32Bytes(img))
	url := ts.httpURL + "/v2/models/relu/infer"
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set(headerJSONLength, h[headerJSONLength])
		resp, err := httpClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkBareInfer times the relu test model's network alone at batch 1.
func BenchmarkBareInfer(b *testing.B) {
	ts := startServer(b, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	in := ts.models["relu"].instances[0]
	img := randomImage(rand.New(rand.NewSource(1)), 1)
	st := in.staging[1]["image"]
	copy(st.Data, img)
	b.ResetTimer()
	for range b.N {
		if _, err := in.nets[1].Infer(b.Context(), in.staging[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPInferParallel is BenchmarkHTTPInfer from 64 clients at once.
func BenchmarkHTTPInferParallel(b *testing.B) {
	ts := startServer(b, []Source{reluSource()}, 1, Options{MaxBatch: 16, BatchSizes: []int{1, 16}})
	img := randomImage(rand.New(rand.NewSource(1)), 1)
	body, h := binaryRequest(b, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW},
		"parameters": map[string]any{paramBinarySize: 4 * len(img)}}}, "parameters": map[string]any{"binary_data_output": true}}, float32Bytes(img))
	url := ts.httpURL + "/v2/models/relu/infer"
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set(headerJSONLength, h[headerJSONLength])
			resp, err := httpClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || n == 0 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkHandlerInfer times one binary-tensor inference of the relu test model
// through the HTTP handler in-process, without a connection: the server's own work
// per request (parsing, queueing, the network, the response) above
// BenchmarkBareInfer's.
func BenchmarkHandlerInfer(b *testing.B) {
	ts := startServer(b, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	img := randomImage(rand.New(rand.NewSource(1)), 1)
	body, h := binaryRequest(b, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW},
		"parameters": map[string]any{paramBinarySize: 4 * len(img)}}}, "parameters": map[string]any{"binary_data_output": true}}, float32Bytes(img))
	handler := ts.Handler()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/v2/models/relu/infer", bytes.NewReader(body))
		req.Header.Set(headerJSONLength, h[headerJSONLength])
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
