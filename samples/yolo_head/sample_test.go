package yolohead

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/tensorio"
)

func readNpy(t *testing.T, path string) *host.Tensor {
	t.Helper()
	a, err := tensorio.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &host.Tensor{Shape: a.Shape, Data: a.Data}
}

func device() string {
	if d := os.Getenv("CLHOST_TEST_DEVICE"); d != "" {
		return d
	}
	return "cpu"
}

func TestYoloHead(t *testing.T) {
	m, err := host.LoadModel("model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	// Without the XML nothing implements YoloDecode, and compiling says so.
	bare, err := host.NewEngine(host.Options{Device: device(), NoGlobalConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bare.Compile(m)
	bare.Close()
	if err == nil || !strings.Contains(err.Error(), "YoloDecode") {
		t.Errorf("compiling without yolo_decode.xml: %v, want an error naming YoloDecode", err)
	}

	e, err := host.NewEngine(host.Options{Device: device(), NoGlobalConfig: true, Configs: []string{"yolo_decode.xml"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := n.Infer(context.Background(), map[string]*host.Tensor{"p4": readNpy(t, "p4.npy"), "p5": readNpy(t, "p5.npy")})
	if err != nil {
		t.Fatal(err)
	}
	// float32 against float64: boxes reach a few hundred pixels, so the tolerance has a
	// relative part; scores lie in [0, 1].
	for _, name := range []string{"boxes", "scores"} {
		want := readNpy(t, name+"_ref.npy")
		got := outs[name]
		if got == nil || len(got.Data) != len(want.Data) {
			t.Fatalf("output %s: %v, want %d values", name, got, len(want.Data))
		}
		for i := range want.Data {
			w := float64(want.Data[i])
			if d := math.Abs(float64(got.Data[i]) - w); !(d <= 1e-4+1e-5*math.Abs(w)) {
				t.Fatalf("%s[%d] = %g, numpy %g (|difference| %.3g > 1e-4 + 1e-5·|numpy|)", name, i, got.Data[i], w, d)
			}
		}
	}
}
