package host

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/clhost/clhost/cl"
	"github.com/clhost/clhost/model"
)

// Before a checked inference every activation is filled with a NaN of a payload no
// arithmetic yields, so that an element no kernel writes cannot pass for a value: memory
// left as it was reads alike (often zero) on both devices of --check-device.

// unwrittenBits is the float32 the activations hold before a checked inference, and
// unwrittenHalfBits the half that fp16's half tensors hold (read back widened, as
// unwrittenWidened).
const (
	unwrittenBits     = 0x7fc0dead
	unwrittenHalfBits = 0x7ead
)

var unwrittenWidened = math.Float32bits(model.HalfToFloat32(unwrittenHalfBits))

// unwritten says whether v still holds the fill pattern.
func unwritten(v float32) bool {
	b := math.Float32bits(v)
	return b == unwrittenBits || b == unwrittenWidened
}

// fillActivations fills every tensor a layer writes (outputs and intermediates, not graph
// inputs or constants) with unwrittenBits and waits for the fills.
func (n *Network) fillActivations() error {
	pattern := binary.LittleEndian.AppendUint32(nil, unwrittenBits)
	halfPattern := binary.LittleEndian.AppendUint16(nil, unwrittenHalfBits)
	var evs []*cl.Event
	defer func() {
		for _, ev := range evs {
			ev.Release()
		}
	}()
	for _, t := range n.tensors {
		if t.buf == nil || t.ready < 0 || n.isConstant(t.name) || elements(t.shape) == 0 {
			continue
		}
		pat := pattern
		if t.half {
			pat = halfPattern
		}
		ev, err := n.engine.queue.Fill(t.buf, pat, t.byteOff(), len(pat)*elements(t.shape), nil)
		if err != nil {
			return fmt.Errorf("filling %q before the check: %w", t.name, err)
		}
		evs = append(evs, ev)
	}
	return n.engine.queue.Finish()
}
