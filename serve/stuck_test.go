package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clhost/clhost/customlayer"
	"github.com/clhost/clhost/model"
)

// poisonSource is x → a custom layer of type typ (PoisonSpin spins for seconds when
// x[0] is 1000, PoisonOverrun writes past its output when x[0] is 2000) → Relu.
func poisonSource(name, typ string) Source {
	return Source{Name: name, Platform: "clhost_clm", Configs: []string{filepath.Join("testdata", "stuck", "stuck.xml")},
		Load: func(batch int, _ *customlayer.Registry) (*model.Model, error) {
			b := model.NewBuilder(name)
			x := b.Input("x", model.Float32, max(batch, 1), 4)
			c := b.Tensor("c", model.Float32, max(batch, 1), 4)
			b.LayerOutputs(typ, "p1", []string{x}, []string{c})
			b.Output(b.Layer("Relu", "r1", []string{c}))
			return b.Build()
		}}
}

// TestStuckDeviceLeavesService: a request whose kernel does not finish within the
// inference timeout is answered with an error naming the custom layer; that device is
// out of service from then on. With a second device the next requests are answered
// there, correctly; with none left they fail at once (503, the device out of service)
// instead of waiting.
func TestStuckDeviceLeavesService(t *testing.T) {
	post := func(ts *testServer, first float32) (int, string, time.Duration) {
		return postPoison(t, ts, "stuck", first)
	}
	for _, devices := range []int{2, 1} {
		t.Run(map[int]string{1: "OneDevice", 2: "TwoDevices"}[devices], func(t *testing.T) {
			ts := startServer(t, []Source{poisonSource("stuck", "PoisonSpin")}, devices, Options{MaxBatch: 1, InferTimeout: 300 * time.Millisecond})
			code, text, _ := post(ts, 1000)
			if code != http.StatusServiceUnavailable || !strings.Contains(text, "p1") || !strings.Contains(text, "has not finished") {
				t.Fatalf("the poisoned request: %d %s", code, text)
			}
			for i := 0; i < 3; i++ {
				code, text, took := post(ts, 1)
				if devices == 2 {
					var r struct {
						Outputs []struct{ Data []float32 } `json:"outputs"`
					}
					if code != http.StatusOK || json.Unmarshal([]byte(text), &r) != nil || len(r.Outputs) != 1 ||
						!slices.Equal(r.Outputs[0].Data, []float32{1, 0, 3, 0}) {
						t.Errorf("request %d after the stuck one: %d %s", i, code, text)
					}
					continue
				}
				if code != http.StatusServiceUnavailable || !strings.Contains(text, "out of service") || !strings.Contains(text, "p1") || took > 5*time.Second {
					t.Errorf("request %d to a server whose only device is stuck: %d after %s: %s", i, code, took, text)
				}
			}
		})
	}
}

// postPoison sends x = [first, -2, 3, -4] to model and returns the answer.
func postPoison(t *testing.T, ts *testServer, model string, first float32) (int, string, time.Duration) {
	t.Helper()
	body := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[` + fmtFloat(first) + `,-2,3,-4]}]}`
	start := time.Now()
	resp, err := httpClient.Post(ts.httpURL+"/v2/models/"+model+"/infer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text), time.Since(start)
}

// TestGuardViolationSparesNextRequest: a request whose kernel writes past its output is
// answered with an error naming the layer and the overrun; the guards are restored, and
// the next requests on the same device are answered correctly.
func TestGuardViolationSparesNextRequest(t *testing.T) {
	ts := startServer(t, []Source{poisonSource("overrun", "PoisonOverrun")}, 1, Options{MaxBatch: 1})
	code, text, _ := postPoison(t, ts, "overrun", 2000)
	if code == http.StatusOK || !strings.Contains(text, "p1") || !strings.Contains(text, "past the end of output 0") {
		t.Fatalf("the overrunning request: %d %s", code, text)
	}
	for i := 0; i < 3; i++ {
		code, text, _ := postPoison(t, ts, "overrun", 1)
		var r struct {
			Outputs []struct{ Data []float32 } `json:"outputs"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(text), &r) != nil || len(r.Outputs) != 1 || !slices.Equal(r.Outputs[0].Data, []float32{1, 0, 3, 0}) {
			t.Errorf("request %d after the overrun: %d %s", i, code, text)
		}
	}
}

func fmtFloat(v float32) string {
	b, _ := json.Marshal(v)
	return string(b)
}
