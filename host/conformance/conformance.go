// Package conformance runs ONNX backend test folders (model.onnx beside test_data_set_N
// folders of input_N.pb and output_N.pb) through clhost and judges each: pass, wrong,
// refused or crash. A test runs in a process of its own, so that a crash of the OpenCL
// driver or a panic ends that test only: the parent finds the tests and starts one child
// per test (Run), and the child judges its one folder (RunCase) and prints the Result as
// JSON on its last line of output.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Verdicts of one conformance test.
const (
	Pass    = "pass"    // every output within tolerance
	Wrong   = "wrong"   // ran, but an output differs in shape or values
	Refused = "refused" // the model was refused at load or compile time, with an error
	Crash   = "crash"   // a panic, a signal, a time-out, or an error while running
)

// Result is the verdict on one test folder, as the child process reports it.
type Result struct {
	Test    string   `json:"test"`
	Verdict string   `json:"verdict"`
	Message string   `json:"message,omitempty"`
	Ops     []string `json:"ops,omitempty"`
	// Float says every input and output of the test is a floating-point tensor.
	Float bool `json:"float"`
}

// FindTests expands paths into test folders: a folder with model.onnx is a test, any
// other folder holds tests one level down. Only tests whose folder name re matches (every
// one when re is nil) are kept. The result is sorted.
func FindTests(paths []string, re *regexp.Regexp) ([]string, error) {
	var out []string
	isTest := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "model.onnx"))
		return err == nil
	}
	for _, a := range paths {
		if isTest(a) {
			if re == nil || re.MatchString(filepath.Base(a)) {
				out = append(out, a)
			}
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			dir := filepath.Join(a, e.Name())
			if e.IsDir() && isTest(dir) && (re == nil || re.MatchString(e.Name())) {
				out = append(out, dir)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// RunOptions say how Run starts the child process of each test.
type RunOptions struct {
	// Jobs is the number of tests run at the same time (at least 1).
	Jobs int
	// Timeout is the time limit of one test; one that runs longer counts as a crash.
	Timeout time.Duration
	// Command returns the child process that judges the test folder dir and prints its
	// Result as JSON on the last line of its standard output (RunCase's result). It is
	// started under ctx, which ends at the time limit.
	Command func(ctx context.Context, dir string) *exec.Cmd
	// Done, when set, is called as each test ends, one call at a time, with the number
	// of tests ended so far.
	Done func(done, total int, r Result)
}

// Run judges every test, each in a child process, Jobs at a time, and returns the
// results in the order of tests. A child that prints no verdict counts as a crash.
func Run(tests []string, opt RunOptions) []Result {
	results := make([]Result, len(tests))
	var wg sync.WaitGroup
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	for range max(opt.Jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := runChild(opt, tests[i])
				mu.Lock()
				results[i] = r
				done++
				if opt.Done != nil {
					opt.Done(done, len(tests), r)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range tests {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// runChild runs one test in its child process and reads the verdict it prints.
func runChild(opt RunOptions, dir string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	cmd := opt.Command(ctx, dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r Result
	if line := lastLine(stdout.String()); line != "" && json.Unmarshal([]byte(line), &r) == nil && r.Verdict != "" {
		return r
	}
	r = Result{Test: dir, Verdict: Crash}
	switch {
	case ctx.Err() != nil:
		r.Message = fmt.Sprintf("no verdict within %v", opt.Timeout)
	case err != nil:
		r.Message = fmt.Sprintf("%v: %s", err, firstLine(lastLine(stderr.String())))
	default:
		r.Message = "the test process printed no verdict"
	}
	return r
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// firstLine keeps the first line of s: the part that names the problem.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
