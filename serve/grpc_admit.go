package serve

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// gRPC reads a call's message whole before its handler runs, and its size is known
// only from the message's own 5-byte prefix: what REST settles from Content-Length
// before reading a body, gRPC must settle while the bytes arrive. So a call is admitted
// at its headers (tapInfer), its message must arrive within the read timeout, its
// bytes count against the budget as they arrive (budgetPool), and past an overdraft
// of the budget the calls still receiving are cancelled.

// grpcMaxStreams bounds the calls one connection runs at once; HTTP/2 clients queue
// the others. grpc-go's defence against a client that resets streams as fast as it
// opens them (rapid reset) also counts against it: without it, unbounded.
const grpcMaxStreams = 128

// grpcMaxHeaderBytes bounds a call's metadata, as net/http bounds REST headers.
const grpcMaxHeaderBytes = 1 << 20

// grpcMinPing is the shortest interval at which a client may send keepalive pings;
// one that pings more often is disconnected (GOAWAY ENHANCE_YOUR_CALM).
const grpcMinPing = 10 * time.Second

// grpcMaxConnectionAge is how long a connection takes new calls; its calls then have
// the longest a call may take to finish (InferTimeout and ReadTimeout) before it is
// closed. gRPC has no deadline for sending an answer: without it, a client that never
// reads its answers (a flow-control window left at 0) held them, and its share of the
// budget, for as long as it kept its connection. Clients reconnect on GOAWAY.
var grpcMaxConnectionAge = 10 * time.Minute

// GRPCServerOptions are the options a gRPC server of this Server needs: messages up to
// the size limit and the budget in, outputs of any size out, calls admitted against
// the budget with their message due within the read timeout, bounded streams and
// metadata per connection, idle connections closed, vanished peers detected and
// ping floods refused.
func (s *Server) GRPCServerOptions() []grpc.ServerOption {
	s.budget.receiving.failed = func(err error) { s.metrics.rejected(unknownModel, err) }
	pool := &budgetPool{inner: mem.DefaultBufferPool(), b: s.budget, overdraft: grpcOverdraft(s.budget.limit), over: s.budget.receiving.cancelReceiving}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(s.opts.MaxBodyBytes, s.budget.limit, math.MaxInt32))),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.MaxConcurrentStreams(grpcMaxStreams),
		grpc.MaxHeaderListSize(grpcMaxHeaderBytes),
		grpc.InTapHandle(s.tapInfer),
		grpc.UnaryInterceptor(s.receivedInterceptor),
		experimental.BufferPool(pool),
		grpc.ForceServerCodecV2(newShapeCodec(pool, s.budget)),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: s.opts.IdleTimeout, Time: time.Minute, Timeout: 20 * time.Second,
			MaxConnectionAge: grpcMaxConnectionAge, MaxConnectionAgeGrace: s.opts.InferTimeout + s.opts.ReadTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: grpcMinPing, PermitWithoutStream: true}),
	}
}

// tapInfer admits a call at its headers. An inference call is refused while the
// requests in flight hold the whole budget, and holds its metadata's bytes until it
// ends. Every call's message must then arrive within the read timeout.
func (s *Server) tapInfer(ctx context.Context, info *tap.Info) (context.Context, error) {
	h := s.hold()
	if info.FullMethodName == pb.GRPCInferenceService_ModelInfer_FullMethodName {
		if s.budget.full() {
			err := errorf(KindOverloaded, "the server is busy: requests in flight hold its whole budget of %d bytes; retry later", s.budget.limit)
			s.metrics.rejected(unknownModel, err)
			return nil, grpcError(err)
		}
		if err := h.take(metadataSize(info.Header)); err != nil {
			s.metrics.rejected(unknownModel, err)
			return nil, grpcError(err)
		}
	}
	return s.budget.receiving.start(ctx, s.opts.ReadTimeout, h), nil
}

// metadataSize is the memory a call's metadata takes, counted as HTTP/2 counts a
// header list: each field's name and value and 32 bytes.
func metadataSize(md metadata.MD) int64 {
	var n int64
	for k, vs := range md {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 32)
		}
	}
	return n
}

