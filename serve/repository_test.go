package serve

import (
	"context"
	"encoding/json"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clhost/clhost/host"
	pb "github.com/clhost/clhost/serve/inferencepb"
)

// brokenRepository is a model repository with one good model (relu) beside broken
// ones: a corrupt model file, a configuration whose kernel source climbs out of the
// folder, one whose kernel source is a symlink to a file outside it, a model file that
// is a symlink to one outside, and an OpenVINO IR whose weights are. It returns the folder and, per broken model, a text
// its error must hold.
func brokenRepository(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	outside := t.TempDir()
	m, err := reluModel(1, nil)
	saveModel(t, m, err, filepath.Join(dir, "relu", "relu.clm"))
	sample, err := os.ReadFile(reluConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"custom_layer_example.xml", "custom_layer_kernel.cl"} {
		copyFile(t, filepath.Join(filepath.Dir(reluConfig), f), filepath.Join(dir, "relu", f))
	}
	if err := os.MkdirAll(filepath.Join(dir, "bad"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad", "bad.clm"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A kernel source named by a path that leaves the folder.
	saveModel(t, m, nil, filepath.Join(dir, "escape", "escape.clm"))
	climb := strings.Replace(string(sample), `filename="custom_layer_kernel.cl"`, `filename="../../../../../../../../etc/passwd"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "escape", "escape.xml"), []byte(climb), 0o644); err != nil {
		t.Fatal(err)
	}
	// A kernel source that includes a header outside the folder.
	saveModel(t, m, nil, filepath.Join(dir, "inc", "inc.clm"))
	copyFile(t, reluConfig, filepath.Join(dir, "inc", "inc.xml"))
	kernel, err := os.ReadFile(filepath.Join(filepath.Dir(reluConfig), "custom_layer_kernel.cl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inc", "custom_layer_kernel.cl"), append([]byte("#include \"../../../../../../../../etc/passwd\"\n"), kernel...), 0o644); err != nil {
		t.Fatal(err)
	}
	// A kernel source that is a symlink to a file outside.
	saveModel(t, m, nil, filepath.Join(dir, "link", "link.clm"))
	copyFile(t, filepath.Join(filepath.Dir(reluConfig), "custom_layer_kernel.cl"), filepath.Join(outside, "kernel.cl"))
	copyFile(t, reluConfig, filepath.Join(dir, "link", "link.xml"))
	if err := os.Symlink(filepath.Join(outside, "kernel.cl"), filepath.Join(dir, "link", "custom_layer_kernel.cl")); err != nil {
		t.Fatal(err)
	}
	// A model file that is a symlink to one outside.
	saveModel(t, m, nil, filepath.Join(outside, "elsewhere.clm"))
	if err := os.MkdirAll(filepath.Join(dir, "sym"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"custom_layer_example.xml", "custom_layer_kernel.cl"} {
		copyFile(t, filepath.Join(filepath.Dir(reluConfig), f), filepath.Join(dir, "sym", f))
	}
	if err := os.Symlink(filepath.Join(outside, "elsewhere.clm"), filepath.Join(dir, "sym", "sym.clm")); err != nil {
		t.Fatal(err)
	}
	// An OpenVINO IR whose weights are a symlink to a file outside.
	if err := os.MkdirAll(filepath.Join(dir, "ir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ir", "ir.xml"), []byte(`<?xml version="1.0"?>`+"\n"+`<net name="ir" version="11"><layers/><edges/></net>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "weights.bin"), make([]byte, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "weights.bin"), filepath.Join(dir, "ir", "ir.bin")); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		"ir":     "weights file " + filepath.Join(dir, "ir", "ir.bin") + " is " + filepath.Join(resolved(t, outside), "weights.bin") + ", outside the model's folder",
		"bad":    "bad.clm",
		"escape": `escape.xml:3: <Source filename="../../../../../../../../etc/passwd"> is /etc/passwd, outside the model's folder`,
		"inc":    `inc.xml:3: <Source filename="custom_layer_kernel.cl"> includes /etc/passwd, which is /etc/passwd, outside the model's folder`,
		"link":   `link.xml:3: <Source filename="custom_layer_kernel.cl"> is ` + filepath.Join(resolved(t, outside), "kernel.cl") + `, outside the model's folder`,
		"sym":    "model file " + filepath.Join(dir, "sym", "sym.clm") + " is " + filepath.Join(resolved(t, outside), "elsewhere.clm") + ", outside the model's folder",
	}
}

