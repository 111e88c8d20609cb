package host

import (
	"os"
	"path/filepath"
	"testing"
)

// testDeviceSpec is the device the tests run on: CLHOST_TEST_DEVICE (a -d spec), else the
// CPU (PoCL wherever the tests run).
func testDeviceSpec() string {
	if s := os.Getenv("CLHOST_TEST_DEVICE"); s != "" {
		return s
	}
	return "cpu"
}

func writeFile(t testing.TB, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
