package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clhost/clhost/host"
	"github.com/clhost/clhost/host/conformance"
)

func init() {
	register(command{name: "conformance", summary: "run ONNX backend test folders (model.onnx + test_data_set_*) and count pass / wrong / refused / crash per op", run: runConformance})
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
		r := conformance.RunCase(*one, host.Options{Device: *device, CacheDir: defaultCacheDir()})
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
	tests, err := conformance.FindTests(fs.Args(), re)
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
	opt := conformance.RunOptions{Jobs: *jobs, Timeout: *timeout,
		Command: func(ctx context.Context, dir string) *exec.Cmd {
			return exec.CommandContext(ctx, self, "conformance", "-one", dir, "-d", *device)
		}}
	if *verbose {
		opt.Done = func(done, total int, r conformance.Result) {
			fmt.Printf("[%d/%d] %-8s %s", done, total, r.Verdict, r.Test)
			if r.Verdict != conformance.Pass && r.Message != "" {
				fmt.Printf(": %s", r.Message)
			}
			fmt.Println()
		}
	}
	results := conformance.Run(tests, opt)
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

// printConformanceTable prints the verdicts per op type, then the totals, over all tests
// and over the float ones (conformance.Count says how blocked tests count). The last line
// names the op types whose float tests, blocked ones aside, pass less than 95 % of the
// time, of those that pass any test at all.
func printConformanceTable(w io.Writer, results []conformance.Result) {
	t := conformance.Count(results)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\ttests\tpass\twrong\trefused\tcrash\tfloat tests\tfloat pass\tfloat blocked\t")
	row := func(name string, c conformance.Counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, c.Tests, c.Pass, c.Wrong, c.Refused, c.Crash, c.FloatTests, c.FloatPass, c.FloatBlocked)
	}
	for _, c := range t.Ops {
		row(c.Op, c.Counts)
	}
	row("total", t.Total)
	tw.Flush()
	if len(t.Under) > 0 {
		under := make([]string, len(t.Under))
		for i, c := range t.Under {
			under[i] = fmt.Sprintf("%s %d/%d", c.Op, c.FloatPass, c.FloatJudged())
		}
		fmt.Fprintf(w, "op types clhost runs whose float tests, those blocked by another op aside, pass under 95 %%: %s\n", strings.Join(under, ", "))
	}
}

// checkExpectedPasses holds a conformance run to the list of test folders at path
// (conformance.ReadPassList): a listed test that no longer passes, or any wrong or
// crashed test, fails the run. Tests that pass beyond the list are printed, to be added
// to it.
func checkExpectedPasses(w io.Writer, path string, results []conformance.Result) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("-expect-pass: %w", err)
	}
	defer f.Close()
	want, err := conformance.ReadPassList(f)
	if err != nil {
		return fmt.Errorf("-expect-pass %s: %w", path, err)
	}
	e := conformance.CompareExpected(want, results)
	if len(e.Gained) > 0 {
		fmt.Fprintf(w, "%d tests pass that %s does not list (add them):\n  %s\n", len(e.Gained), path, strings.Join(e.Gained, "\n  "))
	}
	if e.OK() {
		fmt.Fprintf(w, "every test %s lists passes (%d); none is wrong or crashes\n", path, len(want))
		return nil
	}
	return fmt.Errorf("%d tests %s lists do not pass, %d are wrong or crash:\n  %s", len(e.Lost), path, len(e.Bad), strings.Join(append(e.Bad, e.Lost...), "\n  "))
}
