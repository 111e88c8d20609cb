package host

// Tests of the global custom-layer configuration (configs/): its layers run inside a
// model and match references computed here, CLHOST_CONFIG_DIR replaces it, and
// NoGlobalConfig leaves it out. They set the environment, so they do not run in parallel.

import (
	"math"
	"testing"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/configs"
	"github.com/clhost/clhost/model"
)

// ctOneLayer is a model of one layer of type typ from x (shape in) to y (shape out).
func ctOneLayer(t testing.TB, typ string, in, out []int, attrs ...model.Attr) *model.Model {
	t.Helper()
	b := model.NewBuilder(typ)
	x := b.Input("x", model.Float32, in...)
	y := b.Tensor("y", model.Float32, out...)
	b.LayerOutputs(typ, "l1", []string{x}, []string{y}, attrs...)
	b.Output(y)
	return ctBuild(t, b)
}

// TestGlobalConfigLayers runs GRN, Swish and Tile from the embedded global configuration.
func TestGlobalConfigLayers(t *testing.T) {
	t.Setenv(configs.EnvDir, "")
	e, _ := ctEngine(t, Options{})
	run := func(t *testing.T, m *model.Model, in *Tensor) []float32 {
		t.Helper()
		n, err := e.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if got := n.CustomLayers(); len(got) != 1 {
			t.Fatalf("custom layers %v, want the one layer", got)
		}
		return ctInfer(t, n, map[string]*Tensor{"x": in})["y"].Data
	}

	t.Run("GRN", func(t *testing.T) {
		// y = x / sqrt(sum over channels of x² + bias)
		s := []int{2, 4, 3, 5}
		in := ctRand(60, s...)
		got := run(t, ctOneLayer(t, "GRN", s, s, model.FloatAttr("bias", 0.5)), in)
		want := make([]float32, len(in.Data))
		ctEach(s, func(b, f, y, x int) {
			sum := 0.0
			for c := 0; c < s[1]; c++ {
				v := float64(in.Data[bfyx(s, b, c, y, x)])
				sum += v * v
			}
			i := bfyx(s, b, f, y, x)
			want[i] = float32(float64(in.Data[i]) / math.Sqrt(sum+0.5))
		})
		ctClose(t, "GRN", got, want, 1e-5)
	})

	t.Run("Swish", func(t *testing.T) {
		// y = x · sigmoid(beta · x); the layer builds with -cl-fast-relaxed-math.
		s := []int{1, 3, 4, 4}
		in := ctRand(61, s...)
		got := run(t, ctOneLayer(t, "Swish", s, s, model.FloatAttr("beta", 1.5)), in)
		want := ctMap(in.Data, func(v float32) float32 {
			return float32(float64(v) / (1 + math.Exp(-1.5*float64(v))))
		})
		ctClose(t, "Swish", got, want, 1e-4)
	})

	t.Run("Tile", func(t *testing.T) {
		// The output repeats the input along every dimension: 1×2×2×3 → 2×4×4×6.
		is, ts := []int{1, 2, 2, 3}, []int{2, 4, 4, 6}
		in := ctRand(62, is...)
		got := run(t, ctOneLayer(t, "Tile", is, ts), in)
		want := make([]float32, elements(ts))
		ctEach(ts, func(b, f, y, x int) {
			want[bfyx(ts, b, f, y, x)] = in.Data[bfyx(is, b%is[0], f%is[1], y%is[2], x%is[3])]
		})
		ctClose(t, "Tile", got, want, 0)
	})
}

// TestNoGlobalConfig: with NoGlobalConfig the global layers are not defined.
func TestNoGlobalConfig(t *testing.T) {
	t.Setenv(configs.EnvDir, "")
	e, _ := ctEngine(t, Options{NoGlobalConfig: true})
	if _, ok := e.Layers.Lookup("GRN"); ok {
		t.Error("GRN is defined without the global configuration")
	}
	s := []int{1, 2, 2, 2}
	_, err := e.Compile(ctOneLayer(t, "GRN", s, s))
	if err == nil {
		t.Fatal("a GRN layer compiled without the global configuration")
	}
	ctContains(t, "the error", err.Error(), `no implementation for layer type "GRN" (layer "l1")`)
}

// TestConfigDirEnv: CLHOST_CONFIG_DIR replaces the embedded global configuration with
// every *.xml of that folder.
func TestConfigDirEnv(t *testing.T) {
	t.Run("replaces", func(t *testing.T) {
		t.Setenv(configs.EnvDir, ctPath(t, "envdir"))
		e, _ := ctEngine(t, Options{})
		if _, ok := e.Layers.Lookup("GRN"); ok {
			t.Error("GRN of the embedded configuration is still defined")
		}
		s := []int{1, 3, 2, 4}
		n, err := e.Compile(ctOneLayer(t, "Cube", s, s))
		if err != nil {
			t.Fatal(err)
		}
		in := ctRand(63, s...)
		got := ctInfer(t, n, map[string]*Tensor{"x": in})["y"].Data
		ctClose(t, "Cube", got, ctMap(in.Data, func(v float32) float32 { return v * v * v }), 1e-6)
		if _, err := e.Compile(ctOneLayer(t, "GRN", s, s)); err == nil {
			t.Error("a GRN layer compiled with the global configuration replaced")
		}
	})
	t.Run("no xml", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv(configs.EnvDir, dir)
		_, err := NewEngine(Options{device: mustCtDevice(t)})
		if err == nil {
			t.Fatal("NewEngine accepted a configuration folder without *.xml")
		}
		ctContains(t, "the error", err.Error(), configs.EnvDir+"="+dir, "no *.xml configuration in that folder")
	})
}

func mustCtDevice(t testing.TB) *cl.Device {
	t.Helper()
	d, err := ctDevice()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
