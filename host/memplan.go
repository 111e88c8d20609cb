package host

import "sort"

// memTensor is one activation tensor as the memory planner sees it: the step that writes
// it (-1: written before the first step, a graph input), the last step that reads it
// (math.MaxInt: kept to the end, a graph output), and its size in bytes. Aliases
// (Reshape, Flatten) are folded into their root before planning.
type memTensor struct {
	name     string
	def      int
	lastUse  int
	bytes    int
	pinned   bool // never shares its buffer (Options.KeepIntermediates)
	slot     int
	consumer []int // steps that read it, for write-after-read ordering
}

// memSlot is one device buffer shared by tensors whose lifetimes do not overlap.
type memSlot struct {
	bytes   int
	freeAt  int   // the step after which the slot's current tensor is dead
	tenants []int // indexes into the planned tensors, in order
}

// planMemory assigns each tensor a slot so that tensors alive at the same time never
// share one, reusing a dead tensor's slot where it fits (best fit; else the largest free
// slot grows; else a new slot). It returns the slot sizes.
func planMemory(ts []*memTensor) []*memSlot {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ts[idx[a]].def < ts[idx[b]].def })
	var slots []*memSlot
	for _, i := range idx {
		t := ts[i]
		best := -1
		if !t.pinned {
			for si, s := range slots {
				if s.freeAt >= t.def || len(s.tenants) > 0 && ts[s.tenants[0]].pinned {
					continue
				}
				switch {
				case best < 0:
					best = si
				case s.bytes >= t.bytes && (slots[best].bytes < t.bytes || s.bytes < slots[best].bytes):
					best = si // smallest slot that fits
				case slots[best].bytes < t.bytes && s.bytes > slots[best].bytes:
					best = si // none fits yet: the largest, to grow least
				}
			}
		}
		if best < 0 {
			slots = append(slots, &memSlot{})
			best = len(slots) - 1
		}
		s := slots[best]
		s.bytes = max(s.bytes, t.bytes)
		s.freeAt = t.lastUse
		s.tenants = append(s.tenants, i)
		t.slot = best
	}
	return slots
}

// peakLive is the largest total size of tensors alive at once: the lower bound any
// plan must reach.
func peakLive(ts []*memTensor, steps int) int {
	peak := 0
	for s := -1; s < steps; s++ {
		live := 0
		for _, t := range ts {
			if t.def <= s && s <= t.lastUse || t.def == s {
				live += t.bytes
			}
		}
		peak = max(peak, live)
	}
	return peak
}
