package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends a request line as written (no client cleans its path) and returns
// the response.
func rawRequest(t *testing.T, addr, method, target string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, target); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestRouterErrorsAreJSON: the router's own answers — an unknown path (404), a method
// a path does not take (405, with Allow), a path that is not canonical (its redirect,
// with Location) — carry the protocol's JSON error, like every other error.
func TestRouterErrorsAreJSON(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4})
	addr := strings.TrimPrefix(ts.httpURL, "http://")
	for _, c := range []struct {
		method, target string
		status         int
		header, want   string
	}{
		{"GET", "/nope", 404, "", "no endpoint GET /nope"},
		{"GET", "/v2/models/relu/nothing", 404, "", "no endpoint"},
		{"GET", "/v2/models/relu/infer", 405, "Allow", "does not take GET"},
		{"POST", "/v2/health/live", 405, "Allow", "does not take POST"},
		{"DELETE", "/v2/models/relu", 405, "Allow", "does not take DELETE"},
		{"GET", "/v2/models/../../metrics", 307, "Location", "is not a canonical path"},
		{"POST", "/v2/models/relu/../relu/infer", 307, "Location", "is not a canonical path"},
		{"GET", "//v2/health/ready", 307, "Location", "is not a canonical path"},
	} {
		resp, body := rawRequest(t, addr, c.method, c.target)
		var e struct {
			Error string `json:"error"`
		}
		err := json.Unmarshal(body, &e)
		if resp.StatusCode != c.status || err != nil || !strings.Contains(e.Error, c.want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q %s, want %d with a JSON error holding %q", c.method, c.target, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.want)
		}
		if c.header != "" && resp.Header.Get(c.header) == "" {
			t.Errorf("%s %s: no %s header", c.method, c.target, c.header)
		}
	}
	// Routes still answer as before.
	resp, body := rawRequest(t, addr, "GET", "/v2/health/ready")
	if resp.StatusCode != 200 || string(body) != `{"ready":true}` {
		t.Errorf("ready: %d %s", resp.StatusCode, body)
	}
	if resp, body := rawRequest(t, addr, "GET", "/metrics"); resp.StatusCode != 200 || !strings.Contains(string(body), "clhost_inflight_requests") {
		t.Errorf("metrics: %d", resp.StatusCode)
	}
}
