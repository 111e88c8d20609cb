package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/model"
)

// brokenConfig holds the broken kernels of clhost's own test corpus.
var brokenConfig = filepath.Join("..", "cmd", "clhost", "testdata", "broken", "broken.xml")

// brokenSource is x → Relu → a broken custom layer of type typ → Relu.
func brokenSource(name, typ string) Source {
	return Source{Name: name, Platform: "clhost_clm", Configs: []string{brokenConfig},
		Load: func(batch int, _ *customlayer.Registry) (*model.Model, error) {
			if batch == 0 {
				batch = 1
			}
			b := model.NewBuilder(name)
			x := b.Input("x", model.Float32, batch, 4, 8, 8)
			r0 := b.Layer("Relu", "r0", []string{x})
			c := b.Tensor("c", model.Float32, batch, 4, 8, 8)
			b.LayerOutputs(typ, "c1", []string{r0}, []string{c})
			b.Output(b.Layer("Relu", "r2", []string{c}))
			return b.Build()
		}}
}

// TestBrokenCustomLayerNotServed: a model whose custom layer leaves output unwritten,
// or writes past it, is checked at load and not served — its readiness is false with
// the reason, its requests get 503 naming the layer — while the good model beside it is.
func TestBrokenCustomLayerNotServed(t *testing.T) {
	ts := startServer(t, []Source{reluSource(), brokenSource("unwritten", "Unwritten"), brokenSource("past", "PastOne")}, 1, Options{MaxBatch: 4})
	get := func(path string) (int, map[string]any) {
		resp, err := httpClient.Get(ts.httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	for name, want := range map[string]string{"unwritten": "never written", "past": "past the end of output 0"} {
		code, body := get("/v2/models/" + name + "/ready")
		reason, _ := body["reason"].(string)
		if code != http.StatusServiceUnavailable || body["ready"] != false || !strings.Contains(reason, "c1") || !strings.Contains(reason, want) {
			t.Errorf("%s ready: %d %v", name, code, body)
		}
		req := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4,8,8],"data":[` + strings.Repeat("1,", 255) + `1]}]}`
		resp, err := httpClient.Post(ts.httpURL+"/v2/models/"+name+"/infer", "application/json", strings.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(text), "is not served") || !strings.Contains(string(text), "c1") {
			t.Errorf("%s infer: %d %s", name, resp.StatusCode, text)
		}
	}
	if code, body := get("/v2/models/relu/ready"); code != http.StatusOK || body["ready"] != true {
		t.Errorf("relu ready: %d %v", code, body)
	}
	if ts.Ready() {
		t.Error("the server is ready with models it does not serve")
	}
}
