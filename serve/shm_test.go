package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/clhost/clhost/serve/inferencepb"
	"github.com/clhost/clhost/serve/shmclient"
)

// Sizes of the relu model's tensors per item, in bytes.
const (
	shmImageBytes    = 4 * imgC * imgH * imgW
	shmFeaturesBytes = 4 * convF * imgH * imgW
	shmPooledBytes   = 4 * convF * (imgH / 2) * (imgW / 2)
)

// shmKey is a shared-memory key unique to this test process.
func shmKey(name string) string { return fmt.Sprintf("/clhost-test-%d-%s", os.Getpid(), name) }

// newRegion creates a region that the test removes at its end.
func newRegion(t testing.TB, name string, size int) *shmclient.Region {
	t.Helper()
	r, err := shmclient.Create(name, shmKey(name), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// plainOutputs runs the same inference without shared memory, its outputs as binary
// data: what the shared-memory outputs must equal, byte for byte.
func plainOutputs(t testing.TB, url string, img []float32, items int) (features, pooled []byte) {
	t.Helper()
	body, h := binaryRequest(t, map[string]any{
		"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": []int{items, imgC, imgH, imgW},
			"parameters": map[string]any{"binary_data_size": 4 * len(img)}}},
		"parameters": map[string]any{"binary_data_output": true},
	}, float32Bytes(img))
	code, res := post(t, url, body, h)
	if code != http.StatusOK {
		t.Fatalf("plain request: status %d: %s", code, res.Error)
	}
	return res.raw["features"], res.raw["pooled"]
}

// shmPost sends a request and returns its status and body.
func shmPost(t testing.TB, url string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// wantError checks a 400 answer whose JSON error contains want.
func wantError(t testing.TB, what string, code int, body []byte, want string) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: status %d, body %q is not the protocol's JSON error", what, code, body)
	}
	if code != http.StatusBadRequest || !strings.Contains(e.Error, want) {
		t.Fatalf("%s: status %d error %q, want 400 with %q", what, code, e.Error, want)
	}
}

// TestSharedMemoryREST: a region registered over REST carries a batch's input and both
// outputs; the outputs are bit-identical to the same request's binary outputs, the
// response carries no data for them, and status lists the region until it is
// unregistered. Metadata names the extension.
func TestSharedMemoryREST(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	ctx := context.Background()
	c := shmclient.New(ts.httpURL)

	resp, err := httpClient.Get(ts.httpURL + "/v2")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Extensions []string }
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if !strings.Contains(strings.Join(meta.Extensions, ","), extSharedMemory) {
		t.Errorf("server metadata extensions %v lack %s", meta.Extensions, extSharedMemory)
	}

	const items = 3
	// Inputs and outputs at offsets that are not page-aligned, with a gap between.
	inOff, featOff := int64(64), int64(64+items*shmImageBytes+32)
	poolOff := featOff + items*shmFeaturesBytes
	r := newRegion(t, "rest", int(poolOff)+items*shmPooledBytes)
	if err := c.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "")
	if err != nil || len(st) != 1 || st[0].Name != "rest" || st[0].Key != r.Key || st[0].ByteSize != int64(len(r.Bytes())) {
		t.Fatalf("status %+v, %v", st, err)
	}
	img := randomImage(rand.New(rand.NewSource(11)), items)
	copy(r.Bytes()[inOff:], float32Bytes(img))
	res, err := c.Infer(ctx, "relu",
		[]shmclient.Tensor{{Name: "image", Datatype: "FP32", Shape: []int64{items, imgC, imgH, imgW}, Region: "rest", Offset: inOff, ByteSize: items * shmImageBytes}},
		[]shmclient.Output{
			{Name: "features", Region: "rest", Offset: featOff, ByteSize: items * shmFeaturesBytes},
			{Name: "pooled", Region: "rest", Offset: poolOff, ByteSize: items * shmPooledBytes},
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 2 || res.Outputs[1].Shape[0] != items {
		t.Fatalf("outputs %+v", res.Outputs)
	}
	wantFeat, wantPool := plainOutputs(t, ts.httpURL+"/v2/models/relu/infer", img, items)
	if got := r.Bytes()[featOff : featOff+items*shmFeaturesBytes]; !bytes.Equal(got, wantFeat) {
		t.Errorf("features in shared memory differ from the plain request's")
	}
	if got := r.Bytes()[poolOff : poolOff+items*shmPooledBytes]; !bytes.Equal(got, wantPool) {
		t.Errorf("pooled in shared memory differs from the plain request's")
	}
	_, refPool := reluReference(img[:imgC*imgH*imgW])
	compareFloats(t, "pooled item 0", bytesFloat32(wantPool[:shmPooledBytes]), refPool)

	// The raw response: no "data" for outputs in shared memory.
	body, _ := shmclient.RequestBody(
		[]shmclient.Tensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}, Region: "rest", Offset: inOff, ByteSize: shmImageBytes}},
		[]shmclient.Output{{Name: "pooled", Region: "rest", Offset: poolOff, ByteSize: shmPooledBytes}})
	code, b := shmPost(t, ts.httpURL+"/v2/models/relu/infer", body)
	if code != http.StatusOK || bytes.Contains(b, []byte(`"data"`)) {
		t.Errorf("status %d, response %s: want 200 without data", code, b)
	}

	if err := c.Unregister(ctx, "rest"); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(ctx, ""); err != nil || len(st) != 0 {
		t.Errorf("status after unregister: %+v, %v", st, err)
	}
	code, b = shmPost(t, ts.httpURL+"/v2/models/relu/infer", body)
	wantError(t, "after unregister", code, b, `unknown shared-memory region "rest"`)
}

