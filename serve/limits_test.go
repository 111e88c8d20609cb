package serve

import (
	"context"
	"io"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// claimItems makes an input of the relu model claim 256 MiB of float32: [349525,3,8,8]
// holds 67,108,800 values, within what a request of the default body limit may carry.
const claimItems = 349525

// TestClaimsAllocateNothing: 16 concurrent tiny requests, each claiming 256 MiB of
// input with one value of data, get 400 and make the server allocate at most 64 MB in
// all — over REST JSON, the binary extension, gRPC raw contents and typed contents —
// and a good request is answered after them.
func TestClaimsAllocateNothing(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/relu/infer"
	gc := grpcClient(t, ts.grpcAddr)
	shape := []int64{claimItems, imgC, imgH, imgW}
	one := float32Bytes([]float32{1})
	binBody, binHeaders := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": shape, "parameters": map[string]any{paramBinarySize: 4}}}}, one)
	jsonBody := []byte(`{"inputs":[{"name":"image","datatype":"FP32","shape":[` + strconv.Itoa(claimItems) + `,3,8,8],"data":[1]}]}`)
	grpcInput := []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: shape}}
	cases := []struct {
		name string
		send func() (ok bool, what string)
	}{
		{"REST JSON", func() (bool, string) {
			code, r := post(t, url, jsonBody, nil)
			return code == 400 && strings.Contains(r.Error, "holds 1 values"), strconv.Itoa(code) + " " + r.Error
		}},
		{"REST binary", func() (bool, string) {
			code, r := post(t, url, binBody, binHeaders)
			return code == 400 && strings.Contains(r.Error, "4 bytes of data"), strconv.Itoa(code) + " " + r.Error
		}},
		{"gRPC raw", func() (bool, string) {
			_, err := gc.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu", Inputs: grpcInput, RawInputContents: [][]byte{one}})
			return status.Code(err) == codes.InvalidArgument && strings.Contains(err.Error(), "4 bytes of data"), status.Convert(err).String()
		}},
		{"gRPC typed", func() (bool, string) {
			_, err := gc.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
				Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: shape,
					Contents: &pb.InferTensorContents{Fp32Contents: []float32{1}}}}})
			return status.Code(err) == codes.InvalidArgument && strings.Contains(err.Error(), "contents hold 1 values"), status.Convert(err).String()
		}},
	}
	for _, c := range cases {
		c.send() // the connection, and the client's own first-use allocations
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ok, what := c.send(); !ok {
					t.Errorf("%s: a claim of 256 MiB with one value: %s, want 400 naming the count", c.name, what)
				}
			}()
		}
		wg.Wait()
		runtime.ReadMemStats(&after)
		// TotalAlloc counts every byte allocated, freed or not: it bounds the peak.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: 16 claims of 256 MiB made the process allocate %d MB, want at most 64", c.name, grew>>20)
		} else {
			t.Logf("%s: 16 claims of 256 MiB: %.1f MB allocated in the process", c.name, float64(grew)/(1<<20))
		}
	}
	img := randomImage(rand.New(rand.NewSource(9)), 1)
	_, want := reluReference(img)
	code, r := post(t, url, jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": []int{1, imgC, imgH, imgW}, "data": img}}}), nil)
	if code != 200 {
		t.Fatalf("a good request after the claims: %d %s", code, r.Error)
	}
	compareFloats(t, "pooled", r.floats("pooled"), want)
}

