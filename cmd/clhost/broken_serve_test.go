package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
)

// TestServeSurvivesCrashingKernel: a model whose custom kernel crashes a process on the
// CPU device (a write near address 0, past every guard) is not served, with the crash as
// the reason, while the server stays up and serves the model beside it. The server runs
// in a process of its own, as a user starts it, so that a crash fails the test rather
// than ending it.
func TestServeSurvivesCrashingKernel(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for name, typ := range map[string]string{"wild": "WildWrite", "good": "Twice"} {
		dir := filepath.Join(repo, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"broken.xml", "broken.cl", "syntax.cl"} {
			data, err := os.ReadFile(filepath.Join("testdata/broken", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := model.Save(brokenChain(t, typ), filepath.Join(dir, name+".clm")); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(self, "serve", "--models", repo, "-d", "cpu", "--http", "127.0.0.1:0", "--grpc", "off", "--max-batch", "1", "--cache-dir", "")
	cmd.Env = append(os.Environ(), "CLHOST_AS_MAIN=1", "POCL_CACHE_DIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening http "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	var base string
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("clhost serve ended before listening (%v):\n%s", cmd.Wait(), stderr.String())
		}
		base = "http://" + a
	case <-time.After(3 * time.Minute):
		t.Fatalf("clhost serve did not start:\n%s", stderr.String())
	}

	resp, err := http.Get(base + "/v2/models/wild/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "SIGSEGV") || !strings.Contains(string(body), "wild_write") {
		t.Errorf("ready of the crashing model: %d %s, want 503 naming the SIGSEGV and kernel wild_write", resp.StatusCode, body)
	}
	in := make([]float32, 4*32*32)
	for i := range in {
		in[i] = float32(i%7) - 3
	}
	req, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{"name": "x", "datatype": "FP32", "shape": []int{1, 4, 32, 32}, "data": in}}})
	for i := 0; i < 2; i++ {
		resp, err := http.Post(base+"/v2/models/good/infer", "application/json", bytes.NewReader(req))
		if err != nil {
			t.Fatalf("the server died: %v\n%s", err, stderr.String())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res struct{ Outputs []struct{ Data []float32 } }
		if err := json.Unmarshal(got, &res); resp.StatusCode != 200 || err != nil || len(res.Outputs) != 1 || len(res.Outputs[0].Data) != len(in) {
			t.Fatalf("inference of the good model: %d %s", resp.StatusCode, got)
		}
		if v, want := res.Outputs[0].Data[5], 2*max(in[5], 0); v != want {
			t.Errorf("good model: y[5] = %g, want %g", v, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("clhost serve: %v\n%s", err, stderr.String())
	}
}
