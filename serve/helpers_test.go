package serve

import (
	"context"
	"github.com/clhost/clhost/customlayer"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/model"
)

// reluConfig is the custom-layer configuration of samples/custom_relu: a leaky ReLU
// kernel of type "ReLU", its slope a model attribute.
var reluConfig = filepath.Join("..", "samples", "custom_relu", "custom_layer_example.xml")

const (
	imgC, imgH, imgW = 3, 8, 8
	convF            = 4
	reluSlope        = 0.1
)

// reluWeights are the conv weights of the test model, fixed so every batch size builds
// the same model.
var reluWeights, reluBias = func() ([]float32, []float32) {
	rng := rand.New(rand.NewSource(7))
	w := make([]float32, convF*imgC*3*3)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.3)
	}
	b := make([]float32, convF)
	for i := range b {
		b[i] = float32(rng.NormFloat64() * 0.1)
	}
	return w, b
}()

// reluModel is Conv 3×3 → custom ReLU (the sample's kernel) → MaxPool 2×2 at a batch
// size, with two outputs: the ReLU's ("features") and the pool's ("pooled").
func reluModel(batch int, _ *customlayer.Registry) (*model.Model, error) {
	if batch == 0 {
		batch = 1
	}
	b := model.NewBuilder("relu")
	x := b.Input("image", model.Float32, batch, imgC, imgH, imgW)
	w := b.ConstFloat32("conv.weight", []int{convF, imgC, 3, 3}, reluWeights)
	bias := b.ConstFloat32("conv.bias", []int{convF}, reluBias)
	c := b.Layer("Conv", "conv", []string{x, w, bias},
		model.IntsAttr("kernel_shape", 3, 3), model.IntsAttr("pads", 1, 1, 1, 1))
	r := b.Tensor("features", model.Float32, batch, convF, imgH, imgW)
	b.LayerOutputs("ReLU", "relu", []string{c}, []string{r}, model.FloatAttr("negative_slope", reluSlope))
	p := b.Layer("MaxPool", "pooled", []string{r},
		model.IntsAttr("kernel_shape", 2, 2), model.IntsAttr("strides", 2, 2))
	b.Output(r)
	b.Output(p)
	return b.Build()
}

func reluSource() Source {
	return Source{Name: "relu", Platform: "clhost_clm", Configs: []string{reluConfig}, Load: reluModel}
}

// reluReference computes the relu model's outputs for one image on the CPU.
func reluReference(img []float32) (features, pooled []float32) {
	features = make([]float32, convF*imgH*imgW)
	for f := range convF {
		for y := range imgH {
			for x := range imgW {
				s := float64(reluBias[f])
				for c := range imgC {
					for ky := range 3 {
						for kx := range 3 {
							iy, ix := y+ky-1, x+kx-1
							if iy < 0 || iy >= imgH || ix < 0 || ix >= imgW {
								continue
							}
							s += float64(reluWeights[((f*imgC+c)*3+ky)*3+kx]) * float64(img[(c*imgH+iy)*imgW+ix])
						}
					}
				}
				if s < 0 {
					s *= reluSlope
				}
				features[(f*imgH+y)*imgW+x] = float32(s)
			}
		}
	}
	ph, pw := imgH/2, imgW/2
	pooled = make([]float32, convF*ph*pw)
	for f := range convF {
		for y := range ph {
			for x := range pw {
				m := float32(math.Inf(-1))
				for dy := range 2 {
					for dx := range 2 {
						m = max(m, features[(f*imgH+2*y+dy)*imgW+2*x+dx])
					}
				}
				pooled[(f*ph+y)*pw+x] = m
			}
		}
	}
	return features, pooled
}

// testDevices is the device the tests run on (CLHOST_TEST_DEVICE, else the CPU), listed
// n times: two engines on one device exercise the scheduler on a one-device machine.
func testDevices(t testing.TB, n int) ([]*cl.Device, []string) {
	t.Helper()
	spec := os.Getenv("CLHOST_TEST_DEVICE")
	if spec == "" {
		spec = "cpu"
	}
	all, err := cl.AllDevices()
	if err != nil {
		t.Fatal(err)
	}
	list := spec
	for range n - 1 {
		list += "," + spec
	}
	devs, labels, err := SelectDevices(all, list)
	if err != nil {
		t.Fatal(err)
	}
	return devs, labels
}

// testServer is a Server with its REST and gRPC listeners on loopback.
type testServer struct {
	*Server
	httpURL  string
	grpcAddr string
	stop     func() error
}

// startServer starts a server of the given models on nDev engines of the test device.
func startServer(t testing.TB, sources []Source, nDev int, opts Options) *testServer {
	t.Helper()
	opts.Devices, opts.DeviceNames = testDevices(t, nDev)
	opts.Engine = host.Options{NoGlobalConfig: true}
	s, err := New(sources, opts)
	if err != nil {
		t.Fatal(err)
	}
	return listen(t, s)
}

func listen(t testing.TB, s *Server) *testServer {
	t.Helper()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, hl, gl, 30*time.Second) }()
	var once sync.Once
	var result error
	ts := &testServer{Server: s, httpURL: "http://" + hl.Addr().String(), grpcAddr: gl.Addr().String()}
	ts.stop = func() error {
		once.Do(func() {
			cancel()
			result = <-done
			s.Close()
		})
		return result
	}
	t.Cleanup(func() { _ = ts.stop() })
	return ts
}

// httpClient is a client with enough idle connections for the load tests.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 0}, Timeout: time.Minute}

// closeEnough compares a served value with a reference within the stated tolerance.
func closeEnough(got, want float32) bool { return within(got, want) }

// settle waits until the goroutine count drops back to at most want, for tests of
// leaks: finished connections' goroutines end a little after their requests.
func settle(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 100 && n > want; i++ {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}
