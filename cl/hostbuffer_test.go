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

// TestMapWrite: bytes written through a write map at an offset reach the buffer (read
// back after the unmap), the bytes around the region keep their values, and a region
// outside the buffer is refused with CL_INVALID_VALUE.
func TestMapWrite(t *testing.T) {
	ctx := newTestContext(t)
	q, err := ctx.NewQueue(QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	const size, at, n = 1 << 16, 4096, 5000
	dev, err := ctx.NewBuffer(MemReadWrite, size)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Release()
	want := bytes.Repeat([]byte{0xa5}, size)
	if err := q.Write(dev, 0, want, nil); err != nil {
		t.Fatal(err)
	}
	m, err := q.MapWrite(dev, at, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Bytes) != n {
		t.Fatalf("mapped %d bytes, want %d", len(m.Bytes), n)
	}
	for i := range m.Bytes {
		m.Bytes[i] = byte(i * 13)
		want[at+i] = byte(i * 13)
	}
	if err := m.Unmap(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := q.Read(dev, 0, got, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the buffer does not hold what was written through the map, or lost its bytes around it")
	}
	for _, r := range [][2]int{{size - 10, 11}, {-1, 4}, {0, 0}} {
		var e *Error
		if _, err := q.MapWrite(dev, r[0], r[1]); !errors.As(err, &e) || e.Code != CodeInvalidValue {
			t.Errorf("MapWrite(%d, %d) = %v, want CL_INVALID_VALUE", r[0], r[1], err)
		}
	}
}
