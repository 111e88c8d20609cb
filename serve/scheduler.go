package serve

import (
	"sync"
	"time"

	"github.com/clhost/clhost/cl"
)

// device is one device the server runs batches on, one at a time, in its worker.
type device struct {
	index int
	// name labels the device in logs and metrics: its position in the -d list and
	// its OpenCL name.
	name string
	cl   *cl.Device
	jobs chan job

	// Guarded by the scheduler's mutex.
	busy      bool
	busyUntil time.Time
	// failures counts consecutive failed batches; until failedUntil the device takes
	// batches only when every device has failed.
	failures    int
	failedUntil time.Time
	// stuck says a kernel never finished there (host.TimeoutError): the device takes
	// batches only when no other can, and those fail at once.
	stuck bool
}

// job is a batch of one model's requests, sent to a device's worker.
type job struct {
	inst  *instance
	reqs  []*request
	items int
}

// scheduler sends each batch to the device expected to finish it first: the one whose
// current batch ends soonest plus the batch's estimated time there.
type scheduler struct {
	mu      sync.Mutex
	devices []*device
	// changed is closed (and replaced) whenever a device becomes free.
	changed chan struct{}
}

// failBackoff is how long a device that failed a batch is passed over, doubling with
// each further failure up to maxFailBackoff.
const (
	failBackoff    = 2 * time.Second
	maxFailBackoff = time.Minute
)

// claim picks the device for a batch of items of model m. When that device is free it
// is marked busy and returned with ok; otherwise the caller waits on changed.
func (s *scheduler) claim(m *servedModel, items int) (d *device, ok bool, changed <-chan struct{}) {
	return s.claimOn(m, items, nil)
}

// claimOn is claim, except that with only the device is claimed only when it is the
// one picked.
func (s *scheduler) claimOn(m *servedModel, items int, only *device) (d *device, ok bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	healthy := false
	for _, d := range s.devices {
		if !now.Before(d.failedUntil) {
			healthy = true
		}
	}
	var best *device
	var bestFinish time.Time
	var bestCost float64
	for _, d := range s.devices {
		if healthy && now.Before(d.failedUntil) {
			continue
		}
		_, cost := m.instances[d.index].plan(items)
		start := now
		if d.busy && d.busyUntil.After(now) {
			start = d.busyUntil
		}
		finish := start.Add(time.Duration(cost * float64(time.Second)))
		// Between devices expected to finish together, the one free the longest
		// goes first, so equal devices take turns.
		better := best == nil || finish.Before(bestFinish) ||
			(finish.Equal(bestFinish) && d.busyUntil.Before(best.busyUntil))
		if better {
			best, bestFinish, bestCost = d, finish, cost
		}
	}
	if !best.busy && (only == nil || best == only) {
		best.busy = true
		best.busyUntil = now.Add(time.Duration(bestCost * float64(time.Second)))
		return best, true, nil
	}
	return nil, false, s.changed
}

// markStuck takes a device whose kernel never finished out of service for good.
func (s *scheduler) markStuck(d *device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.stuck = true
}

// release marks a device free after a batch; failed says the batch failed there.
func (s *scheduler) release(d *device, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	d.busy = false
	d.busyUntil = now
	if d.stuck {
		d.failedUntil = now.Add(100 * 365 * 24 * time.Hour)
	} else if failed {
		d.failures++
		backoff := failBackoff << min(d.failures-1, 10)
		d.failedUntil = now.Add(min(backoff, maxFailBackoff))
	} else {
		d.failures = 0
	}
	close(s.changed)
	s.changed = make(chan struct{})
}
