package openvino

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// cycleError describes a cycle among the layers that the topological order could not
// place (done marks those it placed). Those layers are the cycle and every layer that
// reads from it; the error names the layers of one cycle, in the order data flows, and
// counts the others, so that the user sees which edge to look at.
func (r *reader) cycleError(done map[int]bool) error {
	// Each stuck layer reads from a stuck layer, so walking back from producer to
	// producer must come round to a layer already seen.
	var start *xmlLayer
	for i := range r.net.Layers {
		if l := &r.net.Layers[i]; !done[l.id] {
			start = l
			break
		}
	}
	seen := map[int]int{} // layer id → its place in path
	var path []*xmlLayer
	for l := start; l != nil; {
		if at, ok := seen[l.id]; ok {
			path = path[at:]
			break
		}
		seen[l.id] = len(path)
		path = append(path, l)
		var next *xmlLayer
		for _, p := range l.Inputs {
			if src, ok := r.from[portKey{l.id, p.id}]; ok && !done[src.layer] {
				next = r.byID[src.layer]
				break
			}
		}
		l = next
	}
	slices.Reverse(path)
	names := make([]string, 0, len(path)+1)
	for _, l := range path {
		names = append(names, l.desc())
	}
	names = append(names, path[0].desc())
	stuck := 0
	for i := range r.net.Layers {
		if !done[r.net.Layers[i].id] {
			stuck++
		}
	}
	msg := fmt.Sprintf("the edges form a cycle: %s", strings.Join(names, " → "))
	if more := stuck - len(path); more > 0 {
		msg += fmt.Sprintf(" (and %d layer(s) after it wait on it)", more)
	}
	return errors.New(msg)
}