// TestSharedMemoryIntegerInput: INT64 ids in shared memory are decoded like binary
// ones, and an output mixes with JSON data in one request: the embedding's rows come
// back.
func TestSharedMemoryIntegerInput(t *testing.T) {
	ts := startServer(t, []Source{embeddingSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	ctx := context.Background()
	c := shmclient.New(ts.httpURL)
	ids := []int64{3, 0, embRows - 1, 5}[:embIDs]
	r := newRegion(t, "ids", 8*embIDs+4*embIDs*embDim)
	for i, id := range ids {
		binary.LittleEndian.PutUint64(r.Bytes()[8*i:], uint64(id))
	}
	if err := c.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	_, err := c.Infer(ctx, "embed",
		[]shmclient.Tensor{{Name: "ids", Datatype: "INT64", Shape: []int64{1, embIDs}, Region: "ids", ByteSize: 8 * embIDs}},
		[]shmclient.Output{{Name: "vectors", Region: "ids", Offset: 8 * embIDs, ByteSize: 4 * embIDs * embDim}})
	if err != nil {
		t.Fatal(err)
	}
	compareFloats(t, "vectors", bytesFloat32(r.Bytes()[8*embIDs:]), embWant(ids))
}

// TestSharedMemoryErrors: every misuse is a 400 with the protocol's JSON error naming
// the problem, and nothing is registered by a failed registration.
func TestSharedMemoryErrors(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	ctx := context.Background()
	c := shmclient.New(ts.httpURL)
	r := newRegion(t, "err", 4096)
	register := func(name string, v any) (int, []byte) {
		return shmPost(t, ts.httpURL+"/v2/systemsharedmemory/region/"+name+"/register", jsonRequest(t, v))
	}
	for _, tc := range []struct {
		what string
		body any
		want string
	}{
		{"missing key", map[string]any{"key": shmKey("nothing-here"), "offset": 0, "byte_size": 16}, "no such file"},
		{"no key", map[string]any{"offset": 0, "byte_size": 16}, `"key" and "byte_size" are required`},
		{"larger than its memory", map[string]any{"key": r.Key, "offset": 0, "byte_size": 4097}, "larger than the 4096 bytes"},
		{"offset past the end", map[string]any{"key": r.Key, "offset": 4000, "byte_size": 100}, "larger than the 4096 bytes"},
		{"a path", map[string]any{"key": "/../../etc/passwd", "offset": 0, "byte_size": 16}, "POSIX shared-memory object's name"},
		{"zero size", map[string]any{"key": r.Key, "offset": 0, "byte_size": 0}, "size at least 1"},
		{"not JSON", "nonsense", "register request JSON"},
	} {
		code, b := register("bad", tc.body)
		wantError(t, tc.what, code, b, tc.want)
	}
	if st, _ := c.Status(ctx, ""); len(st) != 0 {
		t.Fatalf("failed registrations left %+v", st)
	}
	resp, err := httpClient.Get(ts.httpURL + "/v2/systemsharedmemory/region/nope/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantError(t, "status of an unknown region", resp.StatusCode, b, `no shared-memory region "nope"`)

	// A region of 2048 bytes at 1024: [1024, 3072) of the object.
	if err := c.RegisterRange(ctx, "err", r.Key, 1024, 2048); err != nil {
		t.Fatal(err)
	}
	code, b := register("err", map[string]any{"key": r.Key, "offset": 0, "byte_size": 16})
	wantError(t, "registered twice", code, b, "already registered")

	infer := func(in map[string]any, out map[string]any) (int, []byte) {
		req := map[string]any{"inputs": []map[string]any{in}}
		if out != nil {
			req["outputs"] = []map[string]any{out}
		}
		return shmPost(t, ts.httpURL+"/v2/models/relu/infer", jsonRequest(t, req))
	}
	shape := []int{1, imgC, imgH, imgW}
	input := func(params map[string]any) map[string]any {
		return map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "parameters": params}
	}
	good := map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmImageBytes}
	for _, tc := range []struct {
		what    string
		in, out map[string]any
		want    string
	}{
		{"unknown region", input(map[string]any{"shared_memory_region": "other", "shared_memory_byte_size": shmImageBytes}), nil, `unknown shared-memory region "other" (registered: "err")`},
		{"size without region", input(map[string]any{"shared_memory_byte_size": shmImageBytes}), nil, "go together"},
		{"region without size", input(map[string]any{"shared_memory_region": "err"}), nil, "go together"},
		{"size other than the tensor's", input(map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmImageBytes - 4}), nil, "takes 768"},
		{"beyond the region", input(map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmImageBytes, "shared_memory_offset": 2048 - 100}), nil, "lie outside shared-memory region"},
		{"negative offset", input(map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmImageBytes, "shared_memory_offset": -4}), nil, "not a byte offset"},
		{"data as well", map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "parameters": good, "data": []float32{1}}, nil, "both data and"},
		{"output region too small", input(good), map[string]any{"name": "features", "parameters": map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmFeaturesBytes - 1, "shared_memory_offset": 1024}}, "take 1024"},
		{"output beyond the region", input(good), map[string]any{"name": "features", "parameters": map[string]any{"shared_memory_region": "err", "shared_memory_byte_size": shmFeaturesBytes, "shared_memory_offset": 1025}}, "lie outside"},
	} {
		code, b := infer(tc.in, tc.out)
		wantError(t, tc.what, code, b, tc.want)
	}
	if code, b := infer(input(good), nil); code != http.StatusOK {
		t.Fatalf("the good request: status %d: %s", code, b)
	}

	// A client that shrinks its object after registering gets an error, not a server
	// that faults reading past the object's end.
	if err := os.Truncate("/dev/shm"+r.Key, 1500); err != nil {
		t.Fatal(err)
	}
	code, b = infer(input(good), nil)
	wantError(t, "shrunk object", code, b, "has shrunk to 1500 bytes")
	if err := c.Unregister(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Unregister(ctx, "never-registered"); err != nil {
		t.Errorf("unregistering an unknown region: %v, want no error (idempotent)", err)
	}
}

