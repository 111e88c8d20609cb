package serve

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/clhost/clhost/customlayer"
	"net/http"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
	pb "github.com/clhost/clhost/serve/inferencepb"
)

// An embedding lookup: INT64 token ids [batch, 3] → Gather of a [10, 4] table.
const embRows, embDim, embIDs = 10, 4, 3

func embTable() []float32 {
	v := make([]float32, embRows*embDim)
	for i := range v {
		v[i] = float32(i)*0.25 - 3
	}
	return v
}

func embeddingSource() Source {
	return Source{Name: "embed", Platform: "clhost_clm", Load: func(batch int, _ *customlayer.Registry) (*model.Model, error) {
		b := model.NewBuilder("embed")
		ids := b.Input("ids", model.Int64, max(batch, 1), embIDs)
		b.Output(b.Layer("Gather", "vectors", []string{b.ConstFloat32("table", []int{embRows, embDim}, embTable()), ids}))
		return b.Build()
	}}
}

// embWant is the rows of the table for ids, computed directly.
func embWant(ids []int64) []float32 {
	table := embTable()
	var out []float32
	for _, id := range ids {
		if id < 0 {
			id += embRows
		}
		out = append(out, table[id*embDim:(id+1)*embDim]...)
	}
	return out
}

// TestIntegerModelInput: a model whose input is INT64 token ids is served end to end.
// Metadata declares INT64; JSON ids, binary INT64 data and gRPC's raw and typed contents
// all give the table's rows; FP32 data for the INT64 input is refused with 400.
func TestIntegerModelInput(t *testing.T) {
	ts := startServer(t, []Source{embeddingSource()}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/embed"

	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs []struct {
			Name, Datatype string
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || len(meta.Inputs) != 1 || meta.Inputs[0].Datatype != "INT64" {
		t.Fatalf("metadata inputs %+v (%v), want one INT64", meta.Inputs, err)
	}

	ids := []int64{0, 9, 3, -1, 4, 7}
	want := embWant(ids)
	body := `{"inputs":[{"name":"ids","datatype":"INT64","shape":[2,3],"data":[0,9,3,-1,4,7]}]}`
	code, res := post(t, url+"/infer", []byte(body), nil)
	if code != http.StatusOK || len(res.Outputs) != 1 {
		t.Fatalf("JSON INT64: %d %+v", code, res)
	}
	got := make([]float32, len(res.Outputs[0].Data))
	for i, v := range res.Outputs[0].Data {
		got[i] = float32(v)
	}
	compareFloats(t, "JSON INT64", got, want)

	raw := make([]byte, 8*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(id))
	}
	head := fmt.Sprintf(`{"inputs":[{"name":"ids","datatype":"INT64","shape":[2,3],"parameters":{"binary_data_size":%d}}]}`, len(raw))
	code, res = post(t, url+"/infer", append([]byte(head), raw...), map[string]string{"Inference-Header-Content-Length": fmt.Sprint(len(head))})
	if code != http.StatusOK || len(res.Outputs) != 1 {
		t.Fatalf("binary INT64: %d %+v", code, res)
	}
	got = got[:0]
	for _, v := range res.Outputs[0].Data {
		got = append(got, float32(v))
	}
	compareFloats(t, "binary INT64", got, want)

	bad := `{"inputs":[{"name":"ids","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`
	if code, res := post(t, url+"/infer", []byte(bad), nil); code != http.StatusBadRequest {
		t.Errorf("FP32 data for the INT64 input: %d %q, want 400", code, res.Error)
	}

	c := grpcClient(t, ts.grpcAddr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "embed",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "ids", Datatype: "INT64", Shape: []int64{2, 3}}},
		RawInputContents: [][]byte{raw}})
	if err != nil || len(r.RawOutputContents) != 1 {
		t.Fatalf("gRPC raw INT64: %v %v", r, err)
	}
	compareFloats(t, "gRPC raw INT64", bytesFloat32(r.RawOutputContents[0]), want)
	r, err = c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "embed",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "ids", Datatype: "INT64", Shape: []int64{1, 3},
			Contents: &pb.InferTensorContents{Int64Contents: ids[3:]}}}})
	if err != nil || len(r.Outputs) != 1 {
		t.Fatalf("gRPC typed INT64: %v %v", r, err)
	}
	compareFloats(t, "gRPC typed INT64", r.Outputs[0].Contents.Fp32Contents, want[3*embDim:])
}

// TestONNXIntegerInput: an ONNX model whose input is INT64 ids (it imports as float32,
// as every activation) is served with the datatype the file declares: metadata says
// INT64, INT64 JSON data gives the table's rows (row r holds 4r .. 4r+3), FP32 is refused.
func TestONNXIntegerInput(t *testing.T) {
	ts := startServer(t, []Source{FileSource("../internal/onnx/testdata/ids.onnx", nil)}, 1, Options{MaxBatch: 4})
	url := ts.httpURL + "/v2/models/ids"
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs []struct{ Name, Datatype string }
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || len(meta.Inputs) != 1 || meta.Inputs[0].Datatype != "INT64" {
		t.Fatalf("metadata inputs %+v (%v), want one INT64", meta.Inputs, err)
	}
	body := `{"inputs":[{"name":"ids","datatype":"INT64","shape":[2,3],"data":[0,9,3,-1,4,7]}]}`
	code, res := post(t, url+"/infer", []byte(body), nil)
	if code != http.StatusOK || len(res.Outputs) != 1 {
		t.Fatalf("JSON INT64: %d %+v", code, res)
	}
	for i, id := range []int{0, 9, 3, -1, 4, 7} {
		r := (id + 10) % 10
		for k := range 4 {
			if got := res.Outputs[0].Data[4*i+k]; got != float64(4*r+k) {
				t.Fatalf("id %d element %d: %v, want %d", id, k, got, 4*r+k)
			}
		}
	}
	bad := `{"inputs":[{"name":"ids","datatype":"FP32","shape":[2,3],"data":[0,1,2,3,4,5]}]}`
	if code, res := post(t, url+"/infer", []byte(bad), nil); code != http.StatusBadRequest {
		t.Errorf("FP32 data for the INT64 input: %d %q, want 400", code, res.Error)
	}
}
