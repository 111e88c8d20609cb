package main

import (
	"strings"
	"testing"
)

// TestUsageColumns checks that `clhost -h` lists every command with its summary starting
// in one column, however long the longest command name.
func TestUsageColumns(t *testing.T) {
	var b strings.Builder
	printUsage(&b)
	col, rows := -1, 0
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(line, "  ") || commands[f[0]].summary == "" {
			continue
		}
		rows++
		at := strings.Index(line, commands[f[0]].summary)
		if col >= 0 && at != col {
			t.Errorf("%q: summary at column %d, the others at %d\n%s", f[0], at, col, b.String())
		}
		col = at
		if at < len("  ")+len(f[0])+1 {
			t.Errorf("%q: summary runs into the name\n%s", f[0], b.String())
		}
	}
	if rows != len(commands) {
		t.Errorf("%d commands listed, %d registered\n%s", rows, len(commands), b.String())
	}
}
