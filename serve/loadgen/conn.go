package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
)

// conn is one client's keep-alive connection to the server. Requests are written
// and responses read on the client's own goroutine: net/http's Transport hands each
// request to a writing and a reading goroutine of the connection's own, whose wake-ups
// cost a loaded machine more time per request than a small model's whole inference,
// and the client would time them as the server's.
type conn struct {
	addr string
	head []byte // the request line and headers
	body []byte
	c    net.Conn
	br   *bufio.Reader
}

func newConn(u *neturl.URL, jsonLength string, body []byte) *conn {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\n"+
		"Inference-Header-Content-Length: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, jsonLength, len(body))
	return &conn{addr: addr, head: []byte(head), body: body}
}

// send sends one request and reads its whole response, connecting first if need be.
func (b *conn) send() error {
	if b.c == nil {
		c, err := net.Dial("tcp", b.addr)
		if err != nil {
			return err
		}
		b.c, b.br = c, bufio.NewReaderSize(c, 64<<10)
	}
	bufs := net.Buffers{b.head, b.body}
	_, err := bufs.WriteTo(b.c)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(b.br, nil)
	}
	if err != nil {
		b.close()
		return err
	}
	var text []byte
	if resp.StatusCode == http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		text, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if err != nil || resp.Close {
		b.close()
	}
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(text))
	}
	return nil
}

func (b *conn) close() {
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}
