package host

import (
	"os"
	"testing"
)

// TestMain builds this package's programs with -cl-opt-disable (CLHOST_BUILD_OPTIONS) on
// the default device, PoCL on the CPU, unless CLHOST_TEST_OPTIMIZE=1 or CLHOST_TEST_FULL=1.
// These tests are about the runtime (arenas, split batches, borrowed inputs, the
// sanitizer, checks), which a kernel's optimization level does not change, and PoCL
// compiles a program several times faster without its optimizer. The optimized builds
// users run are tested by cmd/clhost's, samples' and serve's tests and by make test-full.
func TestMain(m *testing.M) {
	quickBuilds()
	os.Exit(m.Run())
}

func quickBuilds() {
	if os.Getenv("CLHOST_TEST_DEVICE") != "" || os.Getenv("CLHOST_TEST_OPTIMIZE") == "1" || os.Getenv("CLHOST_TEST_FULL") != "" {
		return
	}
	if _, set := os.LookupEnv("CLHOST_BUILD_OPTIONS"); !set {
		os.Setenv("CLHOST_BUILD_OPTIONS", "-cl-opt-disable")
	}
}
