package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

func init() {
	register(command{name: "conformance", summary: "run ONNX backend test folders (model.onnx + test_data_set_*) and count pass / wrong / refused / crash per op", run: runConformance})
}

// Verdicts of one conformance test.
const (
	verdictPass    = "pass"    // every output within tolerance
	verdictWrong   = "wrong"   // ran, but an output differs in shape or values
	verdictRefused = "refused" // the model was refused at load or compile time, with an error
	verdictCrash   = "crash"   // a panic, a signal, a time-out, or an error while running
)

// caseResult is the verdict on one test folder, as the child process reports it.
type caseResult struct {
	Test    string   `json:"test"`
	Verdict string   `json:"verdict"`
	Message string   `json:"message,omitempty"`
	Ops     []string `json:"ops,omitempty"`
	// Float says every input and output of the test is a floating-point tensor.
	Float bool `json:"float"`
}

func runConformance(args []string) error {
	fs := newFlagSet("conformance")
	one := fs.String("one", "", "run the single test folder given and print its verdict as JSON (used by the parent process)")
	device := fs.String("d", "cpu", "device, as for 'clhost run -d'")
	jobs := fs.Int("j", 1, "tests run at the same time, each in a process of its own")
	timeout := fs.Duration("timeout", 3*time.Minute, "time limit of one test; one that runs longer counts as a crash")
	filter := fs.String("run", "", "only tests whose folder name matches this regular expression")
	verbose := fs.Bool("v", false, "print every test's verdict and the message of each that did not pass")
	jsonOut := fs.String("json", "", "also write every test's verdict to this file as JSON")
	expectPass := fs.String("expect-pass", "", "a file listing, one per line, the test folders that must pass: the run fails when one of them does not, or when any test is wrong or crashes (the list of tests that pass beyond it is printed)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *one != "" {
		r := runConformanceCase(*one, *device)
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	if fs.NArg() == 0 {
		return usagef("give one or more test folders, or folders of them (e.g. /usr/share/libonnx-testdata/data/node)")
	}
	if *jobs < 1 {
		return usagef("-j %d: must be at least 1", *jobs)
	}
	var re *regexp.Regexp
	if *filter != "" {
		var err error
		if re, err = regexp.Compile(*filter); err != nil {
			return usagef("-run: %v", err)
		}
	}
	tests, err := findConformanceTests(fs.Args(), re)
	if err != nil {
		return err
	}
	if len(tests) == 0 {
		return errors.New("no test folders (a folder holding model.onnx and test_data_set_0) found")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	results := make([]caseResult, len(tests))
	var wg sync.WaitGroup
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	for range *jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := runConformanceChild(self, tests[i], *device, *timeout)
				mu.Lock()
				results[i] = r
				done++
				if *verbose {
					fmt.Printf("[%d/%d] %-8s %s", done, len(tests), r.Verdict, r.Test)
					if r.Verdict != verdictPass && r.Message != "" {
						fmt.Printf(": %s", r.Message)
					}
					fmt.Println()
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
	if *jsonOut != "" {
		b, err := json.MarshalIndent(results, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	printConformanceTable(os.Stdout, results)
	if *expectPass != "" {
		return checkExpectedPasses(os.Stdout, *expectPass, results)
	}
	return nil
}

// findConformanceTests expands the arguments into test folders: a folder with model.onnx
// is a test, any other folder holds tests one level down. The result is sorted.
func findConformanceTests(args []string, re *regexp.Regexp) ([]string, error) {
	var out []string
	isTest := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "model.onnx"))
		return err == nil
	}
	for _, a := range args {
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

// runConformanceChild runs one test in a child process, so that a crash of the OpenCL
// driver or a panic ends that test only.
func runConformanceChild(self, dir, device string, timeout time.Duration) caseResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "conformance", "-one", dir, "-d", device)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r caseResult
	if line := lastLine(stdout.String()); line != "" && json.Unmarshal([]byte(line), &r) == nil && r.Verdict != "" {
		return r
	}
	r = caseResult{Test: dir, Verdict: verdictCrash}
	switch {
	case ctx.Err() != nil:
		r.Message = fmt.Sprintf("no verdict within %v", timeout)
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

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// printConformanceTable prints the verdicts per op type (a test counts once under each
// op type its graph holds), then the totals, over all tests and over the float ones.
// A float test refused because of another of its op types (Loop in an expanded Range,
// RandomUniformLike in an expanded Bernoulli) counts as "blocked" under the others: it
// says nothing about them. The last line names the op types whose float tests, blocked
// ones aside, pass less than 95 % of the time, of those that pass any test at all.
func printConformanceTable(w io.Writer, results []caseResult) {
	type counts struct{ tests, pass, wrong, refused, crash, floatTests, floatPass, floatBlocked int }
	add := func(c *counts, r caseResult, blocked bool) {
		c.tests++
		switch r.Verdict {
		case verdictPass:
			c.pass++
		case verdictWrong:
			c.wrong++
		case verdictRefused:
			c.refused++
		default:
			c.crash++
		}
		if r.Float {
			c.floatTests++
			switch {
			case r.Verdict == verdictPass:
				c.floatPass++
			case blocked:
				c.floatBlocked++
			}
		}
	}
	perOp := map[string]*counts{}
	var total counts
	for _, r := range results {
		add(&total, r, false)
		ops := r.Ops
		if len(ops) == 0 {
			ops = []string{"(unreadable)"}
		}
		by := refusingOp(r)
		for _, op := range ops {
			if perOp[op] == nil {
				perOp[op] = &counts{}
			}
			add(perOp[op], r, by != "" && by != op)
		}
	}
	ops := make([]string, 0, len(perOp))
	for op := range perOp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\ttests\tpass\twrong\trefused\tcrash\tfloat tests\tfloat pass\tfloat blocked\t")
	row := func(name string, c *counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, c.tests, c.pass, c.wrong, c.refused, c.crash, c.floatTests, c.floatPass, c.floatBlocked)
	}
	var under []string
	for _, op := range ops {
		c := perOp[op]
		row(op, c)
		if n := c.floatTests - c.floatBlocked; c.pass > 0 && 100*c.floatPass < 95*n {
			under = append(under, fmt.Sprintf("%s %d/%d", op, c.floatPass, n))
		}
	}
	row("total", &total)
	tw.Flush()
	if len(under) > 0 {
		fmt.Fprintf(w, "op types clhost runs whose float tests, those blocked by another op aside, pass under 95 %%: %s\n", strings.Join(under, ", "))
	}
}

// refusingOp is the op type a refused test's message names as the one refused, or "".
func refusingOp(r caseResult) string {
	if r.Verdict != verdictRefused {
		return ""
	}
	if m := refusingOpRE.FindStringSubmatch(r.Message); m != nil {
		return m[1]
	}
	return ""
}

// refusingOpRE matches how the importer and the compiler name a refused node: `node "n"
// (Op):`, `node 8 (Op):`, `layer "n" (Op)` and `layer type "Op"`.
var refusingOpRE = regexp.MustCompile(`(?:node (?:"[^"]*"|\d+) \(|layer "[^"]*" \(|layer type ")([A-Za-z][\w.:]*)`)
