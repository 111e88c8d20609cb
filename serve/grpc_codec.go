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

// shapeCodec is gRPC's protobuf codec, but it reads a ModelInferRequest's wire form
// before decoding it. Protobuf makes more of some bytes than they are: each value of a
// packed int64 field (a shape, int64_contents) 8 bytes of one, each element of a
// repeated message (inputs, parameters) a struct of a hundred bytes or more of two, so
// that 30 MiB of int64_contents took 240 MiB before any handler ran. The codec takes
// what decoding will add from the budget of bytes in flight first, and refuses a shape
// past maxShapeDims. A request it refuses is left empty and its error recorded in
// codecNotes for ModelInfer to answer (a codec's own error reaches the client as
// INTERNAL); one it decodes records the bytes taken, which ModelInfer gives back.
//
// Its answers are encoded into buffers of pool, which counts them against the budget
// until the transport has sent them: a client that does not read its answers holds
// the budget, not memory beside it.
type shapeCodec struct {
	encoding.CodecV2
	pool   mem.BufferPool
	budget *budget
}

// codecNote is what the codec left for ModelInfer about one request.
type codecNote struct {
	err  error
	hold *hold
}

// codecNotes maps a request the codec read to its note.
var codecNotes sync.Map // *pb.ModelInferRequest → codecNote

// minCodecHold is the least decoding overhead taken from the budget: below it, a
// request's few structs are left to the margin every request has.
const minCodecHold = 16 << 10

func newShapeCodec(pool mem.BufferPool, b *budget) shapeCodec {
	return shapeCodec{CodecV2: encoding.GetCodecV2(grpcproto.Name), pool: pool, budget: b}
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

func (c shapeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.ModelInferRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	extra, err := decodeCost(b)
	if err != nil {
		err = errorf(KindInvalid, "%v", err)
	}
	h := &hold{b: c.budget}
	if err == nil && extra >= minCodecHold {
		if terr := h.take(extra); terr != nil {
			err = fmt.Errorf("decoding the request takes %d bytes beyond its own: %w", extra, terr)
		}
	}
	if err != nil {
		codecNotes.Store(req, codecNote{err: err})
		return nil
	}
	if err := proto.Unmarshal(b, req); err != nil {
		h.release()
		return err
	}
	if h.n > 0 {
		codecNotes.Store(req, codecNote{hold: h})
	}
	return nil
}

// takeCodecNote returns what gives back the bytes the codec took for req, and its
// refusal of req.
func takeCodecNote(req any) (release func(), err error) {
	v, ok := codecNotes.LoadAndDelete(req)
	if !ok {
		return func() {}, nil
	}
	n := v.(codecNote)
	if n.err != nil {
		return func() {}, n.err
	}
	return n.hold.release, nil
}

// Field numbers of the wire forms decodeCost reads.
const (
	reqParameters = 4 // ModelInferRequest
	reqInputs     = 5
	reqOutputs    = 6
	reqRaw        = 7
	inShape       = 3 // InferInputTensor
	inParameters  = 4
	inContents    = 5
	outParameters = 2 // InferRequestedOutputTensor
	contentsBytes = 8 // InferTensorContents' bytes_contents; 1-5 are varints
)

// Decoded costs beyond the wire bytes, generous: a message in a repeated field or a
// map entry (its struct, pointer, map slot), and an element of a repeated bytes field
// (its slice header).
const (
	messageCost = 256
	bytesCost   = 32
)

// varintSize is the decoded size of a value of InferTensorContents' varint fields.
var varintSize = map[protowire.Number]int64{1: 1, 2: 4, 3: 8, 4: 4, 5: 8}

// decodeCost is the memory protobuf allocates decoding a ModelInferRequest's wire
// form beyond the bytes themselves, and an error for a shape of more than maxShapeDims
// dimensions. Malformed bytes are left to the decoder.
func decodeCost(b []byte) (int64, error) {
	var cost int64
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == reqParameters && typ == protowire.BytesType:
			cost += 2 * messageCost
		case num == reqInputs && typ == protowire.BytesType:
			c, err := inputCost(v)
			cost += messageCost + c
			return err
		case num == reqOutputs && typ == protowire.BytesType:
			cost += messageCost + 2*messageCost*count(v, outParameters)
		case num == reqRaw:
			cost += bytesCost
		}
		return nil
	})
	return cost, err
}

// inputCost is decodeCost of an InferInputTensor.
func inputCost(b []byte) (int64, error) {
	var cost, dims int64
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == inShape:
			n := values(typ, v)
			dims += n
			cost += 8 * n
		case num == inParameters:
			cost += 2 * messageCost
		case num == inContents && typ == protowire.BytesType:
			cost += messageCost
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if size, ok := varintSize[num]; ok {
					cost += size * values(typ, v)
				} else if num == contentsBytes {
					cost += bytesCost
				}
				return nil
			})
		}
		return nil
	})
	if err == nil && dims > maxShapeDims {
		err = fmt.Errorf("an input's shape has %d dimensions, more than %d", dims, maxShapeDims)
	}
	return cost, err
}

// fields calls f with each field of a message's wire form: for a varint its bytes,
// for length-delimited data its contents.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		v := b[:m]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b)
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// values is the number of varints a field holds: one, or as many as a packed field
// has bytes that end a varint.
func values(typ protowire.Type, v []byte) int64 {
	if typ != protowire.BytesType {
		return 1
	}
	var n int64
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// count is the number of fields num in a message's wire form.
func count(b []byte, num protowire.Number) int64 {
	var n int64
	_ = fields(b, func(k protowire.Number, _ protowire.Type, _ []byte) error {
		if k == num {
			n++
		}
		return nil
	})
	return n
}
