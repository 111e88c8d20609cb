package main

import (
	"flag"
	"io"
	"testing"
)

// TestTuneFlag: -tune alone turns tuning on, -tune=false off, and without the flag the
// device decides (TuneGPUs); a value that is not a boolean is refused.
func TestTuneFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		set, on bool
		bad     bool
	}{
		{args: nil},
		{args: []string{"-tune"}, set: true, on: true},
		{args: []string{"--tune=false"}, set: true},
		{args: []string{"-tune=true"}, set: true, on: true},
		{args: []string{"-tune=maybe"}, bad: true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var ef engineFlags
		addEngineFlags(fs, &ef)
		err := fs.Parse(tc.args)
		if (err != nil) != tc.bad {
			t.Fatalf("%v: error %v, want error %v", tc.args, err, tc.bad)
		}
		if tc.bad {
			continue
		}
		if ef.tune.set != tc.set || ef.tune.on != tc.on {
			t.Errorf("%v: set %v on %v, want set %v on %v", tc.args, ef.tune.set, ef.tune.on, tc.set, tc.on)
		}
	}
}
