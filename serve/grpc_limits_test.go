package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/clhost/clhost/serve/inferencepb"
)

// openInfer opens ModelInfer stream id and sends the 5-byte prefix of a message of
// declared bytes followed by send of them (within the stream's first window).
func (h *h2Conn) openInfer(t *testing.T, id uint32, declared uint32, send int, extra ...[2]string) {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fields := [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.GRPCInferenceService_ModelInfer_FullMethodName},
		{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}}
	for _, f := range append(fields, extra...) {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if declared == 0 && send == 0 {
		return // headers only
	}
	msg := make([]byte, 5+send)
	binary.BigEndian.PutUint32(msg[1:5], declared)
	if err := h.fr.WriteData(id, false, msg); err != nil {
		t.Fatal(err)
	}
}

// h2Event is what the server sent on the connection that a test waits for.
type h2Event struct {
	stream     uint32
	grpcStatus int // -1 when none
	message    string
	rst        http2.ErrCode
	goAway     bool
	goAwayCode http2.ErrCode
	settings   map[http2.SettingID]uint32
}

// next reads frames until one of interest: a stream's trailers (grpc-status), an
// RST_STREAM, a GOAWAY or the server's SETTINGS; ok false when none came in wait.
func (h *h2Conn) next(wait time.Duration) (ev h2Event, ok bool) {
	_ = h.SetReadDeadline(time.Now().Add(wait))
	dec := decoders(h)
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return h2Event{}, false
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			ev := h2Event{stream: f.StreamID, grpcStatus: -1}
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return h2Event{}, false
			}
			for _, hf := range fields {
				switch hf.Name {
				case "grpc-status":
					ev.grpcStatus, _ = strconv.Atoi(hf.Value)
				case "grpc-message":
					ev.message = hf.Value
				}
			}
			if ev.grpcStatus >= 0 {
				return ev, true
			}
		case *http2.RSTStreamFrame:
			return h2Event{stream: f.StreamID, grpcStatus: -1, rst: f.ErrCode}, true
		case *http2.GoAwayFrame:
			return h2Event{grpcStatus: -1, goAway: true, goAwayCode: f.ErrCode}, true
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			_ = h.fr.WriteSettingsAck()
			ev := h2Event{grpcStatus: -1, settings: map[http2.SettingID]uint32{}}
			_ = f.ForeachSetting(func(s http2.Setting) error { ev.settings[s.ID] = s.Val; return nil })
			return ev, true
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.fr.WritePing(true, f.Data)
			}
		}
	}
}

// h2Decoders keeps each connection's HPACK decoder: its table lasts as long as the
// connection.
var h2Decoders sync.Map

func decoders(h *h2Conn) *hpack.Decoder {
	d, _ := h2Decoders.LoadOrStore(h, hpack.NewDecoder(4096, nil))
	return d.(*hpack.Decoder)
}

// statusOf waits for stream id's trailers or reset.
func (h *h2Conn) statusOf(t *testing.T, id uint32, wait time.Duration) h2Event {
	t.Helper()
	return h.statuses(t, []uint32{id}, wait)[id]
}

// statuses waits for the trailers or reset of every stream of ids.
func (h *h2Conn) statuses(t *testing.T, ids []uint32, wait time.Duration) map[uint32]h2Event {
	t.Helper()
	got := map[uint32]h2Event{}
	deadline := time.Now().Add(wait)
	for len(got) < len(ids) && time.Now().Before(deadline) {
		ev, ok := h.next(time.Until(deadline))
		if !ok {
			break
		}
		if _, seen := got[ev.stream]; ev.stream != 0 && !seen {
			got[ev.stream] = ev // trailers, then perhaps a reset
		}
	}
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			t.Fatalf("stream %d: no status within %v", id, wait)
		}
	}
	return got
}