// TestInflightBudget: requests in flight hold their bytes of the server's budget; one
// that does not fit in what is left gets 429 with Retry-After (gRPC
// RESOURCE_EXHAUSTED), one that needs more than the whole budget 413, and the requests
// held are answered correctly and give their bytes back.
func TestInflightBudget(t *testing.T) {
	img := randomImage(rand.New(rand.NewSource(3)), 1)
	body, headers := binaryRequest(t, map[string]any{"parameters": map[string]any{paramBinaryAll: true},
		"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
			"shape": []int{1, imgC, imgH, imgW}, "parameters": map[string]any{paramBinarySize: 4 * len(img)}}}}, float32Bytes(img))
	// One item: its body, what its JSON decodes to, its binary FP32 input read where
	// it lies, and its outputs
	// (features 4×8×8, pooled 4×4×4), sent as binary where they lie.
	jsonLen, _ := strconv.Atoi(headers[headerJSONLength])
	each := int64(len(body)) + jsonStructBytes(body[:jsonLen]) + 4*(convF*imgH*imgW+convF*imgH*imgW/4)
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 2*each + each/2})
	url := ts.httpURL + "/v2/models/relu/infer"
	_, want := reluReference(img)
	d, ok, _ := ts.sched.claim(ts.models["relu"], 1)
	if !ok {
		t.Fatal("could not hold the device")
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, r := post(t, url, body, headers)
			if code != 200 {
				t.Errorf("a request within the budget: %d %s", code, r.Error)
				return
			}
			compareFloats(t, "pooled", r.floats("pooled"), want)
		}()
	}
	waitFor(t, "two requests to hold their bytes", func() bool { return ts.budget.used.Load() == 2*each })

	req, err := http.NewRequest("POST", url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(text), `"error":"the server is busy`) {
		t.Errorf("a request beyond the budget: %d Retry-After %q %s, want 429", resp.StatusCode, resp.Header.Get("Retry-After"), text)
	}
	gc := grpcClient(t, ts.grpcAddr)
	_, err = gc.ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(img)}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "busy") {
		t.Errorf("a gRPC request beyond the budget: %v, want RESOURCE_EXHAUSTED", err)
	}

	ts.sched.release(d, false)
	wg.Wait()
	waitFor(t, "the bytes to be given back", func() bool { return ts.budget.used.Load() == 0 })
	big := randomImage(rand.New(rand.NewSource(4)), 4)
	bigBody, bigHeaders := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": []int{4, imgC, imgH, imgW}, "parameters": map[string]any{paramBinarySize: 4 * len(big)}}}}, float32Bytes(big))
	if code, r := post(t, url, bigBody, bigHeaders); code != http.StatusRequestEntityTooLarge || !strings.Contains(r.Error, "whole budget") {
		t.Errorf("a request larger than the whole budget: %d %q, want 413", code, r.Error)
	}
	// A body of unknown length (chunked) takes its bytes as they arrive: one past the
	// whole budget is refused while it is read, not after.
	chunked, err := http.NewRequest("POST", url, io.MultiReader(strings.NewReader(string(body)), strings.NewReader(strings.Repeat(" ", int(3*each)))))
	if err != nil {
		t.Fatal(err)
	}
	chunked.Header.Set("Content-Type", "application/json")
	resp, err = httpClient.Do(chunked)
	if err != nil {
		t.Fatal(err)
	}
	text, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(text), "whole budget") {
		t.Errorf("a chunked body past the whole budget: %d %s, want 413", resp.StatusCode, text)
	}
	resp, err = httpClient.Get(ts.httpURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"clhost_inflight_bytes 0", "clhost_inflight_bytes_limit " + strconv.FormatInt(2*each+each/2, 10),
		`clhost_inference_failures_total{device="none",kind="overloaded",model="relu"} 2`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestMemoryLimit: the default budget's memory is the machine's, or a container's
// cgroup limit when that is lower; "max" and v1's "no limit" leave the machine's.
func TestMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	meminfo := write("meminfo", "MemTotal:       16777216 kB\nMemFree:         1024 kB\n")
	const machine = 16 << 30
	for _, c := range []struct {
		name    string
		cgroups []string
		want    int64
	}{
		{"no cgroup", []string{filepath.Join(dir, "absent")}, machine},
		{"v2 limit", []string{write("v2", "8589934592\n")}, 8 << 30},
		{"v2 max", []string{write("v2max", "max\n")}, machine},
		{"v1 no limit", []string{write("v1", "9223372036854771712\n")}, machine},
		{"v1 limit", []string{write("v2max2", "max\n"), write("v1lim", "2147483648\n")}, 2 << 30},
	} {
		if got := memoryLimit(meminfo, c.cgroups...); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
	if got := memoryLimit(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("no meminfo: %d, want 0 (unknown)", got)
	}
	if d := DefaultMaxInflightBytes(); d < 256<<20 {
		t.Errorf("DefaultMaxInflightBytes() = %d, below its floor of 256 MiB", d)
	}
}