// receivedInterceptor ends a call's receipt when its handler is reached, its message
// in: from then on the call may take as long as its device does.
func (s *Server) receivedInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := ctx.Value(receiptKey{}).(*receipt); ok && !r.received() {
		release, _ := takeCodecNote(req)
		release()
		return nil, status.Error(codes.DeadlineExceeded, "the request message did not arrive within the server's read timeout")
	}
	return handler(ctx, req)
}

// receiptKey finds a call's receipt in its context.
type receiptKey struct{}

// Receipt states.
const (
	receiving int32 = iota
	receivedState
	failedState
)

// receipt is a call's context while its message arrives: it ends the call when the
// read timeout passes first (DEADLINE_EXCEEDED) or when the server cancels the calls
// still receiving (CANCELED). The transport reads the message under this context and
// reports its Err as the call's status.
type receipt struct {
	context.Context // cancelled by cancel, or when the call ends
	cancel          context.CancelFunc
	state           atomic.Int32
	err             atomic.Pointer[error] // set by fail before cancel
	timer           *time.Timer
	set             *receiptSet
}

func (r *receipt) Value(key any) any {
	if key == (receiptKey{}) {
		return r
	}
	return r.Context.Value(key)
}

func (r *receipt) Err() error {
	if e := r.err.Load(); e != nil {
		return *e
	}
	return r.Context.Err()
}

// fail ends a call still receiving with err (context.DeadlineExceeded or
// context.Canceled: the transport maps only those to statuses); false when it was
// no longer receiving.
func (r *receipt) fail(err error) bool {
	if !r.state.CompareAndSwap(receiving, failedState) {
		return false
	}
	r.err.Store(&err)
	r.cancel()
	return true
}

// received marks the message in; false when the call was failed first.
func (r *receipt) received() bool {
	if !r.state.CompareAndSwap(receiving, receivedState) {
		return r.state.Load() == receivedState
	}
	r.timer.Stop()
	r.set.remove(r)
	return true
}

// receiptSet is the calls whose message is still arriving.
type receiptSet struct {
	mu sync.Mutex
	m  map[*receipt]struct{}
	n  atomic.Int64 // len(m)
	// failed counts a call ended before its message was in (in metrics).
	failed func(error)
}

// start begins a call's receipt under the timeout. h, what the call holds of the
// budget, is released when the call ends.
func (rs *receiptSet) start(ctx context.Context, timeout time.Duration, h *hold) *receipt {
	inner, cancel := context.WithCancel(ctx)
	r := &receipt{Context: inner, cancel: cancel, set: rs}
	rs.mu.Lock()
	if rs.m == nil {
		rs.m = map[*receipt]struct{}{}
	}
	rs.m[r] = struct{}{}
	rs.n.Store(int64(len(rs.m)))
	rs.mu.Unlock()
	r.timer = time.AfterFunc(timeout, func() {
		if r.fail(context.DeadlineExceeded) && rs.failed != nil {
			rs.failed(errorf(KindTimeout, "the request message did not arrive within the server's read timeout"))
		}
	})
	context.AfterFunc(inner, func() {
		r.timer.Stop()
		rs.remove(r)
		h.release()
	})
	return r
}

func (rs *receiptSet) remove(r *receipt) {
	rs.mu.Lock()
	delete(rs.m, r)
	rs.n.Store(int64(len(rs.m)))
	rs.mu.Unlock()
}

// cancelReceiving cancels every call whose message is still arriving.
func (rs *receiptSet) cancelReceiving() {
	rs.mu.Lock()
	rcpts := make([]*receipt, 0, len(rs.m))
	for r := range rs.m {
		rcpts = append(rcpts, r)
	}
	rs.mu.Unlock()
	for _, r := range rcpts {
		if r.fail(context.Canceled) && rs.failed != nil {
			rs.failed(errorf(KindOverloaded, "cancelled while its message arrived: the messages arriving took the server past its budget of bytes in flight"))
		}
	}
}
