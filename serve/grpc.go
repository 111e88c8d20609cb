package serve

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// grpcService is the protocol's inference.GRPCInferenceService.
type grpcService struct {
	pb.UnimplementedGRPCInferenceServiceServer
	s *Server
}

// RegisterGRPC adds the protocol's inference.GRPCInferenceService to g.
func (s *Server) RegisterGRPC(g *grpc.Server) {
	pb.RegisterGRPCInferenceServiceServer(g, &grpcService{s: s})
}

func grpcError(err error) error {
	return status.Error(kindOf(err).GRPCCode(), err.Error())
}

func (g *grpcService) ServerLive(context.Context, *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return &pb.ServerLiveResponse{Live: true}, nil
}

func (g *grpcService) ServerReady(context.Context, *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: g.s.Ready()}, nil
}

func (g *grpcService) ModelReady(_ context.Context, req *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	m, err := g.s.lookup(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, grpcError(err)
	}
	ready, _ := g.s.modelReadiness(m)
	return &pb.ModelReadyResponse{Ready: ready}, nil
}

func (g *grpcService) ServerMetadata(context.Context, *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	return &pb.ServerMetadataResponse{Name: "clhost", Version: g.s.opts.Version, Extensions: g.s.extensions()}, nil
}

func (g *grpcService) ModelMetadata(_ context.Context, req *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	m, err := g.s.lookup(req.GetName(), req.GetVersion())
	if err == nil {
		err = m.notServed()
	}
	if err != nil {
		return nil, grpcError(err)
	}
	metas := func(ts []tensorMeta) []*pb.ModelMetadataResponse_TensorMetadata {
		out := make([]*pb.ModelMetadataResponse_TensorMetadata, len(ts))
		for i := range ts {
			out[i] = &pb.ModelMetadataResponse_TensorMetadata{Name: ts[i].name, Datatype: ts[i].datatype, Shape: ts[i].metaShape(m.batched)}
		}
		return out
	}
	return &pb.ModelMetadataResponse{Name: m.name, Versions: []string{modelVersion}, Platform: m.platform,
		Inputs: metas(m.inputs), Outputs: metas(m.outputs)}, nil
}

// ModelInfer runs one inference. Outputs come back as raw_output_contents, unless the
// request gave its inputs as typed contents: then as typed contents too.
func (g *grpcService) ModelInfer(ctx context.Context, req *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	// What the codec found reading the request, or took from the budget for it.
	release, err := takeCodecNote(req)
	defer release()
	if err != nil {
		g.s.metrics.rejected(unknownModel, err)
		return nil, grpcError(err)
	}
	if limit := g.s.opts.MaxBodyBytes; int64(len(req.GetRawInputContents())) > 0 && rawTotal(req) > limit {
		return nil, grpcError(errorf(KindTooLarge, "raw input contents exceed the limit of %d bytes", limit))
	}
	var outs []int
	raw := len(req.GetRawInputContents()) > 0 || len(req.GetInputs()) == 0
	// The message, already read, is held until the answer, with what it is decoded to.
	h := g.s.hold()
	defer h.release()
	// Inputs and outputs in shared memory: their regions are held until the answer.
	use := g.s.newShmUse()
	failed := false
	defer func() { use.release(failed) }()
	parse := func(m *servedModel) ([]wireInput, error) {
		if err := h.take(int64(proto.Size(req))); err != nil {
			return nil, err
		}
		var err error
		if outs, err = grpcOutputs(m, req); err != nil {
			return nil, err
		}
		shmIns, rest, err := use.grpcInputs(req)
		if err != nil {
			return nil, err
		}
		if len(rest.GetInputs()) == 0 {
			raw = true // no input gave typed contents
		}
		ins, err := grpcInputs(rest)
		if err != nil {
			return nil, err
		}
		ins = append(ins, shmIns...)
		return ins, use.grpcOutputs(m, req, outs, ins)
	}
	m, rep, err := g.s.inferHeld(ctx, h, req.GetModelName(), req.GetModelVersion(), parse)
	if err == nil {
		err = use.write(m, rep)
	}
	if err != nil {
		failed = deviceFailed(err)
		return nil, grpcError(err)
	}
	res := &pb.ModelInferResponse{ModelName: m.name, ModelVersion: modelVersion, Id: req.GetId(), Parameters: req.GetParameters()}
	items := 1
	if m.batched && len(m.outputs) > 0 {
		items = len(rep.outputs[0]) / max(m.outputs[0].row, 1)
	}
	for k, i := range outs {
		t := &m.outputs[i]
		shape := make([]int64, len(t.shape))
		for d := range shape {
			shape[d] = int64(t.shape[d])
		}
		if m.batched {
			shape[0] = int64(items)
		}
		o := &pb.ModelInferResponse_InferOutputTensor{Name: t.name, Datatype: t.datatype, Shape: shape}
		if len(req.GetOutputs()) > 0 {
			o.Parameters = req.GetOutputs()[k].GetParameters()
		}
		data := rep.outputs[i]
		if use.inShm(i) {
			// No data: an empty entry keeps raw_output_contents one per output.
			if raw {
				res.RawOutputContents = append(res.RawOutputContents, nil)
			}
		} else if raw {
			res.RawOutputContents = append(res.RawOutputContents, rawBytes(t.datatype, data))
		} else {
			o.Contents = typedContents(t.datatype, data)
		}
		res.Outputs = append(res.Outputs, o)
	}
	return res, nil
}

func rawTotal(req *pb.ModelInferRequest) int64 {
	var n int64
	for _, b := range req.GetRawInputContents() {
		n += int64(len(b))
	}
	return n
}

