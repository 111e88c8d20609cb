package serve

import (
	"runtime"
	"sync"
)

// concat copies srcs one after another to the start of dst and returns the number of
// values copied. A batch of images is megabytes: above 1 MiB the copy is split among a
// few goroutines, as the host splits its own transfers (memory bandwidth, not one
// core, then bounds it).
func concat(dst []float32, srcs [][]float32) int {
	total := 0
	for _, s := range srcs {
		total += len(s)
	}
	shares := max(1, min((4*total)>>20, runtime.GOMAXPROCS(0), 8))
	if shares == 1 {
		at := 0
		for _, s := range srcs {
			at += copy(dst[at:], s)
		}
		return total
	}
	var wg sync.WaitGroup
	for k := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyRange(dst, srcs, total*k/shares, total*(k+1)/shares)
		}()
	}
	wg.Wait()
	return total
}

// copyRange copies values [lo, hi) of the concatenation of srcs to dst[lo:hi].
func copyRange(dst []float32, srcs [][]float32, lo, hi int) {
	at := 0
	for _, s := range srcs {
		end := at + len(s)
		if end > lo && at < hi {
			from, to := max(lo, at), min(hi, end)
			copy(dst[from:to], s[from-at:to-at])
		}
		if end >= hi {
			return
		}
		at = end
	}
}
