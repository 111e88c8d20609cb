package main

import "testing"

// TestFitNs: profile gaps print in the unit that fits them.
func TestFitNs(t *testing.T) {
	for ns, want := range map[int64]string{
		642353700:  "642.4 ms",
		12300:      "12.3 µs",
		2500000000: "2.50 s",
		1000000:    "1.0 ms",
	} {
		if got := fitNs(ns); got != want {
			t.Errorf("fitNs(%d) = %q, want %q", ns, got, want)
		}
	}
}
