package host

import "unsafe"

// InputStaging returns the pinned host buffer the network transfers graph input name
// through, as its float32 values, or nil when its transfers go through no pinned
// buffers (CPU devices, Options.Pinned Off). Input Data that is this very slice crosses
// to the device from where it lies: a caller that packs a batch there saves a copy of
// the whole batch per inference. Any other Data for the input is copied into it at each
// inference, over what the caller left there.
func (n *Network) InputStaging(name string) []float32 {
	if n.stageIn == nil {
		return nil
	}
	for i, t := range n.inputs {
		if t.name == name {
			b := n.stageIn[i].Bytes
			if len(b) < 4 {
				return nil
			}
			return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
		}
	}
	return nil
}

// sameMemory says whether a and b start at the same address.
func sameMemory(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}
