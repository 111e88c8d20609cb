package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
)

// DrainError is what Serve returns when its drain timeout passed before every request
// it had accepted was answered: those requests were cut.
type DrainError struct {
	// Cut is the number of accepted requests not answered when the time was up.
	Cut     int
	Timeout time.Duration
}

func (e *DrainError) Error() string {
	if e.Cut == 1 {
		return fmt.Sprintf("drain timeout (%v): 1 accepted request was cut before its answer", e.Timeout)
	}
	return fmt.Sprintf("drain timeout (%v): %d accepted requests were cut before their answers", e.Timeout, e.Cut)
}

// Serve answers REST on httpLn and gRPC on grpcLn (either may be nil) until ctx ends
// or a listener fails. Then it drains: new requests get 503 (Unavailable) while those
// already accepted complete. drainTimeout bounds the whole shutdown: when it passes,
// every connection is closed, whatever its client is doing (a client stalled in the
// middle of its body included), and Serve returns a *DrainError counting the accepted
// requests that were cut; those still on a device finish there unanswered. Serve
// returns nil after a clean drain.
func (s *Server) Serve(ctx context.Context, httpLn, grpcLn net.Listener, drainTimeout time.Duration) error {
	hs := &http.Server{
		Handler: s.Handler(),
		// The body's deadline is the handler's (jsonRouter): http.Server's ReadTimeout
		// would also end the request's context while it waits for a device.
		ReadHeaderTimeout: min(10*time.Second, s.opts.ReadTimeout),
		IdleTimeout:       s.opts.IdleTimeout,
	}
	gs := grpc.NewServer(s.GRPCServerOptions()...)
	s.RegisterGRPC(gs)
	errc := make(chan error, 2)
	if httpLn != nil {
		httpLn = netutil.LimitListener(httpLn, s.opts.MaxConnections)
		go func() {
			if err := hs.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if grpcLn != nil {
		grpcLn = netutil.LimitListener(grpcLn, s.opts.MaxConnections)
		go func() {
			if err := gs.Serve(grpcLn); err != nil {
				errc <- err
			}
		}()
	}
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errc:
	}
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	// Connections close after the answer they are writing, so that load balancers
	// move to other replicas.
	hs.SetKeepAlivesEnabled(false)
	var cut error
	if s.Drain(dctx) != nil {
		if n := s.inflightNow(); n > 0 {
			cut = &DrainError{Cut: n, Timeout: drainTimeout}
		}
	}
	// The listeners close; idle connections close at once, the others after their
	// answer or at the deadline.
	if hs.Shutdown(dctx) != nil {
		_ = hs.Close()
	}
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-dctx.Done():
		gs.Stop()
	}
	return errors.Join(failed, cut)
}

// inflightNow is the number of requests accepted and not yet answered.
func (s *Server) inflightNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}
