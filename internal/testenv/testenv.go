// Package testenv holds what the test binaries of several packages set up alike.
package testenv

import "os"

// QuickBuilds sets CLHOST_BUILD_OPTIONS to -cl-opt-disable for the test binary that
// calls it, on the default device (PoCL on the CPU), unless CLHOST_TEST_OPTIMIZE=1,
// CLHOST_TEST_FULL is set, the tests run on another device (CLHOST_TEST_DEVICE) or the
// variable is set already. PoCL compiles a program several times faster without its
// optimizer; docs/testing.md says which tests build this way and which build as clhost does.
func QuickBuilds() {
	if os.Getenv("CLHOST_TEST_DEVICE") != "" || os.Getenv("CLHOST_TEST_OPTIMIZE") == "1" || os.Getenv("CLHOST_TEST_FULL") != "" {
		return
	}
	if _, set := os.LookupEnv("CLHOST_BUILD_OPTIONS"); !set {
		os.Setenv("CLHOST_BUILD_OPTIONS", "-cl-opt-disable")
	}
}
