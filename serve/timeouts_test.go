package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/clhost/clhost/host"
	pb "github.com/clhost/clhost/serve/inferencepb"
)

// startStalled sends a request whose Content-Length promises far more than it sends,
// and leaves it there.
func startStalled(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST /v2/models/relu/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"inputs\":"); err != nil {
		t.Fatal(err)
	}
	return c
}

// h2Conn is a raw HTTP/2 connection to the gRPC listener, for clients no gRPC library
// would be: one that stops in the middle of a message, or one that goes idle.
type h2Conn struct {
	net.Conn
	fr *http2.Framer
}

func dialH2(t *testing.T, addr string) *h2Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return &h2Conn{Conn: c, fr: fr}
}

// stallInfer opens a ModelInfer stream and sends 10 bytes of a message that claims
// 1000.
func (h *h2Conn) stallInfer(t *testing.T) {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.GRPCInferenceService_ModelInfer_FullMethodName},
		{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	msg := append([]byte{0, 0, 0, 0x03, 0xe8}, make([]byte, 10)...)
	if err := h.fr.WriteData(1, false, msg); err != nil {
		t.Fatal(err)
	}
}

// closedByServer reads frames until the server sends GOAWAY or closes the connection,
// and reports whether it did within wait.
func (h *h2Conn) closedByServer(wait time.Duration) bool {
	_ = h.SetReadDeadline(time.Now().Add(wait))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || !isTimeout(err)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			return true
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.fr.WritePing(true, f.Data)
			}
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestBodyReadTimeout: a client that sends part of its body and stalls gets 408 (a JSON
// error) once the read timeout passes, and its request is counted out.
func TestBodyReadTimeout(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, ReadTimeout: 300 * time.Millisecond})
	c := startStalled(t, strings.TrimPrefix(ts.httpURL, "http://"))
	t0 := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"error":"reading the request body: it did not arrive within`) {
		t.Errorf("a stalled body: %d %s, want 408", resp.StatusCode, body)
	}
	if took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("a stalled body was answered after %v, want about the read timeout of 300ms", took)
	}
	waitFor(t, "the stalled request to be counted out", func() bool { return inflight(ts.Server) == 0 })
}

// TestReadTimeoutSparesSlowAnswers: the read timeout bounds the body, not the answer:
// a request whose body arrived waits for a busy device past it and is answered.
func TestReadTimeoutSparesSlowAnswers(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, ReadTimeout: 200 * time.Millisecond})
	d, ok, _ := ts.sched.claim(ts.models["relu"], 1)
	if !ok {
		t.Fatal("could not hold the device")
	}
	go func() {
		time.Sleep(800 * time.Millisecond)
		ts.sched.release(d, false)
	}()
	img := randomImage(rand.New(rand.NewSource(2)), 1)
	_, want := reluReference(img)
	code, r := post(t, ts.httpURL+"/v2/models/relu/infer", jsonRequest(t, map[string]any{"inputs": []map[string]any{{"name": "image",
		"datatype": "FP32", "shape": []int{1, imgC, imgH, imgW}, "data": img}}}), nil)
	if code != 200 {
		t.Fatalf("a request that waited past the read timeout: %d %s", code, r.Error)
	}
	compareFloats(t, "pooled", r.floats("pooled"), want)
}

// TestIdleTimeout: a keep-alive connection left idle is closed by the server.
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, IdleTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.httpURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t0 := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection: %v, want closed by the server", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("an idle connection was closed after %v, want about 300ms", took)
	}
	// gRPC: an idle connection gets GOAWAY.
	h := dialH2(t, ts.grpcAddr)
	t0 = time.Now()
	if !h.closedByServer(20 * time.Second) {
		t.Error("an idle gRPC connection was not closed by the server")
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("an idle gRPC connection was closed after %v, want about 300ms", took)
	}
}

// TestConnectionLimit: beyond MaxConnections a new connection is not served until one
// of the open ones closes.
func TestConnectionLimit(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, MaxConnections: 2})
	addr := strings.TrimPrefix(ts.httpURL, "http://")
	live := func(c net.Conn, wait time.Duration) error {
		if _, err := fmt.Fprintf(c, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	var open []net.Conn
	for i := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := live(c, 20*time.Second); err != nil {
			t.Fatalf("connection %d within the limit: %v", i, err)
		}
		open = append(open, c)
	}
	third, err := net.Dial("tcp", addr) // the kernel's backlog takes it; the server does not
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if err := live(third, 500*time.Millisecond); err == nil {
		t.Fatal("a third connection was served with a limit of 2")
	}
	open[0].Close()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The third connection's request was sent; the server now accepts it, and this one
	// after it once another closes.
	_ = third.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the waiting connection after one closed: %v", err)
	}
	resp.Body.Close()
}

// TestDrainTimeoutBoundsShutdown: clients stalled in the middle of a request — an HTTP
// body, a gRPC message — do not keep Serve from returning at the drain timeout; Serve
// reports the accepted request it cut (the HTTP one: a gRPC call is accepted once its
// message is in).
func TestDrainTimeoutBoundsShutdown(t *testing.T) {
	devs, labels := testDevices(t, 1)
	s, err := New([]Source{reluSource()}, Options{Devices: devs, DeviceNames: labels, Engine: host.Options{NoGlobalConfig: true}, MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	const drain = 500 * time.Millisecond
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- s.Serve(ctx, hl, gl, drain) }()
	startStalled(t, hl.Addr().String())
	dialH2(t, gl.Addr().String()).stallInfer(t)
	waitFor(t, "the stalled request to be accepted", func() bool { return inflight(s) == 1 })
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		took := time.Since(t0)
		var de *DrainError
		if !errors.As(err, &de) || de.Cut != 1 || !strings.Contains(err.Error(), "1 accepted request was cut") {
			t.Errorf("Serve after cutting a stalled request: %v, want a DrainError of 1", err)
		}
		if took < drain-50*time.Millisecond || took > drain+time.Second {
			t.Errorf("Serve returned %v after the shutdown began, want about the drain timeout of %v", took, drain)
		}
	case <-time.After(drain + 10*time.Second):
		t.Fatal("Serve did not return after the drain timeout with a client stalled mid-body")
	}
	waitFor(t, "the cut request's handler to end", func() bool { return inflight(s) == 0 })
	s.Close()
}
