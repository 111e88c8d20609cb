package host

import (
	"math"
	"testing"
)

// A chain a→b→c→d of equal tensors needs two buffers, and the plan never gives two
// tensors alive at the same step one slot.
func TestPlanMemoryChain(t *testing.T) {
	ts := []*memTensor{
		{name: "in", def: -1, lastUse: 0, bytes: 100, pinned: true},
		{name: "a", def: 0, lastUse: 1, bytes: 100},
		{name: "b", def: 1, lastUse: 2, bytes: 100},
		{name: "c", def: 2, lastUse: 3, bytes: 100},
		{name: "out", def: 3, lastUse: math.MaxInt, bytes: 100, pinned: true},
	}
	slots := planMemory(ts)
	total := 0
	for _, s := range slots {
		total += s.bytes
	}
	// in and out are pinned (100 + 100); a, b, c fit in two slots.
	if total != 400 {
		t.Errorf("planned %d bytes in %d slots, want 400", total, len(slots))
	}
	checkNoOverlap(t, ts)
	if ts[1].slot != ts[3].slot {
		t.Errorf("a and c should share a slot: %d vs %d", ts[1].slot, ts[3].slot)
	}
}

func TestPlanMemoryGrowsAndFits(t *testing.T) {
	ts := []*memTensor{
		{name: "x", def: 0, lastUse: 1, bytes: 400},
		{name: "y", def: 1, lastUse: 2, bytes: 100},
		{name: "z", def: 2, lastUse: 3, bytes: 300}, // x is dead: reuses its 400
		{name: "w", def: 3, lastUse: 4, bytes: 50},  // y's 100 fits best
	}
	slots := planMemory(ts)
	if len(slots) != 2 || ts[2].slot != ts[0].slot || ts[3].slot != ts[1].slot {
		t.Errorf("slots %d, assignment x%d y%d z%d w%d", len(slots), ts[0].slot, ts[1].slot, ts[2].slot, ts[3].slot)
	}
	if p := peakLive(ts, 5); p != 500 {
		t.Errorf("peak live %d, want 500", p)
	}
	checkNoOverlap(t, ts)
}

func checkNoOverlap(t *testing.T, ts []*memTensor) {
	t.Helper()
	for i, a := range ts {
		for _, b := range ts[i+1:] {
			if a.slot == b.slot && a.def <= b.lastUse && b.def <= a.lastUse {
				t.Errorf("%s [%d,%d] and %s [%d,%d] share slot %d while both alive", a.name, a.def, a.lastUse, b.name, b.def, b.lastUse, a.slot)
			}
		}
	}
}
