package serve

import (
	"context"
	"fmt"
	"math"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// The gRPC half of the system shared-memory extension.

func (g *grpcService) SystemSharedMemoryStatus(_ context.Context, req *pb.SystemSharedMemoryStatusRequest) (*pb.SystemSharedMemoryStatusResponse, error) {
	st, err := g.s.shmStatuses(req.GetName())
	if err != nil {
		return nil, grpcError(err)
	}
	res := &pb.SystemSharedMemoryStatusResponse{Regions: map[string]*pb.SystemSharedMemoryStatusResponse_RegionStatus{}}
	for _, r := range st {
		res.Regions[r.Name] = &pb.SystemSharedMemoryStatusResponse_RegionStatus{Name: r.Name, Key: r.Key, Offset: uint64(r.Offset), ByteSize: uint64(r.ByteSize)}
	}
	return res, nil
}

func (g *grpcService) SystemSharedMemoryRegister(_ context.Context, req *pb.SystemSharedMemoryRegisterRequest) (*pb.SystemSharedMemoryRegisterResponse, error) {
	if req.GetOffset() > math.MaxInt64 || req.GetByteSize() > math.MaxInt64 {
		return nil, grpcError(errorf(KindInvalid, "shared-memory region %q: offset %d and byte_size %d are out of range", req.GetName(), req.GetOffset(), req.GetByteSize()))
	}
	if err := g.s.shmRegister(req.GetName(), req.GetKey(), int64(req.GetOffset()), int64(req.GetByteSize())); err != nil {
		return nil, grpcError(err)
	}
	return &pb.SystemSharedMemoryRegisterResponse{}, nil
}

func (g *grpcService) SystemSharedMemoryUnregister(_ context.Context, req *pb.SystemSharedMemoryUnregisterRequest) (*pb.SystemSharedMemoryUnregisterResponse, error) {
	if err := g.s.shmUnregister(req.GetName()); err != nil {
		return nil, grpcError(err)
	}
	return &pb.SystemSharedMemoryUnregisterResponse{}, nil
}

// pbShmRef reads a gRPC tensor's shared-memory parameters; ok is false when it names
// no region.
func pbShmRef(where string, params map[string]*pb.InferParameter) (ref shmRef, ok bool, err error) {
	region, hasRegion := params[paramShmRegion]
	size, hasSize := params[paramShmSize]
	offset, hasOffset := params[paramShmOffset]
	if !hasRegion && !hasSize && !hasOffset {
		return ref, false, nil
	}
	if !hasRegion || !hasSize {
		return ref, false, errorf(KindInvalid, "%s: %s and %s go together (%s is optional)", where, paramShmRegion, paramShmSize, paramShmOffset)
	}
	sp, isString := region.GetParameterChoice().(*pb.InferParameter_StringParam)
	if !isString {
		return ref, false, errorf(KindInvalid, "%s: %s is not a string_param", where, paramShmRegion)
	}
	ref.region = sp.StringParam
	if ref.size, err = pbInt(where, paramShmSize, size); err != nil {
		return ref, false, err
	}
	if hasOffset {
		if ref.offset, err = pbInt(where, paramShmOffset, offset); err != nil {
			return ref, false, err
		}
	}
	return ref, true, nil
}

// pbInt reads a non-negative integer parameter, given as int64_param or uint64_param.
func pbInt(where, name string, p *pb.InferParameter) (int64, error) {
	switch v := p.GetParameterChoice().(type) {
	case *pb.InferParameter_Int64Param:
		if v.Int64Param >= 0 {
			return v.Int64Param, nil
		}
	case *pb.InferParameter_Uint64Param:
		if v.Uint64Param <= math.MaxInt64 {
			return int64(v.Uint64Param), nil
		}
	}
	return 0, errorf(KindInvalid, "%s: %s is not a non-negative int64_param or uint64_param", where, name)
}

// grpcInputs resolves the inputs of req that lie in shared memory and returns them, and
// a request of the others, which raw_input_contents (one entry per such input, in
// order, as Triton's clients send them) or their contents carry.
func (u *shmUse) grpcInputs(req *pb.ModelInferRequest) ([]wireInput, *pb.ModelInferRequest, error) {
	var shm []wireInput
	var rest []*pb.ModelInferRequest_InferInputTensor
	for _, in := range req.GetInputs() {
		where := fmt.Sprintf("input %q", in.GetName())
		ref, ok, err := pbShmRef(where, in.GetParameters())
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rest = append(rest, in)
			continue
		}
		if in.GetContents() != nil {
			return nil, nil, errorf(KindInvalid, "%s has both contents and %s", where, paramShmRegion)
		}
		wi, err := u.input(where, in.GetName(), in.GetDatatype(), in.GetShape(), ref)
		if err != nil {
			return nil, nil, err
		}
		shm = append(shm, wi)
	}
	if len(shm) == 0 {
		return nil, req, nil
	}
	return shm, &pb.ModelInferRequest{Inputs: rest, RawInputContents: req.GetRawInputContents()}, nil
}

// grpcOutputs holds the places of the requested outputs (outs: their model indexes)
// that go into shared memory.
func (u *shmUse) grpcOutputs(m *servedModel, req *pb.ModelInferRequest, outs []int, ins []wireInput) error {
	for k, o := range req.GetOutputs() {
		where := fmt.Sprintf("output %q", o.GetName())
		ref, ok, err := pbShmRef(where, o.GetParameters())
		if err != nil {
			return err
		}
		if ok {
			if err := u.output(m, outs[k], where, ref, ins); err != nil {
				return err
			}
		}
	}
	return nil
}
