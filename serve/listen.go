package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
)

// Serve answers REST on httpLn and gRPC on grpcLn (either may be nil) until ctx ends
// or a listener fails. Then it drains: new requests get 503 (Unavailable) while those
// already accepted complete, within drainTimeout; then the listeners close. It returns
// nil after a clean drain.
func (s *Server) Serve(ctx context.Context, httpLn, grpcLn net.Listener, drainTimeout time.Duration) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	gs := grpc.NewServer(s.GRPCServerOptions()...)
	s.RegisterGRPC(gs)
	errc := make(chan error, 2)
	if httpLn != nil {
		go func() {
			if err := hs.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if grpcLn != nil {
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
	drained := s.Drain(dctx)
	// Connections still open are answering their last requests; closing the
	// listeners ends the rest.
	shut := hs.Shutdown(dctx)
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-dctx.Done():
		gs.Stop()
		<-stopped
	}
	return errors.Join(failed, drained, shut)
}
