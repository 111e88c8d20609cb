package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clhost/clhost/model"
)

// TestBenchRemoteSharedMemory: clhost bench --url --shm times clhost serve -allow-shm
// with every client's tensors in shared memory, and leaves no region registered on the
// server nor any object in /dev/shm.
func TestBenchRemoteSharedMemory(t *testing.T) {
	dir := t.TempDir()
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
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	exit := make(chan int, 1)
	go func() {
		exit <- runMain([]string{"serve", "-m", path, "-c", "../../samples/custom_relu/custom_layer_example.xml", "-d", "cpu",
			"--http", "127.0.0.1:0", "--grpc", "off", "--max-batch", "4", "--cache-dir", "", "--allow-shm"})
		w.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	httpAddr := ""
	for httpAddr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("clhost serve ended (exit %d)", <-exit)
			}
			if a, ok := strings.CutPrefix(l, "listening http "); ok {
				httpAddr = a
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("clhost serve printed no listening line")
		}
	}
	if code := runMain([]string{"bench", "--url", "http://" + httpAddr, "-m", "tiny", "--shm", "--concurrency", "3", "-n", "30", "-batch", "2", "-warmup", "2"}); code != 0 {
		t.Errorf("bench --url --shm: exit %d", code)
	}
	report := ""
	for !strings.Contains(report, "latency ms") {
		select {
		case l := <-lines:
			report += l + "\n"
		case <-time.After(time.Minute):
			t.Fatalf("bench --url --shm printed %q", report)
		}
	}
	if !strings.Contains(report, "tensors in shared memory") || !strings.Contains(report, "30 requests in") || !strings.Contains(report, "items/s), 0 errors") {
		t.Errorf("bench --url --shm printed %q", report)
	}
	resp, err := http.Get("http://" + httpAddr + "/v2/systemsharedmemory/status")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(st)) != "[]" {
		t.Errorf("regions left registered after bench: %s", st)
	}
	left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/clhost-loadgen-%d-*", os.Getpid()))
	if len(left) > 0 {
		t.Errorf("bench left shared-memory objects %v", left)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exit:
	case <-time.After(time.Minute):
		t.Fatal("clhost serve did not exit after SIGTERM")
	}
	for range lines {
	}
}
