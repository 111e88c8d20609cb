package serve

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// The server's memory is bounded by the bytes its requests hold, not by what they
// claim: every request takes its bytes from one server-wide budget before the memory
// is allocated (its body before it is read, each decoded input before it is made, its
// outputs before it is queued) and gives them back once answered. A request beyond
// what is left gets 429 (RESOURCE_EXHAUSTED) at once rather than queueing memory the
// host may not have; one that needs more than the whole budget gets 413.

// budget is the server's bytes in flight and their limit.
type budget struct {
	limit int64
	used  atomic.Int64
	// receiving are the gRPC calls whose message is arriving (grpc_admit.go).
	receiving receiptSet
}

// full reports whether nothing is left, for refusing a gRPC call before its message
// is read.
func (b *budget) full() bool { return b.used.Load() >= b.limit }

// hold is what one request holds of the budget; its zero value holds nothing, and a
// nil budget never refuses (a server built without New, in tests of its parts).
type hold struct {
	b *budget
	n int64
}

// take adds n bytes to the request's hold, or refuses them.
func (h *hold) take(n int64) error {
	if n <= 0 || h.b == nil {
		return nil
	}
	if h.n+n > h.b.limit {
		return errorf(KindTooLarge, "the request needs %d bytes in memory, more than the server's whole budget of %d bytes for requests in flight (--max-inflight-bytes)", h.n+n, h.b.limit)
	}
	for {
		used := h.b.used.Load()
		if used+n > h.b.limit {
			return errorf(KindOverloaded, "the server is busy: requests in flight hold %d of its %d bytes, and this one needs %d more; retry later", used, h.b.limit, n)
		}
		if h.b.used.CompareAndSwap(used, used+n) {
			h.n += n
			return nil
		}
	}
}

// release gives back everything the request holds.
func (h *hold) release() {
	if h.b != nil && h.n > 0 {
		h.b.used.Add(-h.n)
		h.n = 0
	}
}

// DefaultMaxInflightBytes is Options.MaxInflightBytes' default: a quarter of the memory
// the process may use (the machine's, or its control group's limit when lower, as in a
// container), at least 256 MiB. The rest is left to the models, their engines (a CPU
// device's buffers are host memory) and everything else on the host.
func DefaultMaxInflightBytes() int64 {
	const floor = 256 << 20
	mem := memoryLimit("/proc/meminfo", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	if mem <= 0 {
		return 1 << 30
	}
	return max(mem/4, floor)
}

// memoryLimit is the memory available to this process in bytes: the machine's total
// (MemTotal of the meminfo file), or a lower limit of the cgroup files (v2's
// memory.max, v1's memory.limit_in_bytes); 0 when unknown.
func memoryLimit(meminfo string, cgroups ...string) int64 {
	total := memTotal(meminfo)
	for _, p := range cgroups {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max": no limit
		if err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal is MemTotal of a meminfo file in bytes, 0 when unknown.
func memTotal(meminfo string) int64 {
	b, err := os.ReadFile(meminfo)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
