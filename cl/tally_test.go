package cl

import "testing"

// TestDropTallies: clang's bare tallies leave the log; the messages they count stay.
func TestDropTallies(t *testing.T) {
	in := "k.cl:3:5: warning: unused variable 'x'\n1 warning generated.\nk.cl:4:1: error: boom\n2 warnings and 1 error generated.\n3 errors generated."
	want := "k.cl:3:5: warning: unused variable 'x'\nk.cl:4:1: error: boom"
	if got := dropTallies(in); got != want {
		t.Errorf("dropTallies = %q, want %q", got, want)
	}
}
