package serve

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNodeGRPC: a client in another language — Node with @grpc/grpc-js and
// @grpc/proto-loader, reading grpc_service.proto at run time — checks health and
// metadata and runs an inference with raw_input_contents.
func TestNodeGRPC(t *testing.T) {
	dir := filepath.Join("testdata", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js")); err != nil {
		t.Fatalf("the Node client's libraries are not installed: run scripts/serve-test-deps.sh (make serve-deps): %v", err)
	}
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	img := randomImage(rand.New(rand.NewSource(6)), 1)
	imgJSON, _ := json.Marshal(img)
	proto, _ := filepath.Abs(filepath.Join("inferencepb", "grpc_service.proto"))
	cmd := exec.Command("node", "client.js", ts.grpcAddr, proto, string(imgJSON))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, stderr.String())
	}
	var res struct {
		Live, Ready bool
		Input       struct {
			Name, Datatype string
			Shape          []int
		}
		ID     string
		Output struct {
			Name, Datatype string
			Shape          []int
		}
		Pooled           []float32
		UnknownModelCode int
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}
	if !res.Live || !res.Ready || res.Input.Name != "image" || res.Input.Datatype != "FP32" || res.Input.Shape[0] != -1 {
		t.Errorf("health and metadata from Node: %+v", res)
	}
	if res.ID != "node-1" || res.Output.Name != "pooled" || res.Output.Shape[0] != 1 {
		t.Errorf("response id %q output %+v", res.ID, res.Output)
	}
	if res.UnknownModelCode != 5 { // NOT_FOUND
		t.Errorf("unknown model: gRPC code %d, want 5 (NOT_FOUND)", res.UnknownModelCode)
	}
	_, want := reluReference(img)
	compareFloats(t, "pooled from Node", res.Pooled, want)
}

// TestCurl: REST with curl — health, metadata, JSON inference, and the binary tensor
// extension both ways.
func TestCurl(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	curl := func(args ...string) (code int, headers, body string) {
		t.Helper()
		args = append([]string{"-sS", "-D", "-", "-o", "-", "--max-time", "60"}, args...)
		out, err := exec.Command("curl", args...).Output()
		if err != nil {
			t.Fatalf("curl %s: %v", strings.Join(args, " "), err)
		}
		head, body, _ := strings.Cut(string(out), "\r\n\r\n")
		status := strings.Fields(head)
		code, _ = strconv.Atoi(status[1])
		return code, head, body
	}
	if code, _, body := curl(ts.httpURL + "/v2/health/live"); code != 200 || !strings.Contains(body, `"live":true`) {
		t.Errorf("live: %d %s", code, body)
	}
	if code, _, body := curl(ts.httpURL + "/v2"); code != 200 || !strings.Contains(body, "binary_tensor_data") {
		t.Errorf("server metadata: %d %s", code, body)
	}
	if code, _, body := curl(ts.httpURL + "/v2/models/relu"); code != 200 || !strings.Contains(body, `"shape":[-1,3,8,8]`) {
		t.Errorf("model metadata: %d %s", code, body)
	}
	if code, _, _ := curl(ts.httpURL + "/v2/models/relu/ready"); code != 200 {
		t.Errorf("model ready: %d", code)
	}

	img := randomImage(rand.New(rand.NewSource(8)), 1)
	_, want := reluReference(img)
	req := jsonRequest(t, map[string]any{"id": "curl-1", "inputs": []map[string]any{{"name": "image", "datatype": "FP32",
		"shape": []int{1, imgC, imgH, imgW}, "data": img}}, "outputs": []map[string]any{{"name": "pooled"}}})
	code, head, body := curl("-H", "Content-Type: application/json", "--data-binary", string(req), ts.httpURL+"/v2/models/relu/infer")
	if code != 200 {
		t.Fatalf("JSON inference: %d %s", code, body)
	}
	r := decodeResponse(t, headerMap(head), []byte(body))
	if r.ID != "curl-1" {
		t.Errorf("id %q", r.ID)
	}
	compareFloats(t, "pooled (JSON, curl)", r.floats("pooled"), want)

	bin, h := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW},
		"parameters": map[string]any{paramBinarySize: 4 * len(img)}}}, "parameters": map[string]any{"binary_data_output": true}}, float32Bytes(img))
	file := filepath.Join(t.TempDir(), "request.bin")
	if err := os.WriteFile(file, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	code, head, body = curl("-H", headerJSONLength+": "+h[headerJSONLength], "-H", "Content-Type: application/octet-stream",
		"--data-binary", "@"+file, ts.httpURL+"/v2/models/relu/infer")
	if code != 200 {
		t.Fatalf("binary inference: %d %s", code, body)
	}
	r = decodeResponse(t, headerMap(head), []byte(body))
	if len(r.raw) != 2 {
		t.Fatalf("%d binary outputs, want 2", len(r.raw))
	}
	compareFloats(t, "pooled (binary, curl)", r.floats("pooled"), want)

	if code, _, body := curl("-H", "Content-Type: application/json", "--data-binary", `{"inputs":[{"name":"image","datatype":"FP32","shape":[1,3,8,8],"data":[1,2]}]}`,
		ts.httpURL+"/v2/models/relu/infer"); code != 400 || !strings.Contains(body, "holds 2 values") {
		t.Errorf("bad request with curl: %d %s", code, body)
	}
}

// headerMap parses the header block curl -D printed.
func headerMap(head string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(head, "\r\n")[1:] {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}
