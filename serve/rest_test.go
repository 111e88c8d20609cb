package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"strconv"
	"testing"
)

func randomImage(rng *rand.Rand, items int) []float32 {
	v := make([]float32, items*imgC*imgH*imgW)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// restResponse is the JSON of an inference response.
type restResponse struct {
	ModelName  string            `json:"model_name"`
	ID         string            `json:"id"`
	Parameters map[string]any    `json:"parameters"`
	Outputs    []restOutputTest  `json:"outputs"`
	Error      string            `json:"error"`
	raw        map[string][]byte // binary outputs' data by name
}

type restOutputTest struct {
	Name       string         `json:"name"`
	Datatype   string         `json:"datatype"`
	Shape      []int64        `json:"shape"`
	Parameters map[string]any `json:"parameters"`
	Data       []float64      `json:"data"`
}

// post sends an inference request and decodes the response, binary outputs included.
func post(t testing.TB, url string, body []byte, headers map[string]string) (int, *restResponse) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, decodeResponse(t, resp.Header, b)
}

func decodeResponse(t testing.TB, h http.Header, b []byte) *restResponse {
	t.Helper()
	var r restResponse
	head := b
	if v := h.Get(headerJSONLength); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n > len(b) {
			t.Fatalf("bad %s %q for a %d-byte body", headerJSONLength, v, len(b))
		}
		head = b[:n]
		b = b[n:]
	} else {
		b = nil
	}
	if err := json.Unmarshal(head, &r); err != nil {
		t.Fatalf("response JSON: %v: %s", err, head)
	}
	r.raw = map[string][]byte{}
	for _, o := range r.Outputs {
		if size, ok := o.Parameters[paramBinarySize]; ok {
			n := int(size.(float64))
			r.raw[o.Name] = b[:n]
			b = b[n:]
		}
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left after the binary outputs", len(b))
	}
	return &r
}

// floats returns an output's values, from JSON or binary data.
func (r *restResponse) floats(name string) []float32 {
	for _, o := range r.Outputs {
		if o.Name != name {
			continue
		}
		if raw, ok := r.raw[name]; ok {
			v := make([]float32, len(raw)/4)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			return v
		}
		v := make([]float32, len(o.Data))
		for i, x := range o.Data {
			v[i] = float32(x)
		}
		return v
	}
	return nil
}

func jsonRequest(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// binaryRequest is a request whose inputs travel as binary data after the JSON.
func binaryRequest(t testing.TB, header map[string]any, blobs ...[]byte) ([]byte, map[string]string) {
	t.Helper()
	h := jsonRequest(t, header)
	body := append([]byte(nil), h...)
	for _, b := range blobs {
		body = append(body, b...)
	}
	return body, map[string]string{headerJSONLength: strconv.Itoa(len(h)), "Content-Type": "application/octet-stream"}
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func compareFloats(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !closeEnough(got[i], want[i]) {
			t.Fatalf("%s[%d] = %g, want %g (tolerance %g relative)", what, i, got[i], want[i], Tolerance)
		}
	}
}

// TestRESTInfer: JSON and binary tensors, a batch of two items in one request, requested
// outputs, and the request id and parameters echoed, against the CPU reference.
func TestRESTInfer(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	rng := rand.New(rand.NewSource(1))
	img := randomImage(rng, 2)
	feat0, pool0 := reluReference(img[:len(img)/2])
	feat1, pool1 := reluReference(img[len(img)/2:])
	url := ts.httpURL + "/v2/models/relu/infer"

	t.Run("json", func(t *testing.T) {
		body := jsonRequest(t, map[string]any{
			"id":         "req-42",
			"parameters": map[string]any{"tag": "x", "n": 3, "flag": true},
			"inputs":     []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW}, "data": img[:len(img)/2]}},
		})
		code, r := post(t, url, body, nil)
		if code != 200 {
			t.Fatalf("status %d: %s", code, r.Error)
		}
		if r.ID != "req-42" || r.ModelName != "relu" {
			t.Errorf("id %q model %q, want req-42 relu", r.ID, r.ModelName)
		}
		if r.Parameters["tag"] != "x" || r.Parameters["n"] != 3.0 || r.Parameters["flag"] != true {
			t.Errorf("parameters %v, want the request's echoed", r.Parameters)
		}
		if len(r.Outputs) != 2 || fmt.Sprint(r.Outputs[1].Shape) != fmt.Sprint([]int{1, convF, imgH / 2, imgW / 2}) {
			t.Fatalf("outputs %+v", r.Outputs)
		}
		compareFloats(t, "features", r.floats("features"), feat0)
		compareFloats(t, "pooled", r.floats("pooled"), pool0)
	})

	t.Run("binary", func(t *testing.T) {
		body, h := binaryRequest(t, map[string]any{
			"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{2, imgC, imgH, imgW},
				"parameters": map[string]any{paramBinarySize: 4 * len(img)}}},
			"outputs": []map[string]any{{"name": "pooled", "parameters": map[string]any{"binary_data": true, "mine": "kept"}}},
		}, float32Bytes(img))
		code, r := post(t, url, body, h)
		if code != 200 {
			t.Fatalf("status %d: %s", code, r.Error)
		}
		if len(r.Outputs) != 1 || r.Outputs[0].Name != "pooled" || r.Outputs[0].Parameters["mine"] != "kept" {
			t.Fatalf("outputs %+v, want pooled alone with its parameters", r.Outputs)
		}
		if fmt.Sprint(r.Outputs[0].Shape) != fmt.Sprint([]int{2, convF, imgH / 2, imgW / 2}) {
			t.Errorf("shape %v", r.Outputs[0].Shape)
		}
		compareFloats(t, "pooled", r.floats("pooled"), append(append([]float32(nil), pool0...), pool1...))
	})

	t.Run("binary_data_output", func(t *testing.T) {
		body := jsonRequest(t, map[string]any{
			"parameters": map[string]any{"binary_data_output": true},
			"inputs":     []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW}, "data": img[len(img)/2:]}},
		})
		code, r := post(t, url, body, nil)
		if code != 200 {
			t.Fatalf("status %d: %s", code, r.Error)
		}
		if len(r.raw) != 2 {
			t.Fatalf("%d binary outputs, want 2", len(r.raw))
		}
		compareFloats(t, "features", r.floats("features"), feat1)
	})

}
