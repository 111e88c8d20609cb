package builtinkernels

// mmaPlanHalf is the tensor-core plan of an implicit GEMM (a convolution, or a fully
// connected layer as gemmAsConv sees it, wt for weights K × M) whose tensors are stored
// as half (fp16 storage), where mmaWanted; ok is false elsewhere. conv_mma.cl reads and
// writes every tensor through the storage macros; its packed weights and partial sums
// stay its own.
func mmaPlanHalf(g convGeom, wt bool, dev DeviceInfo) (*Plan, bool, error) {
	if !mmaWanted(g, dev) {
		return nil, false, nil
	}
	g.half = true
	plan, err := mmaPlan(g, wt, dev)
	if err != nil {
		return nil, false, err
	}
	return halfPlan(plan, dev), true, nil
}
