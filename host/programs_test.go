package host

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedBinaryRebuilt: a truncated cache entry is rebuilt with a note naming it,
// never handed to the driver nor fatal; the rebuilt entry loads on the next run.
func TestDamagedBinaryRebuilt(t *testing.T) {
	cache := t.TempDir()
	var logs strings.Builder
	compile := func() *Network {
		t.Helper()
		e := newTestEngine(t, Options{CacheDir: cache, Binaries: On, Log: &logs, NoGlobalConfig: true})
		n, err := e.Compile(diamondModel(t))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	compile()
	entries, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	if len(entries) == 0 {
		t.Fatal("no cache entries written with On")
	}
	for _, path := range entries {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs.Reset()
	n := compile()
	for _, path := range entries {
		if !strings.Contains(logs.String(), path+" is damaged") {
			t.Errorf("no note of the damaged entry %s in:\n%s", path, logs.String())
		}
	}
	for _, p := range n.progs {
		if p.fromCache {
			t.Errorf("program %s was loaded from a truncated entry", p.layerType)
		}
	}
	x := randomTensor(rand.New(rand.NewSource(4)), 2, 3, 5, 7)
	out, err := n.Infer(context.Background(), map[string]*Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	// e = LeakyRelu(Relu(x) + Sigmoid(x)) with alpha 0.2: the sum is positive.
	for i, v := range x.Data {
		want := max(v, 0) + sigmoid(v)
		if d := out["e"].Data[i] - want; d > 1e-5 || d < -1e-5 {
			t.Fatalf("e[%d] = %v, want %v", i, out["e"].Data[i], want)
		}
	}
	for _, p := range compile().progs {
		if !p.fromCache {
			t.Errorf("program %s was not loaded from its rebuilt entry", p.layerType)
		}
	}
}

// TestBinariesAutoSkipsPoCL: by default no binary is written on PoCL (taking one compiles
// every kernel again), and one is on other drivers.
func TestBinariesAutoSkipsPoCL(t *testing.T) {
	cache := t.TempDir()
	e := newTestEngine(t, Options{CacheDir: cache, NoGlobalConfig: true})
	if _, err := e.Compile(diamondModel(t)); err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	if pocl := isPoCL(e.device); pocl != (len(entries) == 0) {
		t.Errorf("PoCL %v: %d binaries written", pocl, len(entries))
	}
}

// TestFrameBinary: an entry's header catches truncation, extension and altered bytes.
func TestFrameBinary(t *testing.T) {
	bin := []byte("some driver binary")
	framed := frameBinary(bin)
	if got, err := unframeBinary(framed); err != nil || string(got) != string(bin) {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	altered := append([]byte(nil), framed...)
	altered[len(altered)-1] ^= 1
	for name, raw := range map[string][]byte{
		"truncated": framed[:len(framed)-1], "extended": append(append([]byte(nil), framed...), 0),
		"altered": altered, "empty": nil, "unframed": bin,
	} {
		if _, err := unframeBinary(raw); err == nil {
			t.Errorf("%s entry accepted", name)
		}
	}
}