// TestGRPCMessageOverBudget: a message that alone is larger than the budget of bytes
// in flight (yet within --max-body) is refused at its 5-byte prefix with
// RESOURCE_EXHAUSTED, before its body is read.
func TestGRPCMessageOverBudget(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 1 << 20})
	h := dialH2(t, ts.grpcAddr)
	h.openInfer(t, 1, 2<<20, 10)
	ev := h.statusOf(t, 1, 5*time.Second)
	if codes.Code(ev.grpcStatus) != codes.ResourceExhausted || !strings.Contains(ev.message, "larger than max") {
		t.Errorf("a 2 MiB message to a 1 MiB budget, 10 bytes of it sent: status %d %q (reset %v), want RESOURCE_EXHAUSTED at once", ev.grpcStatus, ev.message, ev.rst)
	}
}

// TestGRPCReceiptTimeout: a call whose message does not arrive within the read
// timeout — headers alone, or part of a message — ends with DEADLINE_EXCEEDED and is
// counted out; a call whose message arrived may wait for a busy device past it.
func TestGRPCReceiptTimeout(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, ReadTimeout: 300 * time.Millisecond})
	h := dialH2(t, ts.grpcAddr)
	t0 := time.Now()
	h.openInfer(t, 1, 0, 0)     // headers, no message
	h.openInfer(t, 3, 1000, 10) // 10 bytes of 1000
	evs := h.statuses(t, []uint32{1, 3}, 10*time.Second)
	for _, id := range []uint32{1, 3} {
		ev := evs[id]
		if codes.Code(ev.grpcStatus) != codes.DeadlineExceeded {
			t.Errorf("stream %d, its message stalled: status %d %q (reset %v), want DEADLINE_EXCEEDED", id, ev.grpcStatus, ev.message, ev.rst)
		}
	}
	if took := time.Since(t0); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("stalled messages were ended after %v, want about the read timeout of 300ms", took)
	}
	waitFor(t, "the stalled calls to be counted out", func() bool { return ts.budget.receiving.n.Load() == 0 })

	d, ok, _ := ts.sched.claim(ts.models["relu"], 1)
	if !ok {
		t.Fatal("could not hold the device")
	}
	go func() {
		time.Sleep(time.Second)
		ts.sched.release(d, false)
	}()
	img := randomImage(rand.New(rand.NewSource(5)), 1)
	_, want := reluReference(img)
	res, err := grpcClient(t, ts.grpcAddr).ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		Outputs:          []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "pooled"}},
		RawInputContents: [][]byte{float32Bytes(img)}})
	if err != nil {
		t.Fatalf("a call that waited for the device past the read timeout: %v", err)
	}
	compareFloats(t, "pooled", bytesFloat32(res.RawOutputContents[0]), want)
}

