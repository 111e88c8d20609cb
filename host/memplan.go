package host

import "sort"

// memTensor is one activation tensor as the memory planner sees it: the step that writes
// it (-1: written before the first step, a graph input), the last step that reads it
// (math.MaxInt: kept to the end, a graph output), and its size in bytes. Aliases
// (Reshape, Flatten) are folded into their root before planning.
type memTensor struct {
	name    string
	def     int
	lastUse int
	bytes   int
	pinned  bool // never shares memory (Options.KeepIntermediates)
	custom  bool // a custom kernel reads or writes it: it needs a buffer of its own start
	// writers are the steps that write it when several do (a Concat's output written in
	// place by its inputs' producers); empty means def alone.
	writers  []int
	offset   int // where the plan puts it in the arena
	consumer []int
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

func overlapsInTime(a, b *memTensor) bool {
	return a.pinned || b.pinned || a.def <= b.lastUse && b.def <= a.lastUse
}

// planOffsets places every tensor in one arena so that tensors alive at the same time
// never overlap in memory: largest first, each at the lowest offset (a multiple of
// align) that is free of every placed tensor alive with it — greedy by size, which lands
// close to the largest live set. It returns the arena's size.
func planOffsets(ts []*memTensor, align int) int {
	align = max(align, 4)
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
	var placed []*memTensor
	total := 0
	for _, i := range idx {
		t := ts[i]
		size := alignUp(t.bytes, align)
		var busy [][2]int
		for _, p := range placed {
			if overlapsInTime(p, t) {
				busy = append(busy, [2]int{p.offset, p.offset + alignUp(p.bytes, align)})
			}
		}
		sort.Slice(busy, func(a, b int) bool { return busy[a][0] < busy[b][0] })
		off := 0
		for _, b := range busy {
			if off+size <= b[0] {
				break
			}
			off = max(off, b[1])
		}
		t.offset = off
		total = max(total, off+size)
		placed = append(placed, t)
	}
	return total
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

// sharesMemory reports whether two tensors' ranges of the arena overlap.
func sharesMemory(a, b *memTensor, align int) bool {
	return a.offset < b.offset+alignUp(b.bytes, align) && b.offset < a.offset+alignUp(a.bytes, align)
}

// planSlots groups the tensors into slots, each a buffer of its own, so that tensors
// sharing a slot are never alive at the same time: largest first, each into the
// smallest slot free for its whole lifetime, else a new slot of its size. Slots cost
// more memory than one arena (a slot is as large as its largest tensor) but need no
// sub-buffers, which NVIDIA's driver handles slowly: with MobileNetV2's activations as
// sub-buffers of one arena, the host's enqueues lagged the device by up to 200 µs a
// layer. Each tensor's offset is set to its slot's place in a notional arena (slots end
// to end), so sharesMemory and the reuse ordering see slots as they see arena ranges.
// It returns the slots' sizes.
func planSlots(ts []*memTensor, align int) []int {
	align = max(align, 4)
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ts[idx[a]].bytes > ts[idx[b]].bytes })
	var sizes []int
	var members [][]*memTensor
	for _, i := range idx {
		t := ts[i]
		best := -1
		for s, ms := range members {
			if best >= 0 && sizes[s] >= sizes[best] {
				continue
			}
			free := !t.pinned
			for _, m := range ms {
				if m.pinned || overlapsInTime(m, t) {
					free = false
					break
				}
			}
			if free {
				best = s
			}
		}
		if best < 0 {
			best = len(sizes)
			sizes = append(sizes, alignUp(t.bytes, align))
			members = append(members, nil)
		}
		members[best] = append(members[best], t)
	}
	base := 0
	for s, ms := range members {
		for _, m := range ms {
			m.offset = base
		}
		base += sizes[s]
	}
	return sizes
}
