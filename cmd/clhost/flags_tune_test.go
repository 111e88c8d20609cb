package main

import (
	"flag"
	"io"
	"testing"

	"github.com/clhost/clhost/host"
)

// TestTuneFlag: -tune alone turns tuning on, -tune=false off, and without the flag the
// device decides (Auto); a value that is not a boolean is refused.
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

// TestEngineFlagModes: without flags the engine options keep their zero, Auto modes, so
// the CLI and a library user's host.Options{} behave alike; each flag sets its mode.
func TestEngineFlagModes(t *testing.T) {
	parse := func(args ...string) host.Options {
		t.Helper()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var ef engineFlags
		addEngineFlags(fs, &ef)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		o, err := ef.options(host.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := parse()
	if o.Tune != host.Auto || o.Pinned != host.Auto || o.Queue != host.QueueAuto ||
		o.SplitBatch != host.Auto || o.Arena != host.Auto {
		t.Errorf("no flags: Tune %d, Pinned %d, Queue %d, SplitBatch %d, Arena %d; want every mode Auto",
			o.Tune, o.Pinned, o.Queue, o.SplitBatch, o.Arena)
	}
	o = parse("-tune", "-pinned=false", "-queue", "in-order", "-split-batch", "-arena=false")
	if o.Tune != host.On || o.Pinned != host.Off || o.Queue != host.QueueInOrder ||
		o.SplitBatch != host.On || o.Arena != host.Off {
		t.Errorf("flags set: Tune %d, Pinned %d, Queue %d, SplitBatch %d, Arena %d", o.Tune, o.Pinned, o.Queue, o.SplitBatch, o.Arena)
	}
	if o = parse("-tune=false", "-pinned", "-queue", "out-of-order"); o.Tune != host.Off || o.Pinned != host.On || o.Queue != host.QueueOutOfOrder {
		t.Errorf("flags set: Tune %d, Pinned %d, Queue %d", o.Tune, o.Pinned, o.Queue)
	}
}