// TestGRPCConnectionLimits: the server announces its limits on streams and metadata
// per connection, refuses a stream past the first, refuses a call whose metadata
// alone is more than the budget, and disconnects a client that floods it with pings.
func TestGRPCConnectionLimits(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 256 << 10})
	h := dialH2(t, ts.grpcAddr)
	ev, ok := h.next(5 * time.Second)
	if !ok || ev.settings == nil {
		t.Fatal("no SETTINGS from the server")
	}
	if got := ev.settings[http2.SettingMaxConcurrentStreams]; got != grpcMaxStreams {
		t.Errorf("MAX_CONCURRENT_STREAMS %d, want %d", got, grpcMaxStreams)
	}
	if got := ev.settings[http2.SettingMaxHeaderListSize]; got != grpcMaxHeaderBytes {
		t.Errorf("MAX_HEADER_LIST_SIZE %d, want %d", got, grpcMaxHeaderBytes)
	}
	for i := range uint32(grpcMaxStreams) {
		h.openInfer(t, 2*i+1, 0, 0)
	}
	over := uint32(2*grpcMaxStreams + 1)
	h.openInfer(t, over, 0, 0)
	if ev := h.statusOf(t, over, 5*time.Second); ev.rst != http2.ErrCodeRefusedStream {
		t.Errorf("stream %d past the limit: status %d %q reset %v, want REFUSED_STREAM", grpcMaxStreams+1, ev.grpcStatus, ev.message, ev.rst)
	}

	// 300 KB of metadata, within what HTTP/2 may carry, more than the 256 KiB budget.
	c := grpcClient(t, ts.grpcAddr)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("m", 300<<10))
	img := randomImage(rand.New(rand.NewSource(6)), 1)
	req := &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(img)}}
	if _, err := c.ModelInfer(ctx, req); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "whole budget") {
		t.Errorf("a call with 300 KB of metadata to a 256 KiB budget: %v, want RESOURCE_EXHAUSTED", err)
	}
	if _, err := c.ModelInfer(context.Background(), req); err != nil {
		t.Errorf("a call after the one with large metadata: %v", err)
	}

	p := dialH2(t, ts.grpcAddr)
	t0 := time.Now()
	for time.Since(t0) < 5*time.Second {
		if err := p.fr.WritePing(false, [8]byte{1}); err != nil {
			break // closed by the server
		}
		if ev, ok := p.next(5 * time.Millisecond); ok && ev.goAway {
			if ev.goAwayCode != http2.ErrCodeEnhanceYourCalm {
				t.Errorf("a ping flood: GOAWAY %v, want ENHANCE_YOUR_CALM", ev.goAwayCode)
			}
			return
		}
	}
	t.Error("a client pinging every few milliseconds was not disconnected")
}

// gatedConn passes the bytes a client writes while its gate allows them and blocks
// the rest until the gate opens further or the connection closes: a gRPC client
// stalled in the middle of its message.
type gatedConn struct {
	net.Conn
	mu     sync.Mutex
	cond   *sync.Cond
	left   int
	closed bool
}

func (g *gatedConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		g.mu.Lock()
		for g.left == 0 && !g.closed {
			g.cond.Wait()
		}
		if g.closed {
			g.mu.Unlock()
			return done, net.ErrClosed
		}
		n := min(len(b)-done, g.left)
		g.left -= n
		g.mu.Unlock()
		w, err := g.Conn.Write(b[done : done+n])
		done += w
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// open lets n more bytes through.
func (g *gatedConn) open(n int) {
	g.mu.Lock()
	g.left += n
	g.cond.Broadcast()
	g.mu.Unlock()
}

func (g *gatedConn) Close() error {
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
	return g.Conn.Close()
}

// stalledCall starts a ModelInfer of a message of size bytes on a connection of its
// own that sends only the first after bytes until its gate is opened further; its
// error comes on the channel.
func stalledCall(t *testing.T, addr string, size, after int) (<-chan error, *gatedConn) {
	t.Helper()
	gate := &gatedConn{left: after}
	gate.cond = sync.NewCond(&gate.mu)
	dial := func(ctx context.Context, a string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", a)
		if err != nil {
			return nil, err
		}
		gate.Conn = c
		return gate, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithContextDialer(dial), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	errc := make(chan error, 1)
	go func() {
		_, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
			Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
			RawInputContents: [][]byte{make([]byte, size)}})
		errc <- err
	}()
	return errc, gate
}

