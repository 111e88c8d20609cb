package conformance

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// ReadPassList reads a list of test folder names, one per line, # starting a comment:
// the tests a run must pass.
func ReadPassList(r io.Reader) (map[string]bool, error) {
	want := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line, _, _ := strings.Cut(sc.Text(), "#"); strings.TrimSpace(line) != "" {
			want[strings.TrimSpace(line)] = true
		}
	}
	return want, sc.Err()
}

// Expected holds a run to a list of tests that passed before, so that a change which
// loses an op shows in CI. Each entry reads "name: verdict: message".
type Expected struct {
	Lost   []string // listed tests that no longer pass, or were not found (sorted)
	Bad    []string // tests that are wrong or crash, listed or not, in the run's order
	Gained []string // tests that pass beyond the list, to be added to it (sorted names)
}

// OK says the run meets the list: every listed test passes, none is wrong or crashes.
func (e Expected) OK() bool { return len(e.Lost)+len(e.Bad) == 0 }

// CompareExpected compares results (tests named by their folder's base name) with the
// tests want lists.
func CompareExpected(want map[string]bool, results []Result) Expected {
	var e Expected
	seen := map[string]bool{}
	for _, r := range results {
		name := filepath.Base(r.Test)
		seen[name] = true
		switch {
		case r.Verdict == Wrong || r.Verdict == Crash:
			e.Bad = append(e.Bad, fmt.Sprintf("%s: %s: %s", name, r.Verdict, r.Message))
		case want[name] && r.Verdict != Pass:
			e.Lost = append(e.Lost, fmt.Sprintf("%s: %s: %s", name, r.Verdict, r.Message))
		case !want[name] && r.Verdict == Pass:
			e.Gained = append(e.Gained, name)
		}
	}
	for name := range want {
		if !seen[name] {
			e.Lost = append(e.Lost, name+": not found among the test folders")
		}
	}
	sort.Strings(e.Lost)
	sort.Strings(e.Gained)
	return e
}
