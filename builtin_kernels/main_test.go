package builtinkernels

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestMain fails the package's tests where any built-in program that RunPlan compiled
// drew a compiler warning (PoCL prints only "1 warning generated." for each, so a user
// would see noise and no reason). Warnings show up where a program is compiled afresh;
// a kernel's changed text always is, as is everything on a fresh machine (CI).
func TestMain(m *testing.M) {
	tempFile := regexp.MustCompile(`\S*\.cl:`) // the compiler's temporary copy of the source
	var mu sync.Mutex
	warned := map[string]bool{}
	buildLogged = func(plan *Plan, log string) {
		for _, line := range strings.Split(log, "\n") {
			// clang's -Wpsabi note that a 16-float vector crosses a call without
			// AVX-512 is about a calling convention, which nothing in one program
			// crosses (PoCL inlines every call): it says nothing about the kernel.
			if strings.Contains(line, "warning:") && !strings.Contains(line, "without 'avx512f' enabled changes the ABI") {
				kernels := make([]string, 0, len(plan.Launches))
				for _, l := range plan.Launches {
					kernels = append(kernels, l.Kernel)
				}
				mu.Lock()
				warned[fmt.Sprintf("%s (kernels %s)", tempFile.ReplaceAllString(strings.TrimSpace(line), "line "), strings.Join(kernels, ", "))] = true
				mu.Unlock()
			}
		}
	}
	code := m.Run()
	if len(warned) > 0 {
		lines := make([]string, 0, len(warned))
		for w := range warned {
			lines = append(lines, w)
		}
		sort.Strings(lines)
		fmt.Fprintf(os.Stderr, "FAIL: built-in programs compiled with warnings:\n  %s\n", strings.Join(lines, "\n  "))
		code = 1
	}
	os.Exit(code)
}