// TestGRPCReceivingBudget: the bytes of gRPC messages still arriving count against
// the budget of bytes in flight as they arrive, so a REST request that does not fit
// beside them gets 429; when arriving messages take the budget past its overdraft,
// the calls still receiving are cancelled and give their bytes back, and the server
// answers the next call.
func TestGRPCReceivingBudget(t *testing.T) {
	const limit = 4 << 20 // overdraft 2 MiB
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: limit})
	first, firstGate := stalledCall(t, ts.grpcAddr, 3<<20, 5<<19) // 2.5 of 3 MiB
	waitFor(t, "the first message's bytes to count", func() bool { return ts.budget.used.Load() >= 2<<20 })

	req, err := http.NewRequest("POST", ts.httpURL+"/v2/models/relu/infer", strings.NewReader(strings.Repeat(" ", 2<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 2 MiB REST body beside 2.5 MiB of a gRPC message arriving, budget 4 MiB: %d, want 429", resp.StatusCode)
	}

	// Three more calls admitted while the budget is not spent, then 1.5 MiB of each:
	// past the 6 MiB of the limit and its overdraft.
	var more []<-chan error
	var gates []*gatedConn
	for range 3 {
		errc, gate := stalledCall(t, ts.grpcAddr, 3<<20, 64<<10)
		more, gates = append(more, errc), append(gates, gate)
	}
	waitFor(t, "four calls receiving", func() bool { return ts.budget.receiving.n.Load() == 4 })
	for _, g := range gates {
		g.open(3<<19 - 64<<10)
	}
	for i, errc := range append(more, first) {
		select {
		case err := <-errc:
			if status.Code(err) != codes.Canceled {
				t.Errorf("call %d, receiving when the budget's overdraft was passed: %v, want CANCELED", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("call %d was not cancelled once arriving messages passed the budget's overdraft (%d bytes held)", i, ts.budget.used.Load())
		}
	}
	// The transport keeps a few frames of a cancelled call while its connection lives.
	for _, g := range append(gates, firstGate) {
		g.Close()
	}
	waitFor(t, "the cancelled calls' bytes to be given back", func() bool {
		runtime.GC() // buffers the transport dropped give their bytes back when freed
		return ts.budget.used.Load() == 0 && ts.budget.receiving.n.Load() == 0
	})
	img := randomImage(rand.New(rand.NewSource(8)), 1)
	if _, err := grpcClient(t, ts.grpcAddr).ModelInfer(context.Background(), &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(img)}}); err != nil {
		t.Errorf("a call after the cancelled ones: %v", err)
	}
}

// TestGRPCLongShape: a gRPC shape of a million dimensions (1 MB packed, 8 MB decoded)
// gets INVALID_ARGUMENT naming the limit, without being decoded; a good call follows.
func TestGRPCLongShape(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	c := grpcClient(t, ts.grpcAddr)
	img := randomImage(rand.New(rand.NewSource(10)), 1)
	good := &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(img)}}
	if _, err := c.ModelInfer(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	long := make([]int64, 1_000_000)
	for i := range long {
		long[i] = 1
	}
	bad := &pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: long}},
		RawInputContents: [][]byte{float32Bytes(img)}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.ModelInfer(context.Background(), bad)
	runtime.ReadMemStats(&after)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "more than 64") {
		t.Errorf("a shape of a million dimensions: %v, want INVALID_ARGUMENT naming the limit", err)
	}
	// The client's message and the server's copies of it are a few MB; decoded, 8 more.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 6<<20 {
		t.Errorf("a 1 MB message with a long shape made the process allocate %d MB", grew>>20)
	}
	if _, err := c.ModelInfer(context.Background(), good); err != nil {
		t.Errorf("a call after the long shape: %v", err)
	}
	if n := countMap(&codecNotes); n != 0 {
		t.Errorf("%d refused requests left recorded", n)
	}
}

