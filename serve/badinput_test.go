package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// TestBadInputs: every malformed request is refused with the status its kind takes and
// a message naming the problem, over REST and gRPC, and the server keeps serving.
func TestBadInputs(t *testing.T) {
	const limit = 16 << 10
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxBodyBytes: limit})
	url := ts.httpURL + "/v2/models/relu/infer"
	n := imgC * imgH * imgW
	img := make([]float32, n)
	shape := []int{1, imgC, imgH, imgW}
	in := func(mod func(m map[string]any)) []byte {
		m := map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "data": img}
		mod(m)
		return jsonRequest(t, map[string]any{"inputs": []any{m}})
	}
	binBody, binHeaders := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": shape,
		"parameters": map[string]any{paramBinarySize: 4*n + 4}}}}, float32Bytes(img), []byte{1, 2, 3, 4})
	shortBody, shortHeaders := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": shape,
		"parameters": map[string]any{paramBinarySize: 4 * n}}}}, float32Bytes(img)[:4*n-4])
	extraBody, extraHeaders := binaryRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image", "datatype": "FP32", "shape": shape,
		"parameters": map[string]any{paramBinarySize: 4 * n}}}}, float32Bytes(img), []byte{0})
	cases := []struct {
		name    string
		url     string
		body    []byte
		headers map[string]string
		status  int
		says    string
	}{
		{"tensor name", url, in(func(m map[string]any) { m["name"] = "img" }), nil, 400, `no input "img"`},
		{"shape", url, in(func(m map[string]any) { m["shape"] = []int{1, imgC, imgH, imgW + 1} }), nil, 400, "shape [1 3 8 9]"},
		{"rank", url, in(func(m map[string]any) { m["shape"] = []int{imgC, imgH, imgW} }), nil, 400, "the model takes [-1 3 8 8]"},
		{"datatype", url, in(func(m map[string]any) { m["datatype"] = "FP16" }), nil, 400, `datatype "FP16", the model takes FP32`},
		{"too few values", url, in(func(m map[string]any) { m["data"] = img[1:] }), nil, 400, "holds 191 values, its shape has 192"},
		{"too many values", url, in(func(m map[string]any) { m["data"] = append(img, 1) }), nil, 400, "more than the 192 values"},
		{"string data", url, in(func(m map[string]any) { m["data"] = []string{"a"} }), nil, 400, "data holds a string"},
		{"missing input", url, jsonRequest(t, map[string]any{"inputs": []any{}}), nil, 400, `input "image" (FP32 [-1 3 8 8]) is missing`},
		{"input twice", url, jsonRequest(t, map[string]any{"inputs": []any{
			map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "data": img},
			map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "data": img}}}), nil, 400, "given twice"},
		{"unknown output", url, jsonRequest(t, map[string]any{"inputs": []any{map[string]any{"name": "image", "datatype": "FP32", "shape": shape, "data": img}},
			"outputs": []any{map[string]any{"name": "logits"}}}), nil, 400, `no output "logits"`},
		{"bad JSON", url, []byte(`{"inputs": [`), nil, 400, "request JSON"},
		{"JSON type", url, []byte(`{"inputs": {"name": 3}}`), nil, 400, "request JSON"},
		{"parameter value", url, []byte(`{"parameters": {"a": [1]}, "inputs": []}`), nil, 400, `parameter "a"`},
		{"binary byte count", url, binBody, binHeaders, 400, "772 bytes of data, its shape of 192 FP32 elements takes 768"},
		{"binary short", url, shortBody, shortHeaders, 400, "only 764 bytes of binary data are left"},
		{"binary extra", url, extraBody, extraHeaders, 400, "769 bytes of binary data follow the JSON"},
		{"header length", url, in(func(map[string]any) {}), map[string]string{headerJSONLength: "999999"}, 400, headerJSONLength},
		{"unknown model", ts.httpURL + "/v2/models/nope/infer", in(func(map[string]any) {}), nil, 404, `unknown model "nope"`},
		{"unknown version", ts.httpURL + "/v2/models/relu/versions/7/infer", in(func(map[string]any) {}), nil, 404, `no version "7"`},
		{"too large", url, make([]byte, limit+1), nil, 413, "exceeds the limit"},
	}
	for _, c := range cases {
		code, r := post(t, c.url, c.body, c.headers)
		if code != c.status || !strings.Contains(r.Error, c.says) {
			t.Errorf("%s: status %d %q, want %d saying %q", c.name, code, r.Error, c.status, c.says)
		}
	}
	// A body over the limit without a Content-Length (chunked) is cut at the limit.
	req, _ := http.NewRequest("POST", url, io.MultiReader(strings.NewReader(strings.Repeat(" ", limit)), strings.NewReader("{}")))
	req.ContentLength = -1
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked body over the limit: status %d, want 413", resp.StatusCode)
	}
	for _, path := range []string{"/v2/models/nope", "/v2/models/nope/ready"} {
		resp, err := httpClient.Get(ts.httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
		}
	}

	c := grpcClient(t, ts.grpcAddr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tensor := func(name, dt string, shape ...int64) []*pb.ModelInferRequest_InferInputTensor {
		return []*pb.ModelInferRequest_InferInputTensor{{Name: name, Datatype: dt, Shape: shape}}
	}
	raw := [][]byte{float32Bytes(img)}
	gcases := []struct {
		name string
		req  *pb.ModelInferRequest
		code codes.Code
		says string
	}{
		{"tensor name", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("x", "FP32", 1, imgC, imgH, imgW), RawInputContents: raw}, codes.InvalidArgument, `no input "x"`},
		{"shape", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "FP32", 2, imgC, imgH), RawInputContents: raw}, codes.InvalidArgument, "shape [2 3 8]"},
		{"datatype", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "INT64", 1, imgC, imgH, imgW), RawInputContents: raw}, codes.InvalidArgument, "datatype"},
		{"byte count", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "FP32", 2, imgC, imgH, imgW), RawInputContents: raw}, codes.InvalidArgument, "768 bytes of data, its shape of 384"},
		{"raw count", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "FP32", 1, imgC, imgH, imgW), RawInputContents: [][]byte{raw[0], raw[0]}}, codes.InvalidArgument, "2 raw_input_contents for 1 inputs"},
		{"typed count", &pb.ModelInferRequest{ModelName: "relu", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW},
			Contents: &pb.InferTensorContents{Fp32Contents: img[:5]}}}}, codes.InvalidArgument, "contents hold 5 values"},
		{"no data", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "FP32", 1, imgC, imgH, imgW)}, codes.InvalidArgument, "no contents"},
		{"unknown model", &pb.ModelInferRequest{ModelName: "nope", Inputs: tensor("image", "FP32", 1, imgC, imgH, imgW), RawInputContents: raw}, codes.NotFound, "unknown model"},
		{"too large", &pb.ModelInferRequest{ModelName: "relu", Inputs: tensor("image", "FP32", 1, imgC, imgH, imgW), RawInputContents: [][]byte{make([]byte, limit+1)}}, codes.ResourceExhausted, ""},
	}
	for _, g := range gcases {
		_, err := c.ModelInfer(ctx, g.req)
		if status.Code(err) != g.code || !strings.Contains(status.Convert(err).Message(), g.says) {
			t.Errorf("gRPC %s: %v, want %v saying %q", g.name, err, g.code, g.says)
		}
	}
	// Still serving.
	code, r := post(t, url, in(func(map[string]any) {}), nil)
	if code != 200 {
		t.Fatalf("a good request after the bad ones: %d %s", code, r.Error)
	}
}
