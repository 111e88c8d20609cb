package serve

import (
	"fmt"
	"strings"
	"testing"
)

// TestSharedMemoryNames: a region's name is bounded, an error naming an unknown region
// lists a few of those registered rather than all of them, and an offset and size that
// end past any object are told apart from a negative one.
func TestSharedMemoryNames(t *testing.T) {
	ts := startServer(t, []Source{reluSource()}, 1, Options{MaxBatch: 4, SharedMemory: true})
	r := newRegion(t, "names", 4096)
	if err := ts.shmRegister(strings.Repeat("n", maxShmName+1), r.Key, 0, 4096); err == nil || !strings.Contains(err.Error(), "more than 256") {
		t.Errorf("a name of %d bytes: %v, want refused", maxShmName+1, err)
	}
	for i := range 20 {
		if err := ts.shmRegister(fmt.Sprintf("%s%02d", strings.Repeat("n", maxShmName-2), i), r.Key, 0, 4096); err != nil {
			t.Fatal(err)
		}
	}
	use := ts.newShmUse()
	_, err := use.span("input \"image\"", shmRef{region: "other", size: 16})
	use.release(false)
	if err == nil || !strings.Contains(err.Error(), "and 12 more") || len(err.Error()) > 9*(maxShmName+4)+100 {
		t.Errorf("an unknown region among 20 registered: %.400v, want 8 names and a count", err)
	}
	if err := ts.shmRegister("far", r.Key, 1<<62, 1<<62); err == nil || !strings.Contains(err.Error(), "end past 2^62 bytes") {
		t.Errorf("offset and size 2^62: %v, want told they end past any object", err)
	}
	if err := ts.shmUnregister(""); err != nil {
		t.Fatal(err)
	}
}
