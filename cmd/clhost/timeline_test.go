package main

import (
	"strings"
	"testing"

	"github.com/clhost/clhost/host"
)

// TestPrintTimeline: the span, the busy share and the largest idle gaps, with whether
// the host enqueued the next layer late, come from the layers' timestamps.
func TestPrintTimeline(t *testing.T) {
	prof := []host.LayerTime{
		{Layer: "a", DeviceNs: 10000, QueuedNs: 0, StartNs: 1000, EndNs: 11000},
		{Layer: "b", DeviceNs: 5000, QueuedNs: 2000, StartNs: 13000, EndNs: 18000},  // 2 µs idle, queued early
		{Layer: "c", DeviceNs: 5000, QueuedNs: 26000, StartNs: 28000, EndNs: 33000}, // 10 µs idle, queued 8 µs late
	}
	var b strings.Builder
	printTimeline(&b, prof, 20000)
	out := b.String()
	for _, want := range []string{
		"device span 0.032 ms, busy 0.020 ms (62%)",
		"idle 10.0 µs before c (enqueued 8.0 µs after the device went idle)",
		"idle 2.0 µs before b (queued in time: the device's own delay",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "before c") > strings.Index(out, "before b") {
		t.Errorf("gaps not largest first:\n%s", out)
	}
	b.Reset()
	printTimeline(&b, []host.LayerTime{{Layer: "x", DeviceNs: 5}}, 5)
	if b.Len() != 0 {
		t.Errorf("no timestamps, yet printed %q", b.String())
	}
}
