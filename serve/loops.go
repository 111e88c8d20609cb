package serve

import (
	"context"
	"errors"
	"github.com/clhost/clhost/host"
	"time"
)

// batch is a model's batcher: it hands the model's batches to the devices' workers
// whenever no other goroutine (a request's handler, or a worker that just finished
// one) has, and times the wait for requests still arriving. It returns once the queue
// is closed and empty.
func (s *Server) batch(m *servedModel) {
	defer s.batchers.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(until time.Time, extra <-chan struct{}) {
		var tc <-chan time.Time
		if !until.IsZero() {
			timer.Reset(time.Until(until))
			defer func() {
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
			}()
			tc = timer.C
		}
		select {
		case <-m.q.wake:
		case <-extra:
		case <-tc:
		}
	}
	for {
		nb := s.next(m, nil)
		switch {
		case nb.dev != nil:
			nb.dev.jobs <- nb.job
		case nb.closed:
			return
		default:
			wait(nb.hold, nb.changed)
		}
	}
}

// nextBatch is what next decided: a batch to run on a device claimed for it, or why
// none runs now.
type nextBatch struct {
	job job
	dev *device
	// hold: a batch waits until then for requests still arriving; changed: for a
	// device to become free. Neither: the queue is empty (closed: for good).
	hold    time.Time
	changed <-chan struct{}
	closed  bool
}

// next takes the model's next batch from its queue when one is due and the device
// expected to finish it first is free, and claims that device; with only, the batch is
// taken only when that device is the one. Any goroutine may run the batch it returns.
func (s *Server) next(m *servedModel, only *device) nextBatch {
	limit := s.opts.MaxBatch
	if !m.batched {
		limit = 0 // one request per inference
	}
	items, hold, closed := m.q.due(limit, m, s.opts.MaxDelay)
	if items == 0 || !hold.IsZero() {
		return nextBatch{hold: hold, closed: closed && items == 0}
	}
	d, ok, changed := s.sched.claimOn(m, items, only)
	if !ok {
		// The device that would finish first is busy (or not the one asked for):
		// wait for a device to become free, or for more requests, which make the
		// batch larger.
		return nextBatch{changed: changed}
	}
	reqs, n := m.q.take(limit)
	reqs, n = s.dropCanceled(reqs, n)
	if len(reqs) == 0 {
		s.sched.release(d, false)
		return nextBatch{}
	}
	return nextBatch{job: job{inst: m.instances[d.index], reqs: reqs, items: n}, dev: d}
}

// dropCanceled answers the requests whose clients have gone and returns the others.
func (s *Server) dropCanceled(reqs []*request, items int) ([]*request, int) {
	kept := reqs[:0]
	for _, r := range reqs {
		if r.ctx != nil && r.ctx.Err() != nil {
			items -= r.items
			r.answer(&reply{err: errorf(KindCanceled, "the client canceled the request before it ran")})
			continue
		}
		kept = append(kept, r)
	}
	return kept, items
}

// work is a device's worker: it runs the batches sent to it, one at a time. After each
// it takes the model's next batch itself when this device is the one for it, so that a
// busy device goes from batch to batch without waiting on the batcher.
func (s *Server) work(d *device) {
	defer s.workers.Done()
	for j := range d.jobs {
		for {
			m := j.inst.model
			s.execute(d, j)
			nb := s.next(m, d)
			if nb.dev == nil {
				break
			}
			j = nb.job
		}
	}
}

// execute runs a batch on a device the caller holds (claimed from the scheduler),
// answers its requests and frees the device.
func (s *Server) execute(d *device, j job) {
	start := time.Now()
	for _, r := range j.reqs {
		r.started = start
	}
	compute, err := j.inst.run(j.reqs, j.items)
	j.inst.series.batch(j.items, compute)
	if err != nil {
		var te *host.TimeoutError
		if errors.As(err, &te) {
			s.sched.markStuck(d)
			s.logf("device %s is unhealthy from now on, its requests go to the other devices: %v", d.name, err)
		}
		var e *Error
		var se *host.StuckError
		switch {
		case errors.As(err, &e):
		case errors.As(err, &te), errors.As(err, &se):
			// The device, not the request, failed: a client may retry elsewhere.
			err = errorf(KindUnavailable, "%v", err)
		default:
			err = errorf(KindInternal, "%v", err)
		}
		for _, r := range j.reqs {
			r.answer(&reply{err: err, device: d.name, series: j.inst.series})
		}
	}
	s.sched.release(d, err != nil)
}

// Drain stops taking requests and waits until every accepted one is answered, or ctx
// ends. Health checks report not ready from then on.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	var idle chan struct{}
	if s.inflight > 0 {
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle = s.idle
	}
	s.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close waits for the requests already accepted (refusing new ones), stops the
// batchers and device workers, and releases every engine.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.Drain(context.Background())
	for _, m := range s.order {
		m.q.close()
	}
	s.batchers.Wait()
	for _, d := range s.devices {
		close(d.jobs)
	}
	s.workers.Wait()
	s.closeEngines()
	s.shmCloseAll()
}

func (s *Server) closeEngines() {
	for _, m := range s.order {
		m.closeEngines()
	}
}

func (m *servedModel) closeEngines() {
	for _, in := range m.instances {
		if in != nil {
			in.engine.Close()
		}
	}
}
