package serve

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

func grpcClient(t testing.TB, addr string) pb.GRPCInferenceServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn)
}

// TestGRPC: health, metadata and ModelInfer with raw and typed contents over gRPC from
// Go, against the CPU reference.
func TestGRPC(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	c := grpcClient(t, ts.grpcAddr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if r, err := c.ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Fatalf("ServerLive: %v %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Fatalf("ServerReady: %v %v", r, err)
	}
	if r, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "relu"}); err != nil || !r.Ready {
		t.Fatalf("ModelReady: %v %v", r, err)
	}
	if _, err := c.ModelReady(ctx, &pb.ModelReadyRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelReady of an unknown model: %v, want NotFound", err)
	}
	sm, err := c.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil || sm.Name != "clhost" || len(sm.Extensions) == 0 {
		t.Fatalf("ServerMetadata: %v %v", sm, err)
	}
	mm, err := c.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "relu"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mm.Inputs) != 1 || mm.Inputs[0].Name != "image" || mm.Inputs[0].Datatype != "FP32" || mm.Inputs[0].Shape[0] != -1 {
		t.Errorf("ModelMetadata inputs %v", mm.Inputs)
	}

	rng := rand.New(rand.NewSource(2))
	img := randomImage(rng, 3)
	row := imgC * imgH * imgW
	var wantPool []float32
	for i := range 3 {
		_, p := reluReference(img[i*row : (i+1)*row])
		wantPool = append(wantPool, p...)
	}
	t.Run("raw", func(t *testing.T) {
		res, err := c.ModelInfer(ctx, &pb.ModelInferRequest{
			ModelName: "relu", Id: "g1",
			Parameters:       map[string]*pb.InferParameter{"k": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 5}}},
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{3, imgC, imgH, imgW}}},
			Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "pooled"}},
			RawInputContents: [][]byte{float32Bytes(img)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Id != "g1" || res.ModelName != "relu" || res.Parameters["k"].GetInt64Param() != 5 {
			t.Errorf("id %q model %q parameters %v", res.Id, res.ModelName, res.Parameters)
		}
		if len(res.Outputs) != 1 || len(res.RawOutputContents) != 1 || res.Outputs[0].Shape[0] != 3 {
			t.Fatalf("outputs %v, %d raw", res.Outputs, len(res.RawOutputContents))
		}
		compareFloats(t, "pooled", bytesFloat32(res.RawOutputContents[0]), wantPool)
	})
	t.Run("typed", func(t *testing.T) {
		res, err := c.ModelInfer(ctx, &pb.ModelInferRequest{
			ModelName: "relu",
			Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW},
				Contents: &pb.InferTensorContents{Fp32Contents: img[:row]}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outputs) != 2 || len(res.RawOutputContents) != 0 {
			t.Fatalf("outputs %d, raw %d: want 2 typed", len(res.Outputs), len(res.RawOutputContents))
		}
		compareFloats(t, "pooled", res.Outputs[1].Contents.Fp32Contents, wantPool[:len(wantPool)/3])
	})
}

func bytesFloat32(b []byte) []float32 {
	r := &restResponse{raw: map[string][]byte{"x": b}, Outputs: []restOutputTest{{Name: "x"}}}
	return r.floats("x")
}
