package serve

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// request is one accepted inference request on its way through a model's queue.
type request struct {
	model *servedModel
	ctx   context.Context
	// items is the number of rows of dim 0 the request carries (1 when the model is
	// not batched).
	items int
	// inputs holds, per model input in the model's order, items × row values.
	inputs  [][]float32
	arrived time.Time
	done    chan *reply // buffered: the answer never blocks
	// answered guards the one answer a request gets.
	answered atomic.Bool
	// started is when the request's batch began on a device.
	started time.Time
}

// reply is the answer to a request.
type reply struct {
	// outputs holds, per model output, the request's items × row values.
	outputs [][]float32
	device  string
	// series are the model's metrics on the device, when one ran the request.
	series *series
	err    error
}

// doubleAnswers counts answers given to requests already answered: a bug the tests
// assert never happens.
var doubleAnswers atomic.Int64

func (r *request) answer(rep *reply) {
	if r.answered.Swap(true) {
		doubleAnswers.Add(1)
		return
	}
	r.done <- rep
}

// queue holds a model's waiting requests in arrival order.
type queue struct {
	mu    sync.Mutex
	reqs  []*request
	items int
	// wake has room for one signal: a request arrived or one stopped arriving.
	wake   chan struct{}
	closed bool
	// holdMark, when not zero, is the model's count of requests begun when the batch
	// at the front began to wait for those arriving: it waits until as many have ended.
	holdMark int64
	// The latest batch answered: how many requests, when, and the model's count of
	// requests begun just before the answers went out (queue.answering).
	answeredN    int64
	answeredAt   time.Time
	answeredMark int64
}

// answering records a batch of n requests about to be answered; begun is the model's
// count of requests begun at that moment.
func (q *queue) answering(n int, begun int64) {
	q.mu.Lock()
	q.answeredN, q.answeredAt, q.answeredMark = int64(n), time.Now(), begun
	q.mu.Unlock()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// push queues a request; the caller signals whoever is to form its batch.
func (q *queue) push(r *request) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	q.items += r.items
	q.mu.Unlock()
}

// signalIfWaiting signals when requests wait.
func (q *queue) signalIfWaiting() {
	q.mu.Lock()
	waiting := len(q.reqs) > 0
	q.mu.Unlock()
	if waiting {
		q.signal()
	}
}

// due returns the items of the batch take(limit) would return and, when that batch
// is to wait for requests of m still arriving, until when. A batch that is not full
// waits, up to maxDelay after its oldest request arrived, for the requests that were
// arriving when it began to wait, not for later ones: under a steady stream of
// requests it would otherwise always wait the whole delay while a device is free.
//
// It also waits, up to maxDelay after the latest batch was answered, until as many
// requests have begun arriving since as that batch answered. Clients that wait for
// each answer send their next request at once: with several devices, a device that
// has just answered its batch would otherwise leave with the few requests queued
// while those clients' next requests were still on their way, and run small batches
// back to back. A lone client never waits for this: its next request is the one
// queued.
func (q *queue) due(limit int, m *servedModel, maxDelay time.Duration) (items int, hold time.Time, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.reqs) == 0 {
		q.holdMark = 0
		return 0, time.Time{}, q.closed
	}
	for n := 0; n < len(q.reqs) && (n == 0 || (limit > 0 && items+q.reqs[n].items <= limit)); n++ {
		items += q.reqs[n].items
	}
	if limit > 0 && q.items < limit && maxDelay > 0 {
		ended := m.ended.Load()
		begun := m.begun.Load()
		if q.answeredN > 0 && begun-q.answeredMark < q.answeredN {
			now := time.Now()
			deadline := q.answeredAt.Add(maxDelay)
			if oldest := q.reqs[0].arrived.Add(maxDelay); oldest.Before(deadline) {
				deadline = oldest
			}
			if now.Before(deadline) {
				return items, deadline, false
			}
		}
		if q.holdMark == 0 && begun > ended {
			q.holdMark = begun
		}
		if q.holdMark != 0 && ended < q.holdMark {
			if deadline := q.reqs[0].arrived.Add(maxDelay); time.Now().Before(deadline) {
				return items, deadline, false
			}
		}
	}
	return items, time.Time{}, q.closed
}

// take removes requests from the front while their items fit in limit, at least one
// (limit 0: exactly one).
func (q *queue) take(limit int) (reqs []*request, items int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(q.reqs) && (n == 0 || (limit > 0 && items+q.reqs[n].items <= limit)) {
		items += q.reqs[n].items
		n++
	}
	reqs = append([]*request(nil), q.reqs[:n]...)
	clear(q.reqs[:n])
	q.reqs = q.reqs[n:]
	q.items -= items
	q.holdMark = 0
	return reqs, items
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
