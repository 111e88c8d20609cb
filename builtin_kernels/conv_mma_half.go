package builtinkernels

// mmaPlanHalf is the tensor-core plan of a convolution whose tensors are stored as half
// (fp16 storage), where mmaWanted; ok is false elsewhere. conv_mma.cl reads and writes
// every tensor through the storage macros, its packed weights and partial sums stay its own.
func mmaPlanHalf(g convGeom, dev DeviceInfo) (*Plan, bool, error) {
	if !mmaWanted(g, dev) {
		return nil, false, nil
	}
	g.half = true
	plan, err := mmaPlan(g, false, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan), true, nil
}