// TestSharedMemoryOff: a server not started with shared memory allowed lists no such
// extension and refuses registrations and requests naming regions with 400.
func TestSharedMemoryOff(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	r := newRegion(t, "off", 4096)
	resp, err := httpClient.Get(ts.httpURL + "/v2")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(meta, []byte(extSharedMemory)) {
		t.Errorf("metadata %s lists %s while it is off", meta, extSharedMemory)
	}
	code, b := shmPost(t, ts.httpURL+"/v2/systemsharedmemory/region/off/register", jsonRequest(t, map[string]any{"key": r.Key, "offset": 0, "byte_size": 4096}))
	wantError(t, "register while off", code, b, "-allow-shm")
	code, b = shmPost(t, ts.httpURL+"/v2/models/relu/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{{
		"name": "image", "datatype": "FP32", "shape": []int{1, imgC, imgH, imgW},
		"parameters": map[string]any{"shared_memory_region": "off", "shared_memory_byte_size": shmImageBytes}}}}))
	wantError(t, "infer while off", code, b, "-allow-shm")
}

// mapped says whether the server maps the shared-memory object key: the test's own
// client maps it once, the server's registration another time.
func mapped(t testing.TB, key string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(maps, []byte("/dev/shm"+key+"\n")) > 1
}

// TestSharedMemoryUnregisterInUse: a region unregistered while a request holds it stays
// mapped, and readable, until the request lets go; then it is unmapped. Under load,
// unregistering mid-stream answers every request either correctly or with a 400 naming
// the region, and leaves nothing mapped.
func TestSharedMemoryUnregisterInUse(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 2, Options{MaxBatch: 4, SharedMemory: true})
	ctx := context.Background()
	c := shmclient.New(ts.httpURL)
	r := newRegion(t, "busy", shmImageBytes+shmPooledBytes)
	img := randomImage(rand.New(rand.NewSource(12)), 1)
	copy(r.Bytes(), float32Bytes(img))
	if err := c.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	if !mapped(t, r.Key) {
		t.Fatal("the registered region is not mapped")
	}

	use := ts.newShmUse()
	b, err := use.span("test", shmRef{region: "busy", size: shmImageBytes})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unregister(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	if !mapped(t, r.Key) || !bytes.Equal(b, float32Bytes(img)) {
		t.Fatal("a region in use was unmapped when unregistered")
	}
	use.release(false)
	if mapped(t, r.Key) {
		t.Fatal("the region stays mapped after its last use")
	}

	if err := c.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	_, wantPool := plainOutputs(t, ts.httpURL+"/v2/models/relu/infer", img, 1)
	body, _ := shmclient.RequestBody(
		[]shmclient.Tensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}, Region: "busy", ByteSize: shmImageBytes}},
		[]shmclient.Output{{Name: "pooled", Region: "busy", Offset: shmImageBytes, ByteSize: shmPooledBytes}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	stop := time.Now().Add(2 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				code, b := shmPost(t, ts.httpURL+"/v2/models/relu/infer", body)
				mu.Lock()
				switch {
				case code == http.StatusOK:
					ok++
				case code == http.StatusBadRequest && bytes.Contains(b, []byte(`unknown shared-memory region \"busy\"`)):
					refused++
				default:
					t.Errorf("status %d: %s", code, b)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	if err := c.Unregister(ctx, "busy"); err != nil {
		t.Error(err)
	}
	wg.Wait()
	if ok == 0 || refused == 0 {
		t.Errorf("%d answered, %d refused: want both", ok, refused)
	}
	// Every writer wrote the same result.
	if !bytes.Equal(r.Bytes()[shmImageBytes:], wantPool) {
		t.Error("pooled in shared memory differs from the plain request's")
	}
	if mapped(t, r.Key) {
		t.Error("the region stays mapped after it was unregistered and its requests answered")
	}
}

// TestSharedMemoryGRPC: the gRPC half: register, status, an inference with the input
// and one output in shared memory and the other output as raw contents, bit-identical
// to the same request without shared memory; INVALID_ARGUMENT for an unknown region.
func TestSharedMemoryGRPC(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	g := grpcClient(t, ts.grpcAddr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meta, err := g.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil || !strings.Contains(strings.Join(meta.Extensions, ","), extSharedMemory) {
		t.Fatalf("server metadata %v, %v", meta, err)
	}
	const items = 2
	r := newRegion(t, "grpc", items*(shmImageBytes+shmPooledBytes))
	img := randomImage(rand.New(rand.NewSource(13)), items)
	copy(r.Bytes(), float32Bytes(img))
	if _, err := g.SystemSharedMemoryRegister(ctx, &pb.SystemSharedMemoryRegisterRequest{Name: "grpc", Key: r.Key, ByteSize: uint64(len(r.Bytes()))}); err != nil {
		t.Fatal(err)
	}
	st, err := g.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{})
	if err != nil || st.Regions["grpc"].GetKey() != r.Key || st.Regions["grpc"].GetByteSize() != uint64(len(r.Bytes())) {
		t.Fatalf("status %v, %v", st, err)
	}
	shm := func(offset, size int) map[string]*pb.InferParameter {
		return map[string]*pb.InferParameter{
			paramShmRegion: {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "grpc"}},
			paramShmOffset: {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: int64(offset)}},
			paramShmSize:   {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: uint64(size)}},
		}
	}
	shape := []int64{items, imgC, imgH, imgW}
	res, err := g.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "relu",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: shape, Parameters: shm(0, items*shmImageBytes)}},
		Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{
			{Name: "features"},
			{Name: "pooled", Parameters: shm(items*shmImageBytes, items*shmPooledBytes)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := g.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: shape}},
		RawInputContents: [][]byte{float32Bytes(img)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RawOutputContents) != 2 || len(res.RawOutputContents[1]) != 0 {
		t.Fatalf("raw output contents: %d entries, want 2, the second empty (pooled is in shared memory)", len(res.RawOutputContents))
	}
	if !bytes.Equal(res.RawOutputContents[0], plain.RawOutputContents[0]) {
		t.Error("features differ from the plain request's")
	}
	if !bytes.Equal(r.Bytes()[items*shmImageBytes:], plain.RawOutputContents[1]) {
		t.Error("pooled in shared memory differs from the plain request's")
	}

	_, err = g.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "relu",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: shape, Parameters: map[string]*pb.InferParameter{
			paramShmRegion: {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "nope"}},
			paramShmSize:   {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: items * shmImageBytes}},
		}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `unknown shared-memory region "nope"`) {
		t.Errorf("unknown region: %v, want INVALID_ARGUMENT naming it", err)
	}
	if _, err := g.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{Name: "nope"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("status of an unknown region: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := g.SystemSharedMemoryUnregister(ctx, &pb.SystemSharedMemoryUnregisterRequest{Name: "grpc"}); err != nil {
		t.Fatal(err)
	}
	if st, err := g.SystemSharedMemoryStatus(ctx, &pb.SystemSharedMemoryStatusRequest{}); err != nil || len(st.Regions) != 0 {
		t.Errorf("status after unregister: %v, %v", st, err)
	}
}

