package host

import (
	"math"
	"sort"
)

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
// never overlap in memory: each at the lowest offset (a multiple of align) that is free
// of every placed tensor alive with it, or in the tightest such gap, in several orders
// (largest first, earliest first, longest-lived first, largest size × lifetime first;
// each also with the tensors of the largest live set ahead of the rest), keeping the
// placement whose arena is smallest. Largest first alone lands close to the largest
// live set on most networks, but not where the input lies beside the first big pair:
// MobileNetV2 at batch 1 with its expansions fused took 1.25× its largest live set that
// way, 1.19× with the other plain orders, and exactly it with the peak's tensors first.
// It returns the arena's size.
func planOffsets(ts []*memTensor, align int) int {
	align = max(align, 4)
	life := func(t *memTensor) int {
		if t.pinned || t.lastUse == math.MaxInt {
			return math.MaxInt / 4
		}
		return t.lastUse - t.def + 1
	}
	orders := []func(a, b *memTensor) bool{
		func(a, b *memTensor) bool { return a.bytes > b.bytes },
		func(a, b *memTensor) bool { return a.def < b.def },
		func(a, b *memTensor) bool { return life(a) > life(b) },
		func(a, b *memTensor) bool {
			return float64(a.bytes)*float64(life(a)) > float64(b.bytes)*float64(life(b))
		},
	}
	// The same orders with the tensors of the largest live set first: they must lie side
	// by side, and placed first they do, at the arena's start.
	peak := peakStep(ts)
	inPeak := func(t *memTensor) bool { return t.def <= peak && peak <= t.lastUse || t.def == peak }
	for _, less := range orders[:len(orders):len(orders)] {
		orders = append(orders, func(a, b *memTensor) bool {
			if inPeak(a) != inPeak(b) {
				return inPeak(a)
			}
			return less(a, b)
		})
	}
	best, bestTotal := []int(nil), 0
	for _, less := range orders {
		for _, bestFit := range []bool{false, true} {
			offsets, total := placeInOrder(ts, align, less, bestFit)
			if best == nil || total < bestTotal {
				best, bestTotal = offsets, total
			}
		}
	}
	for i, t := range ts {
		t.offset = best[i]
	}
	return bestTotal
}

// placeInOrder places the tensors one by one in the order less gives (ties: earlier
// definition, then list order), each at the lowest free offset or, with bestFit, in the
// smallest gap between tensors alive with it that holds it (else past them all), and
// returns the offsets (by index in ts) and the arena's size.
func placeInOrder(ts []*memTensor, align int, less func(a, b *memTensor) bool, bestFit bool) ([]int, int) {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ta, tb := ts[idx[a]], ts[idx[b]]
		if less(ta, tb) != less(tb, ta) {
			return less(ta, tb)
		}
		return ta.def < tb.def
	})
	offsets := make([]int, len(ts))
	var placed []int
	total := 0
	for _, i := range idx {
		t := ts[i]
		size := alignUp(t.bytes, align)
		var busy [][2]int
		for _, j := range placed {
			if overlapsInTime(ts[j], t) {
				busy = append(busy, [2]int{offsets[j], offsets[j] + alignUp(ts[j].bytes, align)})
			}
		}
		sort.Slice(busy, func(a, b int) bool { return busy[a][0] < busy[b][0] })
		off, fitOff, fitGap := 0, -1, 0
		for _, b := range busy {
			if off+size <= b[0] {
				if !bestFit {
					break // the lowest gap that holds it
				}
				if fitOff < 0 || b[0]-off < fitGap {
					fitOff, fitGap = off, b[0]-off
				}
			}
			off = max(off, b[1])
		}
		if fitOff >= 0 {
			off = fitOff
		}
		offsets[i] = off
		total = max(total, off+size)
		placed = append(placed, i)
	}
	return offsets, total
}

// peakStep is the step at which the most bytes are alive (the first of equals).
func peakStep(ts []*memTensor) int {
	steps := 0
	for _, t := range ts {
		if t.lastUse != math.MaxInt {
			steps = max(steps, t.lastUse+1)
		}
		steps = max(steps, t.def+1)
	}
	best, bestLive := -1, -1
	for s := -1; s < steps; s++ {
		if live := liveBytes(ts, s); live > bestLive {
			best, bestLive = s, live
		}
	}
	return best
}

// liveBytes is the total size of the tensors alive at step s.
func liveBytes(ts []*memTensor, s int) int {
	live := 0
	for _, t := range ts {
		if t.def <= s && s <= t.lastUse || t.def == s {
			live += t.bytes
		}
	}
	return live
}

// peakLive is the largest total size of tensors alive at once: the lower bound any
// plan must reach.
func peakLive(ts []*memTensor, steps int) int {
	peak := 0
	for s := -1; s < steps; s++ {
		peak = max(peak, liveBytes(ts, s))
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
// sub-buffers, which NVIDIA's driver handles slowly (docs/runtime.md#offsets-not-sub-buffers).
// Each tensor's offset is set to its slot's place in a notional arena (slots end to
// end), so sharesMemory and the reuse ordering see slots as they see arena ranges.
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
