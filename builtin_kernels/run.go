package builtinkernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"clhost/host/cl"
)

// RunPlan runs one plan by itself: it builds the plan's program, uploads the inputs,
// runs the launches in order and reads back outputs of the given shapes. It is the
// yardstick path of the tests and of `clhost run --check`, not the runtime's: every
// call compiles and allocates afresh.
//
// Outputs are filled with NaN before the launches, so an element a kernel forgets to
// write shows up as a mismatch instead of as stale memory that happens to be right.
func RunPlan(ctx *cl.Context, q *cl.Queue, plan *Plan, inputs []*HostTensor, outShapes [][]int) ([]*HostTensor, error) {
	if ctx == nil || q == nil {
		return nil, errors.New("RunPlan: nil context or queue")
	}
	if plan == nil {
		return nil, errors.New("RunPlan: nil plan")
	}
	for i, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("RunPlan: input %d is nil", i)
		}
		if len(t.Data) != numel(t.Shape) {
			return nil, fmt.Errorf("RunPlan: input %d has %d values for shape %v", i, len(t.Data), t.Shape)
		}
	}
	if plan.AliasInput >= 0 {
		return aliasOutputs(plan.AliasInput, inputs, outShapes)
	}

	var prog *cl.Program
	if len(plan.Launches)+len(plan.Setup) > 0 {
		var err error
		if prog, err = ctx.BuildProgram(plan.Source, plan.Options); err != nil {
			return nil, fmt.Errorf("RunPlan: building the plan's program: %w", err)
		}
		defer prog.Release()
	}

	var release []*cl.Buffer
	defer func() {
		for _, b := range release {
			b.Release()
		}
	}()
	newBuf := func(size int) (*cl.Buffer, error) {
		// OpenCL refuses empty buffers; a kernel never reads past its shapes anyway.
		b, err := ctx.NewBuffer(cl.MemReadWrite, max(size, 4))
		if err == nil {
			release = append(release, b)
		}
		return b, err
	}

	inBufs := make([]*cl.Buffer, len(inputs))
	for i, t := range inputs {
		b, err := newBuf(4 * len(t.Data))
		if err != nil {
			return nil, fmt.Errorf("RunPlan: input %d: %w", i, err)
		}
		if len(t.Data) > 0 {
			if err := q.Write(b, 0, floatsToBytes(t.Data), nil); err != nil {
				return nil, fmt.Errorf("RunPlan: input %d: %w", i, err)
			}
		}
		inBufs[i] = b
	}
	outBufs := make([]*cl.Buffer, len(outShapes))
	for i, s := range outShapes {
		n := numel(s)
		b, err := newBuf(4 * n)
		if err != nil {
			return nil, fmt.Errorf("RunPlan: output %d: %w", i, err)
		}
		if n > 0 {
			if err := q.Write(b, 0, floatsToBytes(nanSlice(n)), nil); err != nil {
				return nil, fmt.Errorf("RunPlan: output %d: %w", i, err)
			}
		}
		outBufs[i] = b
	}
	scratch := make([]*cl.Buffer, len(plan.Scratch))
	for i, size := range plan.Scratch {
		b, err := newBuf(size)
		if err != nil {
			return nil, fmt.Errorf("RunPlan: scratch %d: %w", i, err)
		}
		scratch[i] = b
	}

	pick := func(kind string, list []*cl.Buffer, i int) (*cl.Buffer, error) {
		if i < 0 || i >= len(list) {
			return nil, fmt.Errorf("%s %d does not exist (%d given)", kind, i, len(list))
		}
		return list[i], nil
	}
	var prev *cl.Event
	defer func() { prev.Release() }()
	for li, l := range append(append([]Launch(nil), plan.Setup...), plan.Launches...) {
		err := func() error {
			k, err := prog.Kernel(l.Kernel)
			if err != nil {
				return err
			}
			defer k.Release()
			for ai, a := range l.Args {
				var err error
				switch a.Kind {
				case ArgInput, ArgOutput, ArgScratch:
					var b *cl.Buffer
					switch a.Kind {
					case ArgInput:
						b, err = pick("input", inBufs, a.Index)
					case ArgOutput:
						b, err = pick("output", outBufs, a.Index)
					default:
						b, err = pick("scratch buffer", scratch, a.Index)
					}
					if err == nil {
						err = k.SetArgBuffer(ai, b)
					}
				case ArgInt:
					err = k.SetArgInt32(ai, a.Int)
				case ArgFloat:
					err = k.SetArgFloat32(ai, a.Float)
				case ArgLocal:
					err = k.SetArgLocal(ai, a.Bytes)
				default:
					err = fmt.Errorf("unknown argument kind %d", a.Kind)
				}
				if err != nil {
					return fmt.Errorf("argument %d: %w", ai, err)
				}
			}
			var wait []*cl.Event
			if prev != nil {
				wait = []*cl.Event{prev}
			}
			ev, err := q.EnqueueNDRange(k, l.Global, l.Local, wait)
			if err != nil {
				return err
			}
			prev.Release()
			prev = ev
			return nil
		}()
		if err != nil {
			return nil, fmt.Errorf("RunPlan: launch %d (%s): %w", li, l.Kernel, err)
		}
	}
	if prev != nil {
		if err := prev.Wait(); err != nil {
			return nil, fmt.Errorf("RunPlan: waiting for the last launch: %w", err)
		}
	}

	outs := make([]*HostTensor, len(outShapes))
	for i, s := range outShapes {
		n := numel(s)
		raw := make([]byte, 4*n)
		if n > 0 {
			if err := q.Read(outBufs[i], 0, raw, nil); err != nil {
				return nil, fmt.Errorf("RunPlan: reading output %d: %w", i, err)
			}
		}
		outs[i] = &HostTensor{Shape: cloneShape(s), Data: bytesToFloats(raw)}
	}
	return outs, nil
}

// aliasOutputs is a launch-free plan's result: the aliased input's values in the output
// shape.
func aliasOutputs(idx int, inputs []*HostTensor, outShapes [][]int) ([]*HostTensor, error) {
	if idx >= len(inputs) {
		return nil, fmt.Errorf("RunPlan: the plan aliases input %d, but %d inputs are given", idx, len(inputs))
	}
	if len(outShapes) != 1 {
		return nil, fmt.Errorf("RunPlan: an aliasing plan has one output, %d shapes given", len(outShapes))
	}
	in := inputs[idx]
	if numel(outShapes[0]) != len(in.Data) {
		return nil, fmt.Errorf("RunPlan: output shape %v does not hold the %d values of aliased input %d", outShapes[0], len(in.Data), idx)
	}
	return []*HostTensor{{Shape: cloneShape(outShapes[0]), Data: append([]float32(nil), in.Data...)}}, nil
}

func nanSlice(n int) []float32 {
	s := make([]float32, n)
	nan := float32(math.NaN())
	for i := range s {
		s[i] = nan
	}
	return s
}

func floatsToBytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func bytesToFloats(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}
