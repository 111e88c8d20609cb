package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// checkExpectedPasses holds a conformance run to a list of test folders that passed
// before (the file at path, one folder name per line, # starting a comment): a listed
// test that no longer passes, or any wrong or crashed test, fails the run, so that a
// change which loses an op shows in CI. Tests that pass beyond the list are printed,
// to be added to it.
func checkExpectedPasses(w io.Writer, path string, results []caseResult) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("-expect-pass: %w", err)
	}
	defer f.Close()
	want := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line, _, _ := strings.Cut(sc.Text(), "#"); strings.TrimSpace(line) != "" {
			want[strings.TrimSpace(line)] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("-expect-pass %s: %w", path, err)
	}
	var lost, bad, gained []string
	seen := map[string]bool{}
	for _, r := range results {
		name := filepath.Base(r.Test)
		seen[name] = true
		switch {
		case r.Verdict == verdictWrong || r.Verdict == verdictCrash:
			bad = append(bad, fmt.Sprintf("%s: %s: %s", name, r.Verdict, r.Message))
		case want[name] && r.Verdict != verdictPass:
			lost = append(lost, fmt.Sprintf("%s: %s: %s", name, r.Verdict, r.Message))
		case !want[name] && r.Verdict == verdictPass:
			gained = append(gained, name)
		}
	}
	for name := range want {
		if !seen[name] {
			lost = append(lost, name+": not found among the test folders")
		}
	}
	sort.Strings(lost)
	sort.Strings(gained)
	if len(gained) > 0 {
		fmt.Fprintf(w, "%d tests pass that %s does not list (add them):\n  %s\n", len(gained), path, strings.Join(gained, "\n  "))
	}
	if len(lost)+len(bad) == 0 {
		fmt.Fprintf(w, "every test %s lists passes (%d); none is wrong or crashes\n", path, len(want))
		return nil
	}
	return fmt.Errorf("%d tests %s lists do not pass, %d are wrong or crash:\n  %s", len(lost), path, len(bad), strings.Join(append(bad, lost...), "\n  "))
}
