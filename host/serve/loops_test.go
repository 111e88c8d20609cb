package serve

import (
	"testing"
	"time"
)

// TestHold: a batch that is not full waits for the requests that were arriving when it
// began to wait, within the maximum delay, and not for requests that began arriving
// later; a full batch, or one whose oldest request is older than the delay, waits for
// none.
func TestHold(t *testing.T) {
	m := &servedModel{batched: true}
	q := &m.q
	arrive := func(n int) { m.begun.Add(int64(n)) }
	end := func(n int) { m.ended.Add(int64(n)) }
	push := func(age time.Duration, items int) {
		q.push(&request{model: m, items: items, arrived: time.Now().Add(-age)})
	}
	const delay = time.Hour

	arrive(3)
	push(0, 1)
	end(1)
	if items, hold, _ := q.due(4, m, delay); items != 1 || hold.IsZero() {
		t.Fatalf("one item queued, two arriving: %d items, hold %v; want 1 item held", items, hold)
	}
	// Two more begin arriving; the first two end (one of them queued): the batch no
	// longer waits, though two requests are still arriving.
	arrive(2)
	push(0, 1)
	end(2)
	if items, hold, _ := q.due(4, m, delay); items != 2 || !hold.IsZero() {
		t.Errorf("the requests waited for have arrived: %d items, hold %v; want 2 items due", items, hold)
	}
	if _, n := q.take(4); n != 2 {
		t.Fatalf("took %d items, want 2", n)
	}
	// The next batch begins its own wait, for the two still arriving.
	push(0, 1)
	if _, hold, _ := q.due(4, m, delay); hold.IsZero() {
		t.Errorf("a new batch with two requests arriving: not held")
	}
	// Full: due at once.
	push(0, 3)
	if items, hold, _ := q.due(4, m, delay); items != 4 || !hold.IsZero() {
		t.Errorf("a full batch: %d items, hold %v; want 4 items due", items, hold)
	}
	q.take(4)
	// Its oldest request arrived longer ago than the delay: due at once.
	push(2*time.Millisecond, 1)
	if _, hold, _ := q.due(4, m, time.Millisecond); !hold.IsZero() {
		t.Errorf("the oldest request past the delay: held until %v", hold)
	}
	// A model that does not batch never waits (limit 0: one request per batch).
	if _, hold, _ := q.due(0, m, delay); !hold.IsZero() {
		t.Errorf("one request per inference: held until %v", hold)
	}
}
