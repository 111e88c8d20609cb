package host

import (
	"fmt"
	"os"
	"testing"

	"github.com/clhost/clhost/internal/testenv"
)

// TestMain builds this package's programs with -cl-opt-disable on PoCL (testenv.QuickBuilds):
// these tests are about the runtime (arenas, split batches, borrowed inputs, the
// sanitizer, checks), which a kernel's optimization level does not change.
func TestMain(m *testing.M) {
	if os.Getenv(precompileWorkerEnv) == "1" {
		// A compile worker started by TestCompileWorkersFillPoCLCache: the jobs file is
		// the last argument.
		if err := RunCompileWorker(os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testenv.QuickBuilds()
	os.Exit(m.Run())
}
