package cl

import (
	"bytes"
	"errors"
	"testing"
)

// TestHostBufferRoundTrip: bytes written into a pinned host buffer reach the device
// through a non-blocking WriteFrom (checked through a blocking Read), come back through
// ReadInto at an offset, and out-of-range regions are refused with CL_INVALID_VALUE.
func TestHostBufferRoundTrip(t *testing.T) {
	ctx := newTestContext(t)
	for _, ooo := range []bool{false, true} {
		q, err := ctx.NewQueue(QueueOptions{OutOfOrder: ooo})
		if err != nil {
			t.Fatal(err)
		}
		base := LiveObjects()
		const size = 3 << 20
		h, err := q.NewHostBuffer(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Bytes) != size {
			t.Fatalf("mapped %d bytes, want %d", len(h.Bytes), size)
		}
		for i := range h.Bytes {
			h.Bytes[i] = byte(i*7 + i>>11)
		}
		want := append([]byte(nil), h.Bytes...)
		dev, err := ctx.NewBuffer(MemReadWrite, size)
		if err != nil {
			t.Fatal(err)
		}
		// Two pieces, as the network's pipelined writes enqueue them.
		if err := q.WriteFrom(dev, 0, h, 0, size/2, nil); err != nil {
			t.Fatal(err)
		}
		if err := q.WriteFrom(dev, size/2, h, size/2, size-size/2, nil); err != nil {
			t.Fatal(err)
		}
		if err := q.Barrier(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if err := q.Read(dev, 0, got, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("out-of-order %v: the device holds other bytes than were written", ooo)
		}
		clear(h.Bytes)
		if err := q.ReadInto(h, 100, dev, 1000, 5000, nil); err != nil {
			t.Fatal(err)
		}
		if err := q.Finish(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(h.Bytes[100:5100], want[1000:6000]) || h.Bytes[99] != 0 || h.Bytes[5100] != 0 {
			t.Errorf("out-of-order %v: ReadInto copied the wrong region", ooo)
		}
		for _, err := range []error{
			q.WriteFrom(dev, 0, h, size-10, 20, nil),
			q.WriteFrom(dev, size-10, h, 0, 20, nil),
			q.ReadInto(h, -1, dev, 0, 4, nil),
			q.ReadInto(h, 0, dev, size, 4, nil),
		} {
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != CodeInvalidValue {
				t.Errorf("out-of-range region: got %v, want CL_INVALID_VALUE", err)
			}
		}
		dev.Release()
		h.Release()
		h.Release()
		if got := LiveObjects(); got != base {
			t.Errorf("after release: %d live objects, want %d", got, base)
		}
		q.Release()
	}
}
