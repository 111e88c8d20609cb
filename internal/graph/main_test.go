package graph_test

import (
	"os"
	"testing"

	"github.com/clhost/clhost/internal/testenv"
)

// TestMain builds this package's programs with -cl-opt-disable on PoCL (testenv.QuickBuilds):
// these tests compare fused layers with the unfused ones they replace, which a kernel's
// optimization level does not change.
func TestMain(m *testing.M) {
	testenv.QuickBuilds()
	os.Exit(m.Run())
}
