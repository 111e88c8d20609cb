package serve

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeList: a request's inputs split where they lie read as encoding/json reads
// them, brackets, commas and escaped quotes in strings included.
func TestDecodeList(t *testing.T) {
	for _, doc := range []string{
		`[]`, ` [ ] `, `null`,
		`[{"name":"a","shape":[1,2],"datatype":"FP32","data":[[1,2],[3,4]]}]`,
		`[{"name":"a]\"},{","shape":[1]} , {"name":"b","parameters":{"x":"[{,"}},{}]`,
		`[{"name":"\\\\","data":[]},{"name":"c"}]`,
	} {
		var got restInputList
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		var want []restInput
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual([]restInput(got), want) {
			t.Errorf("%s: %+v, want %+v", doc, got, want)
		}
	}
	var l restOutputList
	if err := json.Unmarshal([]byte(`[{"name":1}]`), &l); err == nil || !strings.Contains(err.Error(), "outputs[0]") {
		t.Errorf("an output named by a number: %v, want an error naming it", err)
	}
}

// TestManyTensors: a request naming a million inputs (100,000 with data), or outputs,
// gets a 400 naming the limit while it is read, without the server making a struct of
// each.
func TestManyTensors(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 1 << 30})
	url := ts.httpURL + "/v2/models/relu/infer"
	data := `{"name":"image","datatype":"FP32","shape":[1,3,8,8],"data":[1]}`
	for _, c := range []struct{ name, body, want string }{
		{"inputs", `{"inputs":[` + strings.Repeat("{},", 1_000_000) + `{}]}`, "more than 1024 inputs"},
		{"inputs with data", `{"inputs":[` + strings.Repeat(data+",", 100_000) + data + `]}`, "more than 1024 inputs"},
		{"outputs", `{"inputs":[],"outputs":[` + strings.Repeat(`{"name":"x"},`, 1_000_000) + `{}]}`, "more than 1024 outputs"},
	} {
		post(t, url, []byte(`{}`), nil) // the connection
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code, r := post(t, url, []byte(c.body), nil)
		runtime.ReadMemStats(&after)
		if code != 400 || !strings.Contains(r.Error, c.want) {
			t.Errorf("a million %s: %d %q, want 400 naming the limit", c.name, code, r.Error)
		}
		// The body is read into a buffer of its size, rounded to a power of two.
		if grew, limit := after.TotalAlloc-before.TotalAlloc, uint64(3*len(c.body)); grew > limit {
			t.Errorf("a million %s (%d MB): the process allocated %d MB", c.name, len(c.body)>>20, grew>>20)
		}
	}
}
