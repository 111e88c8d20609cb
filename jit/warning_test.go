package jit

import (
	"reflect"
	"testing"
)

// TestGroupWarnings: each problem is given once, in first-seen order, naming up to four
// layers and counting the rest.
func TestGroupWarnings(t *testing.T) {
	var ws []Warning
	for _, l := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		ws = append(ws, Warning{Layer: l, Problem: "(Relu): A"})
	}
	ws = append(ws, Warning{Layer: "c1", Problem: "(Conv): B"}, Warning{Layer: "r7", Problem: "(Relu): A"})
	got := GroupWarnings(ws)
	want := []string{`layers "r1", "r2", "r3", "r4" and 3 more (Relu): A`, `layer "c1" (Conv): B`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GroupWarnings = %q, want %q", got, want)
	}
}
