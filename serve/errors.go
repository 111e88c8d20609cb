package serve

import (
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
)

// Kind classifies a failed request the way both protocols report it: an HTTP status and
// a gRPC code.
type Kind int

// Kinds of failure.
const (
	// KindInvalid is a request the model cannot take: a wrong tensor name, shape,
	// datatype, byte count, or malformed JSON.
	KindInvalid Kind = iota
	// KindNotFound names a model (or version) the server does not have.
	KindNotFound
	// KindUnavailable is a request refused while the server drains.
	KindUnavailable
	// KindTooLarge is a request body over the size limit.
	KindTooLarge
	// KindInternal is a failure on the device or in the server.
	KindInternal
	// KindCanceled is a request its client gave up on before it ran.
	KindCanceled
	// KindOverloaded is a request refused because the requests in flight already hold
	// the server's budget of bytes (Options.MaxInflightBytes): a retry may succeed.
	KindOverloaded
	// KindTimeout is a request whose body did not arrive within the read timeout.
	KindTimeout
)

// Error is a failed request: its kind and a message that names the problem.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// kindOf is the kind of any error: an *Error's own, KindInternal otherwise.
func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// HTTPStatus is the status a REST response of this kind carries.
func (k Kind) HTTPStatus() int {
	switch k {
	case KindInvalid:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	case KindUnavailable:
		return http.StatusServiceUnavailable
	case KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case KindCanceled:
		return 499 // the client closed the request; nobody reads it
	case KindOverloaded:
		return http.StatusTooManyRequests
	case KindTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// GRPCCode is the status code a gRPC response of this kind carries.
func (k Kind) GRPCCode() codes.Code {
	switch k {
	case KindInvalid:
		return codes.InvalidArgument
	case KindNotFound:
		return codes.NotFound
	case KindUnavailable:
		return codes.Unavailable
	case KindTooLarge:
		return codes.ResourceExhausted
	case KindCanceled:
		return codes.Canceled
	case KindOverloaded:
		return codes.ResourceExhausted
	case KindTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// label names the kind in metrics.
func (k Kind) label() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not_found"
	case KindUnavailable:
		return "unavailable"
	case KindTooLarge:
		return "too_large"
	case KindCanceled:
		return "canceled"
	case KindOverloaded:
		return "overloaded"
	case KindTimeout:
		return "timeout"
	}
	return "internal"
}
