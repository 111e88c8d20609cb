package builtinkernels

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/clhost/clhost/cl"
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
			// Every warning counts, clang's -Wpsabi note on a 16-float vector passed by
			// value too: a user sees it, pointing at a temporary file, on every first run.
			if strings.Contains(line, "warning:") {
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
	sharedProgram = programMemo()
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

// programMemo builds each distinct program once per test process and hands it out again
// (RunPlan's sharedProgram). Builds of distinct programs still run side by side; a second
// caller of the same one waits for the first's build.
func programMemo() func(ctx *cl.Context, source, options string) (*cl.Program, bool, error) {
	type key struct {
		ctx             *cl.Context
		source, options string
	}
	type entry struct {
		once sync.Once
		prog *cl.Program
		err  error
	}
	var mu sync.Mutex
	built := map[key]*entry{}
	return func(ctx *cl.Context, source, options string) (*cl.Program, bool, error) {
		k := key{ctx, source, options}
		mu.Lock()
		e, ok := built[k]
		if !ok {
			e = &entry{}
			built[k] = e
		}
		mu.Unlock()
		fresh := false
		e.once.Do(func() {
			fresh = true
			e.prog, e.err = ctx.BuildProgram(source, options)
		})
		return e.prog, fresh, e.err
	}
}

// TestProgramMemo: RunPlan builds a program once per test process and hands the same one
// out again (the memo TestMain installs), saying which call built it.
func TestProgramMemo(t *testing.T) {
	env := deviceEnv(t)
	memo := programMemo()
	src := "__kernel void memo_probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"
	first, fresh, err := memo(env.ctx, src, "")
	if err != nil || !fresh {
		t.Fatalf("first build: fresh %v, %v", fresh, err)
	}
	again, fresh, err := memo(env.ctx, src, "")
	if err != nil || fresh || again != first {
		t.Fatalf("second call: fresh %v, same program %v, %v", fresh, again == first, err)
	}
	other, fresh, err := memo(env.ctx, src, "-DOTHER")
	if err != nil || !fresh || other == first {
		t.Fatalf("other options: fresh %v, same program %v, %v", fresh, other == first, err)
	}
	if _, _, err := memo(env.ctx, "__kernel void broken(", ""); err == nil {
		t.Fatal("a broken source built")
	}
}
