package serve

import (
	"context"
	"errors"
	"time"
)

// batch is a model's batcher: it forms batches from the model's queue and hands each
// to the device the scheduler picks. It returns once the queue is closed and empty.
func (s *Server) batch(m *servedModel) {
	defer s.batchers.Done()
	limit := s.opts.MaxBatch
	if !m.batched {
		limit = 0 // one request per inference
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(until time.Time, extra <-chan struct{}) {
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
		}
		var tc <-chan time.Time
		if !until.IsZero() {
			tc = timer.C
		}
		select {
		case <-m.q.wake:
		case <-extra:
		case <-tc:
		}
	}
	for {
		items, oldest, closed := m.q.state()
		if items == 0 {
			if closed {
				return
			}
			wait(time.Time{}, nil)
			continue
		}
		// Hold a batch that is not full while requests are still being read, up to
		// the maximum delay after its oldest request arrived.
		if m.batched && items < limit && m.arriving.Load() > 0 {
			if deadline := oldest.Add(s.opts.MaxDelay); time.Now().Before(deadline) {
				wait(deadline, nil)
				continue
			}
		}
		n := m.q.batchItems(limit)
		d, ok, changed := s.sched.claim(m, n)
		if !ok {
			// The device that would finish first is busy: wait for a device to
			// become free, or for more requests, which make the batch larger.
			wait(time.Time{}, changed)
			continue
		}
		reqs, items := m.q.take(limit)
		reqs, items = s.dropCanceled(reqs, items)
		if len(reqs) == 0 {
			s.sched.release(d, false)
			continue
		}
		d.jobs <- job{inst: m.instances[d.index], reqs: reqs, items: items}
	}
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

// work is a device's worker: it runs the batches sent to it, one at a time.
func (s *Server) work(d *device) {
	defer s.workers.Done()
	for j := range d.jobs {
		s.execute(d, j)
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
	s.metrics.batch(j.inst.model.name, d.name, j.items, compute)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = errorf(KindInternal, "%v", err)
		}
		for _, r := range j.reqs {
			r.answer(&reply{err: err, device: d.name})
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
