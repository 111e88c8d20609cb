package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// TestServeCommand: clhost serve prints its device, model and listening lines, answers
// an inference and clhost bench --url, and on SIGTERM drains and exits 0.
func TestServeCommand(t *testing.T) {
	if code := runMain([]string{"serve", "-d", "cpu"}); code != 2 {
		t.Errorf("serve without a model: exit %d, want 2", code)
	}
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
			"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--max-batch", "4", "--cache-dir", "", "--pprof", "127.0.0.1:0"})
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
	var printed []string
	httpAddr, pprofAddr := "", ""
	for httpAddr == "" || pprofAddr == "" || len(printed) < 5 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("clhost serve ended (exit %d) after printing %q", <-exit, printed)
			}
			printed = append(printed, l)
			if a, ok := strings.CutPrefix(l, "listening http "); ok {
				httpAddr = a
			}
			if a, ok := strings.CutPrefix(l, "listening pprof "); ok {
				pprofAddr = a
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("clhost serve printed only %q", printed)
		}
	}
	for _, want := range []string{"device cpu:0: ", "model tiny (clhost_clm; inputs x FP32[-1 2 4 4]", "listening http 127.0.0.1:", "listening grpc 127.0.0.1:"} {
		if !strings.Contains(strings.Join(printed, "\n"), want) {
			t.Errorf("clhost serve printed %q, without %q", printed, want)
		}
	}
	// --pprof: Go's profiler on its own address, not on the inference API's.
	if resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1"); err != nil || resp.StatusCode != 200 {
		t.Errorf("pprof endpoint: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, err := http.Get("http://" + httpAddr + "/debug/pprof/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("the inference API's address serves /debug/pprof/: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	in := make([]float32, 2*2*4*4)
	for i := range in {
		in[i] = float32(i%9) - 4
	}
	body, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{"name": "x", "datatype": "FP32", "shape": []int{2, 2, 4, 4}, "data": in}}})
	resp, err := http.Post("http://"+httpAddr+"/v2/models/tiny/infer", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var res struct {
		Outputs []struct{ Data []float32 }
	}
	if err := json.Unmarshal(got, &res); resp.StatusCode != 200 || err != nil || len(res.Outputs) != 1 {
		t.Fatalf("inference: %d %s", resp.StatusCode, got)
	}
	for i, v := range res.Outputs[0].Data {
		want := in[i]
		if want < 0 {
			want *= 0.5
		}
		if v != want {
			t.Fatalf("y[%d] = %g, want %g", i, v, want)
		}
	}

	// clhost bench --url times the server: 4 clients, 40 requests of 2 items.
	if code := runMain([]string{"bench", "--url", "http://" + httpAddr, "-m", "tiny", "--concurrency", "4", "-n", "40", "-batch", "2", "-warmup", "2"}); code != 0 {
		t.Errorf("bench --url: exit %d", code)
	}
	report := ""
	for !strings.Contains(report, "latency ms") {
		select {
		case l := <-lines:
			report += l + "\n"
		case <-time.After(time.Minute):
			t.Fatalf("bench --url printed %q", report)
		}
	}
	if !strings.Contains(report, "40 requests in") || !strings.Contains(report, "items/s), 0 errors") {
		t.Errorf("bench --url printed %q", report)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("clhost serve did not exit after SIGTERM")
	}
	for range lines {
	}
}
