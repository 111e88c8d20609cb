package host

import "unsafe"

// float32Bytes views float32 data as bytes without copying: inputs and outputs cross to
// the device on every inference, and a copy there would be pure overhead. The slice must
// not outlive data.
func float32Bytes(data []float32) []byte {
	if len(data) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 4*len(data))
}