func resolved(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBrokenModelsLeaveTheRestServed: the server starts with the models that load;
// each broken one is logged with its error, answers ready false with it, and its
// metadata (REST and gRPC) and inferences answer it, while the good model serves.
// Paths that leave a model's folder are such errors, naming the configuration's line.
func TestBrokenModelsLeaveTheRestServed(t *testing.T) {
	dir, broken := brokenRepository(t)
	sources, err := DirSources(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	ts := startServer(t, sources, 1, Options{MaxBatch: 4, Log: &log})
	t.Logf("the server's log:\n%s", log.String())
	gc := grpcClient(t, ts.grpcAddr)
	getJSON := func(path string) (int, map[string]any) {
		resp, err := httpClient.Get(ts.httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, body
	}
	for name, want := range broken {
		if !strings.Contains(log.String(), `model "`+name+`" is not served: `) || !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say why %s is not served (%q):\n%s", name, want, log.String())
		}
		code, body := getJSON("/v2/models/" + name + "/ready")
		if reason, _ := body["reason"].(string); code != http.StatusServiceUnavailable || body["ready"] != false || !strings.Contains(reason, want) {
			t.Errorf("%s ready: %d %v, want 503 false with %q", name, code, body, want)
		}
		code, body = getJSON("/v2/models/" + name)
		if e, _ := body["error"].(string); code != http.StatusServiceUnavailable || !strings.Contains(e, "is not served") || !strings.Contains(e, want) {
			t.Errorf("%s metadata: %d %v, want 503 with %q", name, code, body, want)
		}
		if _, err := gc.ModelMetadata(context.Background(), &pb.ModelMetadataRequest{Name: name}); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), want) {
			t.Errorf("%s gRPC metadata: %v, want Unavailable with %q", name, err, want)
		}
		if r, err := gc.ModelReady(context.Background(), &pb.ModelReadyRequest{Name: name}); err != nil || r.Ready {
			t.Errorf("%s gRPC ready: %v %v, want false", name, r, err)
		}
		code, r := post(t, ts.httpURL+"/v2/models/"+name+"/infer", []byte(`{"inputs":[]}`), nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(r.Error, want) {
			t.Errorf("%s infer: %d %q", name, code, r.Error)
		}
	}
	if strings.Contains(log.String(), "root:") {
		t.Errorf("the log quotes a file from outside the repository:\n%s", log.String())
	}
	img := randomImage(rand.New(rand.NewSource(8)), 1)
	_, pooled := reluReference(img)
	code, r := post(t, ts.httpURL+"/v2/models/relu/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{
		{"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW}, "data": img}}}), nil)
	if code != 200 {
		t.Fatalf("relu beside broken models: %d %s", code, r.Error)
	}
	compareFloats(t, "relu pooled", r.floats("pooled"), pooled)
	if code, body := getJSON("/v2/models/relu/ready"); code != 200 || body["ready"] != true {
		t.Errorf("relu ready: %d %v", code, body)
	}
}

// TestStrictRefusesBrokenModels: with Strict, one broken model keeps the server from
// starting, and the error names every broken model, not only the first; without
// Strict, a repository where nothing loads does not start either.
func TestStrictRefusesBrokenModels(t *testing.T) {
	dir, broken := brokenRepository(t)
	sources, err := DirSources(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	devs, labels := testDevices(t, 1)
	opts := Options{Devices: devs, DeviceNames: labels, Engine: host.Options{NoGlobalConfig: true}, MaxBatch: 4, Strict: true}
	s, err := New(sources, opts)
	if err == nil {
		s.Close()
		t.Fatal("Strict started with broken models")
	}
	if !strings.Contains(err.Error(), "6 of 7 models are broken") {
		t.Errorf("strict error %q does not count the broken models", err)
	}
	for name, want := range broken {
		if !strings.Contains(err.Error(), `model "`+name+`": `) || !strings.Contains(err.Error(), want) {
			t.Errorf("strict error does not name %s (%q):\n%v", name, want, err)
		}
	}
	var only []Source
	for _, src := range sources {
		if src.Name != "relu" {
			only = append(only, src)
		}
	}
	opts.Strict = false
	if s, err := New(only, opts); err == nil {
		s.Close()
		t.Error("a server of broken models only started")
	} else if !strings.Contains(err.Error(), "no model can be served") {
		t.Errorf("nothing loads: %v", err)
	}
}
