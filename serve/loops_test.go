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

// TestHoldForAnswered: after a batch is answered, a batch that is not full waits, within
// the maximum delay after the answer, until as many requests have begun arriving as the
// batch answered; one client's next request is not held; a full batch is not held.
func TestHoldForAnswered(t *testing.T) {
	m := &servedModel{batched: true}
	q := &m.q
	// arrive counts n requests in, queues them and counts them as ended, as a handler does.
	arrive := func(n int) {
		for range n {
			m.begun.Add(1)
			q.push(&request{model: m, items: 1, arrived: time.Now()})
			m.ended.Add(1)
		}
	}
	const delay = time.Hour

	// A batch of 4 answered; one request came back so far.
	q.answering(4, m.begun.Load())
	arrive(1)
	items, hold, _ := q.due(8, m, delay)
	if items != 1 || hold.IsZero() {
		t.Fatalf("1 of the 4 answered clients back: %d items, hold %v; want 1 item held", items, hold)
	}
	if hold.After(time.Now().Add(delay)) {
		t.Errorf("held until %v, past the delay after the answer", hold)
	}
	// All four are back: due at once, without waiting for more.
	arrive(3)
	if items, hold, _ := q.due(8, m, delay); items != 4 || !hold.IsZero() {
		t.Errorf("the 4 answered clients back: %d items, hold %v; want 4 items due", items, hold)
	}
	q.take(8)

	// A full batch does not wait for the rest.
	q.answering(8, m.begun.Load())
	arrive(2)
	if items, hold, _ := q.due(2, m, delay); items != 2 || !hold.IsZero() {
		t.Errorf("a full batch of 2, 6 clients still away: %d items, hold %v; want 2 items due", items, hold)
	}
	q.take(2)

	// Past the delay after the answer: due at once.
	q.answering(8, m.begun.Load())
	q.answeredAt = time.Now().Add(-2 * time.Millisecond)
	arrive(1)
	if _, hold, _ := q.due(8, m, time.Millisecond); !hold.IsZero() {
		t.Errorf("the answer older than the delay: held until %v", hold)
	}
	q.take(8)

	// One client: its next request is the one queued, and runs at once.
	q.answering(1, m.begun.Load())
	arrive(1)
	if items, hold, _ := q.due(8, m, delay); items != 1 || !hold.IsZero() {
		t.Errorf("one client: %d items, hold %v; want 1 item due", items, hold)
	}
}
