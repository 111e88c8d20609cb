package host

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/clhost/clhost/model"
)

// testDeviceSpec is the device the tests run on: CLHOST_TEST_DEVICE (a -d spec), else the
// CPU (PoCL wherever the tests run).
func testDeviceSpec() string {
	if s := os.Getenv("CLHOST_TEST_DEVICE"); s != "" {
		return s
	}
	return "cpu"
}

// simulated reports whether the tests run on oclgrind's simulator (make check-kernels),
// where an inference costs a thousand times what it does on PoCL and repeating one with
// the same kernels and buffers checks no memory access the first did not.
func simulated() bool { return os.Getenv("CLHOST_TEST_DEVICE") == "oclgrind" }

func writeFile(t testing.TB, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// uniformConsts returns a function that adds a constant of b with the given name and
// shape, its values drawn from rng uniformly in [-scale, scale): the test models' weights.
func uniformConsts(b *model.Builder, rng *rand.Rand, scale float64) func(name string, shape ...int) string {
	return func(name string, shape ...int) string {
		v := make([]float32, elements(shape))
		for i := range v {
			v[i] = float32(scale * (2*rng.Float64() - 1))
		}
		return b.ConstFloat32(name, shape, v)
	}
}

// fullSweeps is set by `make test-full` (CLHOST_TEST_FULL=1): tests that sweep many
// networks then run all of them. Every distinct network costs PoCL seconds of compiling on
// a new machine, so `make test` runs a part that still reaches each code path.
var fullSweeps = os.Getenv("CLHOST_TEST_FULL") != ""
