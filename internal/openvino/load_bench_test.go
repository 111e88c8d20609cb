package openvino_test

// Loading a ResNet-18-sized IR against loading the same network's ONNX, both through
// host's loader as every command does. testdata/resnet18.py writes the pair (torchvision's
// ResNet-18, random weights) with PyTorch's exporter and the fixtures' IR writer:
//
//	go test -run '^$' -bench LoadResNet18 ./internal/openvino
//
// The "ratio" case loads each form in turn and reports the IR's median load time over
// the ONNX's as ir/onnx.

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clhost/clhost/host"
)

func resnet18Pair(b *testing.B) (ir, onnx string) {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command("/usr/bin/python3", "resnet18.py", dir)
	cmd.Dir = "testdata"
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("writing the ResNet-18 pair needs python3 with torch, torchvision and onnx: %v\n%s", err, out)
	}
	return filepath.Join(dir, "resnet18.xml"), filepath.Join(dir, "resnet18.onnx")
}

func BenchmarkLoadResNet18(b *testing.B) {
	ir, onnx := resnet18Pair(b)
	load := func(b *testing.B, path string) time.Duration {
		t0 := time.Now()
		m, err := host.LoadModel(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Layers) == 0 {
			b.Fatal("no layers")
		}
		return time.Since(t0)
	}
	b.Run("IR", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			load(b, ir)
		}
	})
	b.Run("ONNX", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			load(b, onnx)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var ti, to []time.Duration
		for i := 0; i < max(b.N, 5); i++ {
			ti = append(ti, load(b, ir))
			to = append(to, load(b, onnx))
		}
		slices.Sort(ti)
		slices.Sort(to)
		b.ReportMetric(float64(ti[len(ti)/2])/float64(to[len(to)/2]), "ir/onnx")
		b.ReportMetric(float64(ti[len(ti)/2].Microseconds())/1000, "ir-ms")
		b.ReportMetric(float64(to[len(to)/2].Microseconds())/1000, "onnx-ms")
	})
}
