package serve

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestJSONStructsBudgeted: what a request's JSON decodes to beyond its text counts
// against the budget before it is decoded: a million empty inputs, 3 MB, to a 16 MiB
// budget get 413 without the server making a struct of each.
func TestJSONStructsBudgeted(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 16 << 20})
	url := ts.httpURL + "/v2/models/relu/infer"
	body := []byte(`{"inputs":[` + strings.Repeat("{},", 1_000_000) + `{}]}`)
	post(t, url, []byte(`{}`), nil) // the connection
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, r := post(t, url, body, nil)
	runtime.ReadMemStats(&after)
	if code != 413 || !strings.Contains(r.Error, "whole budget") {
		t.Errorf("a million empty inputs: %d %q, want 413", code, r.Error)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 20<<20 {
		t.Errorf("a 3 MB body of a million empty inputs made the process allocate %d MB", grew>>20)
	}
}

// TestManyKeys: a request whose parameters have 100,000 keys is read in linear time
// (each key was checked against every earlier one: 20 s).
func TestManyKeys(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	var b strings.Builder
	b.WriteString(`{"parameters":{`)
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString(`},"inputs":[]}`)
	t0 := time.Now()
	code, r := post(t, ts.httpURL+"/v2/models/relu/infer", []byte(b.String()), nil)
	if took := time.Since(t0); took > 3*time.Second {
		t.Errorf("a request of 100,000 parameters took %v", took)
	}
	if code != 400 || !strings.Contains(r.Error, "is missing") {
		t.Errorf("a request of 100,000 parameters and no input: %d %q, want 400 naming the missing input", code, r.Error)
	}
}
