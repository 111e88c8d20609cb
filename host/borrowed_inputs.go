package host

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/clhost/clhost/cl"
)

// Borrowed inputs: on a CPU device the first layers read each graph input straight from
// the caller's memory. At every inference the input's data is wrapped in a buffer of its
// own (CL_MEM_USE_HOST_PTR, which PoCL's CPU devices use where it lies) and every kernel
// argument that takes the input is bound to it for the launches' enqueue. Writing the
// input into the network's memory first delays the first kernel by the whole copy, and
// measured slower on every network (docs/runtime.md#borrowed-inputs).
//
// Until an inference binds the caller's memory, those arguments hold a stand-in buffer
// of the input's own (a few bytes, not the input's size): the memory plan leaves such
// inputs out, so the network holds no copy of them. Data that is not aligned for the
// kernels' vector loads (borrowAlign) is copied into an aligned staging slice first,
// allocated at the first such inference and kept.

// borrowedInput is a graph input that kernels read from the caller's memory.
type borrowedInput struct {
	standIn *cl.Buffer
	// args are the launches' kernel arguments bound to the input: each kernel with the
	// argument indexes that take the input's buffer.
	args []kernelArgs
	// staging holds the input when the caller's data is not aligned.
	staging []float32
}

// kernelArgs are arguments of one kernel.
type kernelArgs struct {
	k   *cl.Kernel
	pos []int
}

// borrowAlign is the alignment, in bytes, at which the caller's data is read in place:
// the arena's (a float16 vector), which the kernels' vector loads may assume.
const borrowAlign = 64

// borrowsInputs says whether networks read graph inputs from the caller's memory: on
// CPU devices, unless transfers go through pinned buffers, inputs are to be copied
// (Options.CopyInputs), or tensors are kept for reading back.
func (e *Engine) borrowsInputs() bool {
	return e.device.IsCPU() && !e.pinned() && !e.opts.CopyInputs &&
		!e.opts.KeepIntermediates && e.opts.DumpTensors == ""
}

// planBorrowedInputs picks the graph inputs kernels will read from the caller's memory:
// all of them when the engine borrows inputs, but those that are also graph outputs
// (themselves or through an alias), whose reads after the inference need the network's
// own copy, and those keep says to keep. aliasRoot maps a tensor to the one whose memory
// it views.
func (n *Network) planBorrowedInputs(aliasRoot func(string) string, keep func(string) bool) {
	if !n.engine.borrowsInputs() {
		return
	}
	for _, name := range n.Model.Inputs {
		if keep(name) || slices.ContainsFunc(n.Model.Outputs, func(out string) bool { return aliasRoot(out) == name }) {
			continue
		}
		if n.borrowed == nil {
			n.borrowed = map[string]*borrowedInput{}
		}
		n.borrowed[name] = &borrowedInput{}
	}
}

// bindBorrowedInput gives a borrowed graph input its stand-in buffer.
func (n *Network) bindBorrowedInput(name string, in *borrowedInput) (*deviceTensor, error) {
	t := n.Model.Tensor(name)
	b, err := n.engine.ctx.NewBuffer(cl.MemReadOnly, borrowAlign)
	if err != nil {
		return nil, fmt.Errorf("graph input %q: stand-in buffer: %w", name, err)
	}
	n.owned = append(n.owned, b)
	in.standIn = b
	dt := &deviceTensor{name: name, shape: append([]int(nil), t.Shape...), buf: b, ready: -1}
	n.tensors[name] = dt
	return dt, nil
}

// findBorrowedArgs records, for every borrowed input, the arguments of the inference's
// launches bound to its stand-in.
func (n *Network) findBorrowedArgs() {
	for _, in := range n.borrowed {
		for _, s := range n.steps {
			for _, la := range s.launches {
				if pos := la.kernel.ArgsBoundTo(in.standIn); len(pos) > 0 {
					in.args = append(in.args, kernelArgs{la.kernel, pos})
				}
			}
		}
	}
}

// bindCallerInputs binds the borrowed inputs' arguments to buffers over the caller's
// data (or its aligned copy), pinned with p. It returns the buffers, which the caller
// releases once the inference has completed, after unbind.
func (n *Network) bindCallerInputs(inputs map[string]*Tensor, p *runtime.Pinner) ([]*cl.Buffer, error) {
	var wrapped []*cl.Buffer
	for _, t := range n.inputs {
		in := n.borrowed[t.name]
		if in == nil {
			continue
		}
		data := inputs[t.name].Data
		if uintptr(unsafe.Pointer(&data[0]))%borrowAlign != 0 {
			if in.staging == nil {
				in.staging = alignedFloats(len(data), borrowAlign)
			}
			src, dst := float32Bytes(data), float32Bytes(in.staging)
			_ = inShares(len(src), func(lo, hi int) error {
				copy(dst[lo:hi], src[lo:hi])
				return nil
			})
			data = in.staging
		}
		b, err := n.engine.ctx.NewBufferOver(cl.MemReadOnly, float32Bytes(data), p)
		if err != nil {
			return wrapped, fmt.Errorf("input %q: %w", t.name, err)
		}
		wrapped = append(wrapped, b)
		if err := in.bind(b); err != nil {
			return wrapped, fmt.Errorf("input %q: %w", t.name, err)
		}
	}
	return wrapped, nil
}

// unbindCallerInputs binds the borrowed inputs' arguments back to their stand-ins, so
// no kernel keeps the caller's memory past the inference. Enqueued launches keep the
// arguments they were enqueued with.
func (n *Network) unbindCallerInputs() error {
	for _, in := range n.borrowed {
		if err := in.bind(in.standIn); err != nil {
			return err
		}
	}
	return nil
}

func (in *borrowedInput) bind(b *cl.Buffer) error {
	for _, ka := range in.args {
		for _, pos := range ka.pos {
			if err := ka.k.SetArgBuffer(pos, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// alignedFloats returns n zeroed floats whose first lies at a multiple of align bytes.
func alignedFloats(n, align int) []float32 {
	extra := align / 4
	raw := make([]float32, n+extra)
	skip := (align - int(uintptr(unsafe.Pointer(&raw[0]))%uintptr(align))) % align / 4
	return raw[skip : skip+n : skip+n]
}
