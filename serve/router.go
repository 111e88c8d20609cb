package serve

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"
)

// jsonRouter is the REST mux with the answers the mux gives itself — 404 for an
// unknown path, 405 for a method a path does not take, the redirect of a path that is
// not canonical ("..", "//") — carried as the protocol's JSON error, as every other
// answer is, so that clients parse one kind of error body.
//
// It also bounds the time a request's body may take to arrive (readTimeout): past it a
// read of the body fails with a timeout.
type jsonRouter struct {
	mux         *http.ServeMux
	readTimeout time.Duration
}

func (j jsonRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 && j.readTimeout > 0 {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(j.readTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	if _, pattern := j.mux.Handler(r); pattern != "" && canonicalPath(r) {
		j.mux.ServeHTTP(w, r)
		return
	}
	// The mux's own answer, for its status and headers (Allow, Location); its plain
	// text body is replaced.
	rec := &routeRecorder{header: http.Header{}, status: http.StatusOK}
	j.mux.ServeHTTP(rec, r)
	for _, k := range []string{"Allow", "Location"} {
		if v := rec.header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	var msg string
	switch rec.status {
	case http.StatusNotFound:
		msg = fmt.Sprintf("no endpoint %s %s: the protocol's endpoints are under /v2/", r.Method, r.URL.Path)
	case http.StatusMethodNotAllowed:
		msg = fmt.Sprintf("%s does not take %s (it takes %s)", r.URL.Path, r.Method, rec.header.Get("Allow"))
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		msg = fmt.Sprintf("%s is not a canonical path: see %s", r.URL.EscapedPath(), rec.header.Get("Location"))
	default:
		msg = http.StatusText(rec.status)
	}
	writeJSON(w, rec.status, map[string]string{"error": msg})
}

// canonicalPath reports whether the mux takes r's path as it is, rather than
// redirecting to its cleaned form (net/http's cleanPath; CONNECT paths are left alone).
func canonicalPath(r *http.Request) bool {
	if r.Method == http.MethodConnect {
		return true
	}
	p := r.URL.EscapedPath()
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// routeRecorder keeps the status and headers of the mux's own answer.
type routeRecorder struct {
	header http.Header
	status int
	wrote  bool
}

func (rr *routeRecorder) Header() http.Header { return rr.header }

func (rr *routeRecorder) WriteHeader(code int) {
	if !rr.wrote {
		rr.status, rr.wrote = code, true
	}
}

func (rr *routeRecorder) Write(b []byte) (int, error) {
	rr.WriteHeader(http.StatusOK)
	return len(b), nil
}

// deadlineBody is a request body read under a deadline, which it lifts once the whole
// body is in: the connection's later reads (net/http watches for the client going
// away while the request runs) must not time out.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
