package serve

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// shapeCodec is gRPC's protobuf codec, but it reads the shapes of a ModelInferRequest
// before decoding it: protobuf makes each dimension of a packed shape 8 bytes of one
// on the wire, so a 64 MiB message of ones would take 512 MiB before any handler ran.
// A request with a shape past maxShapeDims is left empty and recorded in
// refusedShapes, for ModelInfer to answer INVALID_ARGUMENT (a codec's own error
// reaches the client as INTERNAL).
//
// Its answers are encoded into buffers of pool, which counts them against the budget
// until the transport has sent them: a client that does not read its answers holds
// the budget, not memory beyond it.
type shapeCodec struct {
	encoding.CodecV2
	pool mem.BufferPool
}

func newShapeCodec(pool mem.BufferPool) shapeCodec {
	return shapeCodec{CodecV2: encoding.GetCodecV2(grpcproto.Name), pool: pool}
}

func (c shapeCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	size := proto.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		return c.CodecV2.Marshal(v)
	}
	buf := c.pool.Get(size)
	// The size was just computed and the message is not changed meanwhile.
	if _, err := (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend((*buf)[:0], m); err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// refusedShapes maps a request the codec refused to decode to why.
var refusedShapes sync.Map // *pb.ModelInferRequest → error

func (c shapeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.ModelInferRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if err := checkShapes(b); err != nil {
		refusedShapes.Store(req, err)
		return nil
	}
	return proto.Unmarshal(b, req)
}

// refusedShape is why the codec left req empty, or nil.
func refusedShape(req any) error {
	if err, ok := refusedShapes.LoadAndDelete(req); ok {
		return err.(error)
	}
	return nil
}

// ModelInferRequest.inputs and InferInputTensor.shape.
const (
	fieldInputs = 5
	fieldShape  = 3
)

// checkShapes reads the shape of each input of a ModelInferRequest's wire form and
// fails on one of more than maxShapeDims dimensions. Malformed bytes are left to the
// decoder.
func checkShapes(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == fieldInputs && typ == protowire.BytesType {
			in, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			if dims := shapeDimsOf(in); dims > maxShapeDims {
				return fmt.Errorf("an input's shape has %d dimensions, more than %d", dims, maxShapeDims)
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil
		}
		b = b[n:]
	}
	return nil
}

// shapeDimsOf counts the dimensions of an InferInputTensor's wire form, packed or not.
func shapeDimsOf(b []byte) int {
	dims := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dims
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return dims
		}
		if num == fieldShape {
			switch typ {
			case protowire.VarintType:
				dims++
			case protowire.BytesType:
				packed, _ := protowire.ConsumeBytes(b)
				for _, c := range packed {
					if c < 0x80 { // the last byte of each varint
						dims++
					}
				}
			}
		}
		b = b[n:]
	}
	return dims
}
