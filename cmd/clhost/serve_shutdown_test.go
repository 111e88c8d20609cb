package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
)

// tinyServeModel writes a model of one custom ReLU layer (the sample's kernel) to dir.
func tinyServeModel(t *testing.T, dir string) string {
	t.Helper()
	b := model.NewBuilder("tiny")
	x := b.Input("x", model.Float32, 1, 2, 4, 4)
	y := b.Tensor("y", model.Float32, 1, 2, 4, 4)
	b.LayerOutputs("ReLU", "relu", []string{x}, []string{y}, model.FloatAttr("negative_slope", 0.5))
	b.Output(y)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tiny.clm")
	if err := model.Save(m, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveProcess is `clhost serve` running as a process of its own (this test binary as
// the command), so that it gets a real SIGTERM and its exit is what a user sees.
type serveProcess struct {
	cmd      *exec.Cmd
	stdout   chan string
	mu       sync.Mutex
	stderr   bytes.Buffer
	exited   chan error
	httpAddr string
}

func (p *serveProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

func (p *serveProcess) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startServeProcess starts clhost serve with args and waits for its listening line.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: exec.Command(self, append([]string{"serve"}, args...)...), stdout: make(chan string, 64), exited: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
	p.cmd.Stderr = p
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout <- sc.Text()
		}
		close(p.stdout)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
	})
	deadline := time.After(3 * time.Minute)
	for p.httpAddr == "" {
		select {
		case l, ok := <-p.stdout:
			if !ok {
				t.Fatalf("clhost serve ended before listening: %s", p.errText())
			}
			if a, ok := strings.CutPrefix(l, "listening http "); ok {
				p.httpAddr = a
			}
		case <-deadline:
			t.Fatalf("clhost serve did not listen: %s", p.errText())
		}
	}
	go func() {
		for range p.stdout {
		}
	}()
	return p
}

// terminate sends SIGTERM and returns the exit code and how long the process took.
func (p *serveProcess) terminate(t *testing.T) (int, time.Duration) {
	t.Helper()
	t0 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		took := time.Since(t0)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), took
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, took
	case <-time.After(time.Minute):
		t.Fatalf("clhost serve did not exit a minute after SIGTERM; stderr:\n%s", p.errText())
		return 0, 0
	}
}

// metricLine reads one series of the server's /metrics.
func metricLine(t *testing.T, addr, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(l, series+" ") {
			return l
		}
	}
	return ""
}

// TestServeDrainTimeoutBoundsExit: SIGTERM makes clhost serve exit within
// --drain-timeout + 1 s whatever its clients do. A client stalled in the middle of its
// body is cut at the drain timeout: exit 1, with a line saying how many requests were
// cut. With every accepted request answered — an idle keep-alive connection and a
// client that never finished its headers left open — it exits 0.
func TestServeDrainTimeoutBoundsExit(t *testing.T) {
	dir := t.TempDir()
	path := tinyServeModel(t, dir)
	cache := filepath.Join(dir, "cache")
	const drain = 2 * time.Second
	args := []string{"-m", path, "-c", "../../samples/custom_relu/custom_layer_example.xml", "-d", "cpu",
		"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--cache-dir", cache, "--drain-timeout", drain.String()}

	p := startServeProcess(t, args...)
	stalled, err := net.Dial("tcp", p.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	fmt.Fprintf(stalled, "POST /v2/models/tiny/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"inputs\":[")
	for metricLine(t, p.httpAddr, "clhost_inflight_requests") != "clhost_inflight_requests 1" {
		time.Sleep(20 * time.Millisecond)
	}
	code, took := p.terminate(t)
	t.Logf("a client stalled mid-body, --drain-timeout %v: exit %d %v after SIGTERM", drain, code, took.Round(time.Millisecond))
	if code == 0 || !strings.Contains(p.errText(), "drain timeout (2s): 1 accepted request was cut before its answer") {
		t.Errorf("with a client stalled mid-body: exit %d, stderr:\n%s\nwant a non-zero exit saying 1 request was cut", code, p.errText())
	}
	if took < drain-100*time.Millisecond || took > drain+time.Second {
		t.Errorf("with a client stalled mid-body the process exited %v after SIGTERM, want within %v + 1s", took, drain)
	}

	p = startServeProcess(t, args...)
	idle, err := net.Dial("tcp", p.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	body := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2,4,4],"data":[` + strings.Repeat("-1,", 31) + `1]}]}`
	fmt.Fprintf(idle, "POST /v2/models/tiny/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(answer), `"data":[-0.5,`) {
		t.Fatalf("inference: %d %s", resp.StatusCode, answer)
	}
	headers, err := net.Dial("tcp", p.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer headers.Close()
	fmt.Fprintf(headers, "POST /v2/models/tiny/infer HTTP/1.1\r\nHost: x\r\n")
	code, took = p.terminate(t)
	t.Logf("every accepted request answered, an idle connection and unfinished headers open: exit %d %v after SIGTERM", code, took.Round(time.Millisecond))
	if code != 0 || !strings.Contains(p.errText(), "drained, every accepted request answered") {
		t.Errorf("with every accepted request answered: exit %d, stderr:\n%s\nwant 0", code, p.errText())
	}
	if took > drain+time.Second {
		t.Errorf("with every accepted request answered the process exited %v after SIGTERM, want within %v + 1s", took, drain)
	}
}

// TestServeListenErrorFirst: an address in use is reported before any model is
// compiled; --strict refuses to start with a broken model, naming it.
func TestServeListenErrorFirst(t *testing.T) {
	dir := t.TempDir()
	path := tinyServeModel(t, dir)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(self, append([]string{"serve"}, args...)...)
		cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run("-m", path, "-c", "../../samples/custom_relu/custom_layer_example.xml", "-d", "cpu",
		"--http", busy.Addr().String(), "--grpc", "off", "--cache-dir", "")
	if code != 1 || !strings.Contains(stderr, "-http "+busy.Addr().String()) || !strings.Contains(stderr, "address already in use") {
		t.Errorf("a port in use: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout, "model ") || strings.Contains(stdout, "device ") {
		t.Errorf("a port in use was reported after the models were compiled: %q", stdout)
	}

	broken := filepath.Join(dir, "broken.clm")
	if err := os.WriteFile(broken, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run("-m", path, "-m", broken, "-c", "../../samples/custom_relu/custom_layer_example.xml", "-d", "cpu",
		"--http", "127.0.0.1:0", "--grpc", "off", "--cache-dir", "", "--strict")
	if code != 1 || !strings.Contains(stderr, "1 of 2 models are broken") || !strings.Contains(stderr, `model "broken": `) {
		t.Errorf("--strict with a broken model: exit %d, stderr %q", code, stderr)
	}
}
