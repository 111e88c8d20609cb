package serve

import (
	"errors"
	"io"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"sync"
	"unsafe"
)

// Request bodies are read into pooled buffers. At a few thousand requests a second of
// a few hundred kilobytes each (an image), a fresh buffer per request, zeroed and then
// grown as the body is read, cost more than the network's own inference, most of it in
// the garbage collector. A buffer returns to its pool once its request is answered:
// the request's inputs may be views of it (wireInput.view).

// bodyAlign is where a body's binary tensor data starts in its buffer: FP32 data is
// then read in place as float32 values, and CPU devices read it where it lies (the
// host borrows inputs aligned to 64 bytes).
const bodyAlign = 64

// minBodyClass is the smallest pooled buffer, as a power of two.
const minBodyClass = 10

// bodyPools holds free buffers by size class: a buffer of class c has 1<<c bytes.
var bodyPools [48]sync.Pool

// bodyBuffer is a pooled buffer holding one request body.
type bodyBuffer struct {
	mem   []byte
	class int
}

// getBodyBuffer returns a buffer of at least n bytes.
func getBodyBuffer(n int) *bodyBuffer {
	class := max(bits.Len(uint(n-1)), minBodyClass)
	if b, ok := bodyPools[class].Get().(*bodyBuffer); ok {
		return b
	}
	return &bodyBuffer{mem: make([]byte, 1<<class), class: class}
}

// release returns the buffer to its pool; nil does nothing.
func (b *bodyBuffer) release() {
	if b != nil {
		bodyPools[b.class].Put(b)
	}
}

// maxPooledBody is the largest body read into a buffer of its whole length before its
// bytes arrive: a client that announces a larger one and sends it slowly must not hold
// more memory than it has sent.
const maxPooledBody = 16 << 20

// readBody reads the body within the size limit, its bytes taken from h first. A body
// of known length (up to maxPooledBody) is read into a pooled buffer, placed so that
// the binary data after a JSON header of the length the extension's header gives
// starts at bodyAlign; the caller releases the buffer once nothing refers to the body.
// Otherwise the buffer returned is nil.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, h *hold) ([]byte, *bodyBuffer, error) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, nil, errorf(KindTooLarge, "request body of %d bytes exceeds the limit of %d", r.ContentLength, limit)
	}
	if r.ContentLength > 0 {
		if err := h.take(r.ContentLength); err != nil {
			return nil, nil, err
		}
	}
	if r.ContentLength < 0 || r.ContentLength > maxPooledBody {
		var in io.Reader = http.MaxBytesReader(w, r.Body, limit)
		if r.ContentLength < 0 {
			in = &heldReader{r: in, h: h} // a body of unknown length takes its bytes as they come
		}
		body, err := io.ReadAll(in)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, nil, errorf(KindTooLarge, "request body exceeds the limit of %d bytes", limit)
		}
		if err != nil {
			return nil, nil, bodyError(err)
		}
		return body, nil, nil
	}
	n := int(r.ContentLength)
	header := 0
	if v, err := strconv.Atoi(r.Header.Get(headerJSONLength)); err == nil && v >= 0 && v <= n {
		header = v // a bad value is reported by splitBody
	}
	buf := getBodyBuffer(n + bodyAlign - 1)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf.mem))) + uintptr(header)
	pad := int((bodyAlign - start%bodyAlign) % bodyAlign)
	body := buf.mem[pad : pad+n : pad+n]
	if _, err := io.ReadFull(r.Body, body); err != nil {
		buf.release()
		return nil, nil, bodyError(err)
	}
	return body, buf, nil
}

// bodyError is the answer to a body that could not be read: a request the read timeout
// cut, a budget refused, or a malformed or truncated one.
func bodyError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errorf(KindTimeout, "reading the request body: it did not arrive within the server's read timeout")
	}
	return errorf(KindInvalid, "reading the request body: %v", err)
}

// heldReader takes the bytes it reads from a request's hold, and fails once the budget
// refuses them.
type heldReader struct {
	r io.Reader
	h *hold
}

func (hr *heldReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	if terr := hr.h.take(int64(n)); terr != nil {
		return 0, terr
	}
	return n, err
}

// floatView is b as float32 values where they lie, or nil when b's bytes are not the
// machine's float32 or not aligned for them.
func floatView(b []byte) []float32 {
	if !littleEndian || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%unsafe.Alignof(float32(0)) != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