// shmPython is the Python with grpcio and protobuf: CLHOST_TEST_PYTHON, else the
// system's.
func shmPython() string {
	if p := os.Getenv("CLHOST_TEST_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// TestSharedMemoryPython: a real Python client (multiprocessing.shared_memory, urllib,
// grpcio with protoc's messages) registers a region over REST and over gRPC and runs the
// relu model with the image and the pooled output in it; the outputs are bit-identical
// to its own requests without shared memory and to Go's, and an unknown region gets 400
// and INVALID_ARGUMENT.
func TestSharedMemoryPython(t *testing.T) {
	py := shmPython()
	if out, err := exec.Command(py, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Fatalf("%s lacks grpcio or protobuf (apt-get install python3-grpcio python3-protobuf, or set CLHOST_TEST_PYTHON): %v\n%s", py, err, out)
	}
	pb2 := t.TempDir()
	if out, err := exec.Command("protoc", "--python_out="+pb2, "-I", "inferencepb", "grpc_service.proto").CombinedOutput(); err != nil {
		t.Fatalf("protoc for the Python messages (apt-get install protobuf-compiler): %v\n%s", err, out)
	}
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	img := randomImage(rand.New(rand.NewSource(14)), 1)
	imgJSON, _ := json.Marshal(img)
	cmd := exec.Command(py, filepath.Join("testdata", "shm", "client.py"), ts.httpURL, ts.grpcAddr, pb2, string(imgJSON))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, stderr.String())
	}
	var res struct {
		Register      int
		Status        []shmStatus
		Key           string
		RESTCode      int         `json:"rest_code"`
		RESTHasData   bool        `json:"rest_has_data"`
		RESTPooled    []byte      `json:"rest_pooled"`
		RESTEqual     bool        `json:"rest_equal"`
		UnknownCode   int         `json:"unknown_code"`
		UnknownError  string      `json:"unknown_error"`
		GRPCStatusKey string      `json:"grpc_status_key"`
		GRPCPooled    []byte      `json:"grpc_pooled"`
		GRPCEqual     bool        `json:"grpc_equal"`
		GRPCUnknown   string      `json:"grpc_unknown"`
		StatusAfter   []shmStatus `json:"status_after"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if res.Register != 200 || len(res.Status) != 1 || res.Status[0].Key != res.Key || res.GRPCStatusKey != res.Key {
		t.Errorf("registration: %d, status %+v, gRPC status key %q (key %q)", res.Register, res.Status, res.GRPCStatusKey, res.Key)
	}
	if res.RESTCode != 200 || res.RESTHasData || !res.RESTEqual || !res.GRPCEqual {
		t.Errorf("REST %d (data in the reply: %v), equal to binary: REST %v gRPC %v", res.RESTCode, res.RESTHasData, res.RESTEqual, res.GRPCEqual)
	}
	_, want := plainOutputs(t, ts.httpURL+"/v2/models/relu/infer", img, 1)
	if !bytes.Equal(res.RESTPooled, want) || !bytes.Equal(res.GRPCPooled, want) {
		t.Error("the Python client's pooled output differs from Go's request without shared memory")
	}
	if res.UnknownCode != 400 || !strings.Contains(res.UnknownError, `unknown shared-memory region "nowhere"`) || res.GRPCUnknown != "INVALID_ARGUMENT" {
		t.Errorf("unknown region: REST %d %q, gRPC %s", res.UnknownCode, res.UnknownError, res.GRPCUnknown)
	}
	if len(res.StatusAfter) != 0 {
		t.Errorf("status after unregistering all: %+v", res.StatusAfter)
	}
}

// BenchmarkHandlerInferShm is BenchmarkHandlerInfer with the input and both outputs in
// a shared-memory region: the server's own work per request when no tensor crosses the
// connection.
func BenchmarkHandlerInferShm(b *testing.B) {
	ts := startServer(b, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	r := newRegion(b, "bench", 4096)
	copy(r.Bytes(), float32Bytes(randomImage(rand.New(rand.NewSource(1)), 1)))
	if err := shmclient.New(ts.httpURL).Register(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	body, err := shmclient.RequestBody(
		[]shmclient.Tensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}, Region: "bench", ByteSize: shmImageBytes}},
		[]shmclient.Output{
			{Name: "features", Region: "bench", Offset: 1024, ByteSize: shmFeaturesBytes},
			{Name: "pooled", Region: "bench", Offset: 2048, ByteSize: shmPooledBytes},
		})
	if err != nil {
		b.Fatal(err)
	}
	handler := ts.Handler()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/v2/models/relu/infer", bytes.NewReader(body))
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// TestSharedMemoryParams: the REST parameters are read as JSON whatever their spelling
// (escapes, white space), and values that are not a name and non-negative integers are
// refused.
func TestSharedMemoryParams(t *testing.T) {
	raw := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	ref, ok, err := jsonShmRef("t", raw(paramShmRegion, `"r\u0065g\"1"`, paramShmSize, ` 768 `, paramShmOffset, `64`))
	if err != nil || !ok || ref != (shmRef{region: `reg"1`, size: 768, offset: 64}) {
		t.Errorf("escaped name: %+v %v %v", ref, ok, err)
	}
	if _, ok, err := jsonShmRef("t", raw("binary_data_size", "4")); ok || err != nil {
		t.Errorf("no shared-memory parameters: %v %v", ok, err)
	}
	for _, p := range []map[string]json.RawMessage{
		raw(paramShmRegion, `7`, paramShmSize, `768`),
		raw(paramShmRegion, `"r"`, paramShmSize, `7.5`),
		raw(paramShmRegion, `"r"`, paramShmSize, `-1`),
		raw(paramShmRegion, `"r"`, paramShmSize, `"768"`),
		raw(paramShmRegion, `"r"`, paramShmSize, `768`, paramShmOffset, `-64`),
		raw(paramShmOffset, `0`),
	} {
		if _, _, err := jsonShmRef("t", p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

// TestSharedMemoryRegionLimit: registrations stop at maxShmRegions, so that a client
// cannot take all of the server's files and address space; unregistering makes room.
func TestSharedMemoryRegionLimit(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	r := newRegion(t, "many", 4096)
	for i := range maxShmRegions {
		if err := ts.shmRegister(fmt.Sprintf("r%d", i), r.Key, 0, 4096); err != nil {
			t.Fatalf("region %d: %v", i, err)
		}
	}
	if err := ts.shmRegister("one-more", r.Key, 0, 4096); err == nil || !strings.Contains(err.Error(), "the most this server holds") {
		t.Fatalf("region %d: %v, want the limit", maxShmRegions+1, err)
	}
	if err := ts.shmUnregister("r0"); err != nil {
		t.Fatal(err)
	}
	if err := ts.shmRegister("one-more", r.Key, 0, 4096); err != nil {
		t.Fatalf("after unregistering one: %v", err)
	}
	if err := ts.shmUnregister(""); err != nil {
		t.Fatal(err)
	}
}

// TestSharedMemoryKeptAfterDeviceFailure: a region a request held when its device
// failed stays mapped after it is unregistered (the kernel may still be reading it);
// after a request error it is unmapped as usual.
func TestSharedMemoryKeptAfterDeviceFailure(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	for _, tc := range []struct {
		err  error
		kept bool
	}{
		{errorf(KindUnavailable, "device d0 timed out"), true},
		{errorf(KindInternal, "device d0 failed"), true},
		{errorf(KindInvalid, "bad shape"), false},
	} {
		r := newRegion(t, "kept", 4096)
		if err := ts.shmRegister("kept", r.Key, 0, 4096); err != nil {
			t.Fatal(err)
		}
		use := ts.newShmUse()
		if _, err := use.span("test", shmRef{region: "kept", size: 16}); err != nil {
			t.Fatal(err)
		}
		use.release(deviceFailed(tc.err))
		if err := ts.shmUnregister("kept"); err != nil {
			t.Fatal(err)
		}
		if got := mapped(t, r.Key); got != tc.kept {
			t.Errorf("after %v: mapped %v, want %v", tc.err, got, tc.kept)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
