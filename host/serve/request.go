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
	err     error
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
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) push(r *request) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	q.items += r.items
	q.mu.Unlock()
	q.signal()
}

// state returns the number of waiting items and the arrival of the oldest request.
func (q *queue) state() (items int, oldest time.Time, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.reqs) > 0 {
		oldest = q.reqs[0].arrived
	}
	return q.items, oldest, q.closed
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
	return reqs, items
}

// batchItems is the number of items take(limit) would return.
func (q *queue) batchItems(limit int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := 0
	for n := 0; n < len(q.reqs) && (n == 0 || (limit > 0 && items+q.reqs[n].items <= limit)); n++ {
		items += q.reqs[n].items
	}
	return items
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
