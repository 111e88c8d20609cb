package builtinkernels

import (
	"fmt"

	"github.com/clhost/clhost/cl"
)

// BufferRef is where a buffer argument's data lies: a device buffer and the element
// (float) offset in it at which the tensor begins. Activations share one arena buffer,
// each at its planned offset, and the kernels add the offset themselves: a sub-buffer
// per activation would do the same job, but NVIDIA's driver enqueues kernels on
// sub-buffers slowly (docs/runtime.md#offsets-not-sub-buffers).
type BufferRef struct {
	Buf *cl.Buffer
	Off int
}

// SetArgs binds a launch's arguments to k. Every buffer argument (input, output,
// scratch) takes two kernel parameters, the buffer and then an int element offset: every
// built-in kernel declares `__global T* name, int name_off` and starts with
// `name += name_off`.
func SetArgs(k *cl.Kernel, args []Arg, ins, outs, scratch []BufferRef) error {
	pick := func(list []BufferRef, i int, what string) (BufferRef, error) {
		if i < 0 || i >= len(list) || list[i].Buf == nil {
			return BufferRef{}, fmt.Errorf("%s %d is not bound", what, i)
		}
		return list[i], nil
	}
	pos := 0
	for ai, a := range args {
		var err error
		switch a.Kind {
		case ArgInput, ArgOutput, ArgScratch:
			var r BufferRef
			switch a.Kind {
			case ArgInput:
				r, err = pick(ins, a.Index, "input")
			case ArgOutput:
				r, err = pick(outs, a.Index, "output")
			default:
				r, err = pick(scratch, a.Index, "scratch buffer")
			}
			if err == nil && (r.Off < 0 || r.Off > 1<<31-1) {
				err = fmt.Errorf("element offset %d does not fit an int", r.Off)
			}
			if err == nil {
				err = k.SetArgBuffer(pos, r.Buf)
			}
			if err == nil {
				err = k.SetArgInt32(pos+1, int32(r.Off))
			}
			pos += 2
		case ArgInt:
			err = k.SetArgInt32(pos, a.Int)
			pos++
		case ArgFloat:
			err = k.SetArgFloat32(pos, a.Float)
			pos++
		case ArgLocal:
			err = k.SetArgLocal(pos, a.Bytes)
			pos++
		default:
			err = fmt.Errorf("unknown argument kind %d", a.Kind)
		}
		if err != nil {
			return fmt.Errorf("kernel %s argument %d: %w", k.Name, ai, err)
		}
	}
	return nil
}

// Refs wraps buffers as BufferRefs at offset 0.
func Refs(bufs []*cl.Buffer) []BufferRef {
	out := make([]BufferRef, len(bufs))
	for i, b := range bufs {
		out[i] = BufferRef{Buf: b}
	}
	return out
}