func countMap(m *sync.Map) int {
	n := 0
	m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// TestGRPCUnreadAnswers: a client that never reads its answers (its flow-control
// window left at 0) holds them in the budget of bytes in flight, not beside it, and
// only until its connection's age and grace are up: then the server closes the
// connection and the bytes come back.
func TestGRPCUnreadAnswers(t *testing.T) {
	defer func(age time.Duration) { grpcMaxConnectionAge = age }(grpcMaxConnectionAge)
	grpcMaxConnectionAge = 500 * time.Millisecond
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, InferTimeout: time.Second, ReadTimeout: 500 * time.Millisecond})
	c, err := net.DialTimeout("tcp", ts.grpcAddr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	h := &h2Conn{Conn: c, fr: http2.NewFramer(c, c)}
	if err := h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	img := randomImage(rand.New(rand.NewSource(11)), 4)
	msg, err := proto.Marshal(&pb.ModelInferRequest{ModelName: "relu",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{4, imgC, imgH, imgW}}},
		RawInputContents: [][]byte{float32Bytes(img)}})
	if err != nil {
		t.Fatal(err)
	}
	h.openInfer(t, 1, uint32(len(msg)), 0)
	if err := h.fr.WriteData(1, true, msg); err != nil {
		t.Fatal(err)
	}
	// Answered by the handler, its 5 KB still unsent.
	waitFor(t, "the call to be answered", func() bool { return inflight(ts.Server) == 0 && ts.budget.used.Load() > 0 })
	t0 := time.Now()
	held := ts.budget.used.Load()
	for {
		ev, ok := h.next(10 * time.Second)
		if !ok {
			break // closed
		}
		if ev.stream == 1 {
			t.Fatalf("the answer's status came through a window of 0: %+v", ev)
		}
	}
	if took := time.Since(t0); took > 8*time.Second {
		t.Errorf("the connection of a client not reading its answer was closed after %v, want within the age and grace of about 2s", took)
	}
	waitFor(t, "the unsent answer's bytes to be given back", func() bool {
		runtime.GC()
		return ts.budget.used.Load() == 0
	})
	t.Logf("an unread answer held %d bytes of the budget until its connection was closed after %v", held, time.Since(t0))
}

// TestGRPCDecodeCost: what protobuf would make of a message beyond its bytes is taken
// from the budget before it is decoded: 4 MB of packed int64 contents (32 MB decoded)
// and a million empty inputs (2 MB, a struct each) to a 16 MiB budget get
// RESOURCE_EXHAUSTED without being decoded; the same contents within a larger budget
// are decoded, refused by their datatype, and give their bytes back.
func TestGRPCDecodeCost(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 16 << 20})
	c := grpcClient(t, ts.grpcAddr)
	ones := make([]int64, 4<<20)
	for i := range ones {
		ones[i] = 1
	}
	typed := &pb.ModelInferRequest{ModelName: "relu", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32",
		Shape: []int64{1, imgC, imgH, imgW}, Contents: &pb.InferTensorContents{Int64Contents: ones}}}}
	empty := &pb.ModelInferRequest{ModelName: "relu", Inputs: make([]*pb.ModelInferRequest_InferInputTensor, 1<<20)}
	for i := range empty.Inputs {
		empty.Inputs[i] = &pb.ModelInferRequest_InferInputTensor{}
	}
	for _, tc := range []struct {
		name string
		req  *pb.ModelInferRequest
	}{{"4 MB of int64 contents", typed}, {"a million empty inputs", empty}} {
		wire := proto.Size(tc.req)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.ModelInfer(context.Background(), tc.req)
		runtime.ReadMemStats(&after)
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "decoding the request takes") {
			t.Errorf("%s to a 16 MiB budget: %v, want RESOURCE_EXHAUSTED", tc.name, err)
		}
		// The client's message and the server's copies of it; decoded, far more.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(5*wire) {
			t.Errorf("%s (%d bytes): the process allocated %d MB", tc.name, wire, grew>>20)
		}
	}
	waitFor(t, "the budget to be given back", func() bool { return ts.budget.used.Load() == 0 })

	big := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxInflightBytes: 256 << 20})
	if _, err := grpcClient(t, big.grpcAddr).ModelInfer(context.Background(), typed); status.Code(err) != codes.InvalidArgument {
		t.Errorf("int64 contents for an FP32 input within the budget: %v, want INVALID_ARGUMENT", err)
	}
	waitFor(t, "the decoded request's bytes to be given back", func() bool { return big.budget.used.Load() == 0 })
	if n := countMap(&codecNotes); n != 0 {
		t.Errorf("%d codec notes left", n)
	}
}
