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
	tenants []int // indexes into the planned tensors, in the order they are written
}

// planMemory assigns each tensor a slot so that tensors alive at the same time never
// share one. Tensors are placed largest first, each into the first slot none of whose
// tenants is alive with it (greedy by size, as interval colouring): a slot's size is then
// that of its first, largest tenant, and the total stays close to the largest live set.
// Within a slot the tenants end up ordered by when they are written.
func planMemory(ts []*memTensor) []*memSlot {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ta, tb := ts[idx[a]], ts[idx[b]]
		if ta.bytes != tb.bytes {
			return ta.bytes > tb.bytes
		}
		return ta.def < tb.def
	})
	overlaps := func(a, b *memTensor) bool { return a.def <= b.lastUse && b.def <= a.lastUse }
	var slots []*memSlot
	for _, i := range idx {
		t := ts[i]
		best := -1
		if !t.pinned {
		search:
			for si, s := range slots {
				for _, j := range s.tenants {
					if ts[j].pinned || overlaps(ts[j], t) {
						continue search
					}
				}
				best = si
				break
			}
		}
		if best < 0 {
			slots = append(slots, &memSlot{})
			best = len(slots) - 1
		}
		s := slots[best]
		s.bytes = max(s.bytes, t.bytes)
		s.tenants = append(s.tenants, i)
		t.slot = best
	}
	for _, s := range slots {
		sort.SliceStable(s.tenants, func(a, b int) bool { return ts[s.tenants[a]].def < ts[s.tenants[b]].def })
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
