package serve

import (
	"math/rand"
	"strings"
	"testing"
)

// TestAnswerBytesBudgeted: a REST answer's JSON text counts against the budget of
// bytes in flight: an answer whose text alone would take the request past the whole
// budget gets 413, and the same request asking for binary outputs is answered.
func TestAnswerBytesBudgeted(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 32 << 10})
	url := ts.httpURL + "/v2/models/relu/infer"
	img := randomImage(rand.New(rand.NewSource(12)), 4)
	// Its body (about 8 KB), inputs (3 KB) and outputs (5 KB) fit in 32 KiB; the
	// outputs as JSON text take up to 20 KB more.
	req := func(binary bool) map[string]any {
		return map[string]any{"parameters": map[string]any{paramBinaryAll: binary},
			"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{4, imgC, imgH, imgW}, "data": img}}}
	}
	if code, r := post(t, url, jsonRequest(t, req(false)), nil); code != 413 || !strings.Contains(r.Error, "whole budget") {
		t.Errorf("an answer whose JSON would pass the budget: %d %q, want 413", code, r.Error)
	}
	code, r := post(t, url, jsonRequest(t, req(true)), nil)
	if code != 200 {
		t.Fatalf("the same request with binary outputs: %d %q", code, r.Error)
	}
	_, want := reluReference(img[:imgC*imgH*imgW])
	compareFloats(t, "pooled", r.floats("pooled")[:len(want)], want)
	waitFor(t, "the budget to be given back", func() bool { return ts.budget.used.Load() == 0 })
}

// TestJSONDataBudgeted: the copy encoding/json makes of a request's JSON data counts
// against the budget: a request whose body, data, inputs and outputs fit only without
// that copy gets 413; its binary form is answered.
func TestJSONDataBudgeted(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 20 << 10})
	url := ts.httpURL + "/v2/models/relu/infer"
	img := randomImage(rand.New(rand.NewSource(13)), 4)
	// Its body (about 8 KB), inputs (3 KB) and outputs (5 KB) fit in 20 KiB; with the
	// copy of its data (8 KB), they do not.
	body := jsonRequest(t, map[string]any{"parameters": map[string]any{paramBinaryAll: true},
		"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{4, imgC, imgH, imgW}, "data": img}}})
	if code, r := post(t, url, body, nil); code != 413 || !strings.Contains(r.Error, "whole budget") {
		t.Errorf("a JSON request whose data's copy passes the budget: %d %q, want 413", code, r.Error)
	}
	bin, headers := binaryRequest(t, map[string]any{"parameters": map[string]any{paramBinaryAll: true},
		"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{4, imgC, imgH, imgW},
			"parameters": map[string]any{paramBinarySize: 4 * len(img)}}}}, float32Bytes(img))
	if code, r := post(t, url, bin, headers); code != 200 {
		t.Errorf("the same request in binary: %d %q", code, r.Error)
	}
}