// grpcOutputs resolves the requested outputs (all when none is named) to model indexes.
func grpcOutputs(m *servedModel, req *pb.ModelInferRequest) ([]int, error) {
	if len(req.GetOutputs()) == 0 {
		outs := make([]int, len(m.outputs))
		for i := range outs {
			outs[i] = i
		}
		return outs, nil
	}
	var outs []int
	seen := map[string]bool{}
	for _, o := range req.GetOutputs() {
		i, err := m.outputIndex(o.GetName())
		if err != nil {
			return nil, err
		}
		if seen[o.GetName()] {
			return nil, errorf(KindInvalid, "output %q is requested twice", o.GetName())
		}
		seen[o.GetName()] = true
		outs = append(outs, i)
	}
	return outs, nil
}

// grpcInputs turns a request's inputs into wire inputs: raw_input_contents in the
// order of the inputs, or each input's typed contents.
func grpcInputs(req *pb.ModelInferRequest) ([]wireInput, error) {
	raw := req.GetRawInputContents()
	if len(raw) > 0 && len(raw) != len(req.GetInputs()) {
		return nil, errorf(KindInvalid, "%d raw_input_contents for %d inputs: give one per input, in their order", len(raw), len(req.GetInputs()))
	}
	out := make([]wireInput, len(req.GetInputs()))
	for i, in := range req.GetInputs() {
		wi := wireInput{name: in.GetName(), datatype: in.GetDatatype(), shape: in.GetShape()}
		switch {
		case len(raw) > 0 && in.GetContents() != nil:
			return nil, errorf(KindInvalid, "input %q has contents while the request carries raw_input_contents", in.GetName())
		case len(raw) > 0:
			wi.fill, wi.raw = rawFill(in.GetName(), in.GetDatatype(), raw[i]), raw[i]
		case in.GetContents() == nil:
			return nil, errorf(KindInvalid, "input %q has no contents and the request no raw_input_contents", in.GetName())
		default:
			wi.check = typedCheck(in.GetName(), in.GetDatatype(), in.GetContents())
			wi.fill = typedFill(in.GetName(), in.GetDatatype(), in.GetContents())
			if in.GetDatatype() == "FP32" {
				wi.floats = in.GetContents().GetFp32Contents()
			}
		}
		out[i] = wi
	}
	return out, nil
}

// typedCheck checks that an input's typed contents hold exactly elems values of its
// datatype, before anything is allocated for it.
func typedCheck(name, dt string, c *pb.InferTensorContents) func(elems int) error {
	return func(elems int) error {
		var n int
		switch dt {
		case "FP32":
			n = len(c.GetFp32Contents())
		case "INT8", "INT32":
			n = len(c.GetIntContents())
		case "UINT8":
			n = len(c.GetUintContents())
		case "INT64":
			n = len(c.GetInt64Contents())
		default:
			return errorf(KindInvalid, "input %q: no typed contents for datatype %s", name, dt)
		}
		if n != elems {
			return errorf(KindInvalid, "input %q: contents hold %d values, its shape has %d", name, n, elems)
		}
		return nil
	}
}

// typedFill decodes an input's contents from the repeated field of its datatype.
func typedFill(name, dt string, c *pb.InferTensorContents) func(dst []float32) error {
	return func(dst []float32) error {
		var n int
		var at func(i int) (float32, bool)
		switch dt {
		case "FP32":
			v := c.GetFp32Contents()
			n, at = len(v), func(i int) (float32, bool) { return v[i], true }
		case "INT8", "INT32":
			v := c.GetIntContents()
			lo, hi := intRange(dt)
			n, at = len(v), func(i int) (float32, bool) {
				x := int64(v[i])
				return float32(x), x >= lo && x <= hi && x <= maxExactInt && x >= -maxExactInt
			}
		case "UINT8":
			v := c.GetUintContents()
			n, at = len(v), func(i int) (float32, bool) { return float32(v[i]), v[i] <= math.MaxUint8 }
		case "INT64":
			v := c.GetInt64Contents()
			n, at = len(v), func(i int) (float32, bool) {
				return float32(v[i]), v[i] <= maxExactInt && v[i] >= -maxExactInt
			}
		default:
			return fmt.Errorf("input %q: no typed contents for datatype %s", name, dt)
		}
		if n != len(dst) {
			return fmt.Errorf("input %q: contents hold %d values, its shape has %d", name, n, len(dst))
		}
		for i := range dst {
			x, ok := at(i)
			if !ok {
				return fmt.Errorf("input %q: value %d is out of the range of %s or beyond ±2^24, which float32 cannot hold exactly", name, i, dt)
			}
			dst[i] = x
		}
		return nil
	}
}

// typedContents puts an output's values in the repeated field of its datatype.
func typedContents(dt string, data []float32) *pb.InferTensorContents {
	c := &pb.InferTensorContents{}
	switch dt {
	case "FP32":
		c.Fp32Contents = data
	case "INT8", "INT32":
		c.IntContents = make([]int32, len(data))
		for i, v := range data {
			c.IntContents[i] = int32(clampInt(v, math.MinInt32, math.MaxInt32))
		}
	case "UINT8":
		c.UintContents = make([]uint32, len(data))
		for i, v := range data {
			c.UintContents[i] = uint32(clampInt(v, 0, math.MaxUint8))
		}
	case "INT64":
		c.Int64Contents = make([]int64, len(data))
		for i, v := range data {
			c.Int64Contents[i] = clampInt(v, math.MinInt64, math.MaxInt64)
		}
	}
	return c
}
