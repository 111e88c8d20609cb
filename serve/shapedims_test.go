package serve

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestLongShapes: a shape of a million dimensions, with JSON data or binary, gets a
// short 400 naming the limit, without the server holding the shape as 8-byte values
// nor echoing it; shapes within the limit are still read and checked.
func TestLongShapes(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/relu/infer"
	ones := bytes.Repeat([]byte("1,"), 1_000_000)
	ones = append(ones, '1')
	jsonBody := append(append([]byte(`{"inputs":[{"name":"image","datatype":"FP32","shape":[`), ones...), `],"data":[1]}]}`...)
	binHeader := append(append([]byte(`{"inputs":[{"name":"image","datatype":"FP32","shape":[`), ones...), `],"parameters":{"binary_data_size":4}}]}`...)
	binBody := append(binHeader, 0, 0, 0, 0)
	for _, c := range []struct {
		name    string
		body    []byte
		headers map[string]string
	}{
		{"JSON data", jsonBody, nil},
		{"binary data", binBody, map[string]string{headerJSONLength: itoa(len(binHeader))}},
	} {
		post(t, url, []byte(`{}`), nil) // the connection
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code, r := post(t, url, c.body, c.headers)
		runtime.ReadMemStats(&after)
		if code != 400 || !strings.Contains(r.Error, "more than 64 dimensions") || len(r.Error) > 200 {
			t.Errorf("%s, a shape of a million dimensions: %d %.300q, want a short 400 naming the limit", c.name, code, r.Error)
		}
		// The body is 2 MB; its shape as int64 values would be 8 MB more.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 7<<20 {
			t.Errorf("%s: a 2 MB body with a long shape made the process allocate %d MB", c.name, grew>>20)
		}
	}
	long := `{"inputs":[{"name":"image","datatype":"FP32","shape":[1,3,8,8,1,1,1,1,1,1,1,1],"data":[1]}]}`
	if code, r := post(t, url, []byte(long), nil); code != 400 || !strings.Contains(r.Error, "shape [1 3 8 8 1 1 1 1 … (12 dimensions)], the model takes [-1 3 8 8]") {
		t.Errorf("a shape of 12 dimensions: %d %q, want 400 showing its first 8", code, r.Error)
	}
	for _, bad := range []string{`[1.5,3,8,8]`, `["1",3,8,8]`, `[18446744073709551616,3,8,8]`, `{"a":1}`} {
		body := `{"inputs":[{"name":"image","datatype":"FP32","shape":` + bad + `,"data":[1]}]}`
		if code, r := post(t, url, []byte(body), nil); code != 400 || !strings.Contains(r.Error, "request JSON") {
			t.Errorf("shape %s: %d %q, want 400", bad, code, r.Error)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
