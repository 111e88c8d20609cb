package builtinkernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/clhost/clhost/cl"
)

// buildLogged, where set (by this package's tests, which hold built-in kernels to
// compiling without warnings), sees the build log of every program RunPlan compiles.
var buildLogged func(plan *Plan, log string)

// sharedProgram, where set (by this package's tests), builds a plan's program or hands
// back the one it built before for the same context, source and options; fresh says it
// was built now. The program stays shared, so RunPlan does not release it. The tests run
// many cases whose programs are alike (the op harness builds math.cl 125 times), and each
// build on PoCL costs a preprocessing pass over its OpenCL headers even on a cache hit.
var sharedProgram func(ctx *cl.Context, source, options string) (prog *cl.Program, fresh bool, err error)

// testBuildOptions, where set (by this package's tests: see quickBuilds), is added to the
// options of every program RunPlan compiles.
var testBuildOptions string

// RunPlan runs one plan by itself: it builds the plan's program, uploads the inputs,
// runs the launches in order and reads back outputs of the given shapes. It is the
// yardstick path of the tests and of `clhost run --check`, not the runtime's: every
// call compiles and allocates afresh.
//
// Outputs are filled with NaN before the launches, so an element a kernel forgets to
// write shows up as a mismatch instead of as stale memory that happens to be right.
func RunPlan(ctx *cl.Context, q *cl.Queue, plan *Plan, inputs []*HostTensor, outShapes [][]int) ([]*HostTensor, error) {
	return RunPlanStored(ctx, q, plan, inputs, outShapes, PlanStorage(plan, len(inputs), len(outShapes)))
}

// RunPlanStored is RunPlan with each input and output held in the storage st gives:
// half values where st says so (a half plan's tensors, or those the host converts
// around a plan: ConvertAround), else float. The values go in and come out as float32.
func RunPlanStored(ctx *cl.Context, q *cl.Queue, plan *Plan, inputs []*HostTensor, outShapes [][]int, st Storage) ([]*HostTensor, error) {
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
		options := strings.TrimSpace(plan.Options + " " + testBuildOptions)
		fresh := true
		if sharedProgram != nil {
			prog, fresh, err = sharedProgram(ctx, plan.Source, options)
		} else {
			prog, err = ctx.BuildProgram(plan.Source, options)
		}
		if err != nil {
			return nil, fmt.Errorf("RunPlan: building the plan's program: %w", err)
		}
		if sharedProgram == nil {
			defer prog.Release()
		}
		if buildLogged != nil && fresh {
			buildLogged(plan, prog.Log)
		}
	}

	var release []*cl.Buffer
	defer func() {
		for _, b := range release {
			b.Release()
		}
	}()
	// Each tensor sits at its own nonzero offset in a larger buffer, NaN on both sides, as
	// activations sit in the network's arena: a kernel that ignores its offset parameter
	// reads or writes the wrong place, and one that writes out of bounds spoils a guard.
	nextOff := 0
	newRef := func(data []float32, half bool) (BufferRef, error) {
		nextOff += refGuard
		off := nextOff
		host := nanSlice(off + len(data) + refGuard)
		copy(host[off:], data)
		raw := floatsToBytes(host)
		if half {
			raw = floatsToHalfBytes(host)
		}
		b, err := ctx.NewBufferFrom(cl.MemReadWrite, raw)
		if err != nil {
			return BufferRef{}, err
		}
		release = append(release, b)
		return BufferRef{Buf: b, Off: off}, nil
	}

	inRefs := make([]BufferRef, len(inputs))
	for i, t := range inputs {
		r, err := newRef(t.Data, st.half(st.Inputs, i))
		if err != nil {
			return nil, fmt.Errorf("RunPlan: input %d: %w", i, err)
		}
		inRefs[i] = r
	}
	// layout gives, per output, how many elements it spans and where its images lie: a
	// plan with an OutputBatchStride writes output 0's images that far apart, and the
	// gaps between them must stay untouched.
	layout := func(i int) (span, per, stride int) {
		n := numel(outShapes[i])
		if span = plan.OutputSpan(i, outShapes[i]); span == n {
			return n, n, n
		}
		return span, n / outShapes[0][0], plan.OutputBatchStride
	}
	outRefs := make([]BufferRef, len(outShapes))
	for i := range outShapes {
		span, _, _ := layout(i)
		r, err := newRef(nanSlice(span), st.half(st.Outputs, i))
		if err != nil {
			return nil, fmt.Errorf("RunPlan: output %d: %w", i, err)
		}
		outRefs[i] = r
	}
	scratch := make([]BufferRef, len(plan.Scratch))
	for i, size := range plan.Scratch {
		// Sized in floats: at least the bytes asked for in either storage.
		r, err := newRef(make([]float32, (size+3)/4), false)
		if err != nil {
			return nil, fmt.Errorf("RunPlan: scratch %d: %w", i, err)
		}
		scratch[i] = r
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
			if err := SetArgs(k, l.Args, inRefs, outRefs, scratch); err != nil {
				return err
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
		span, per, stride := layout(i)
		r := outRefs[i]
		elem := 4
		if st.half(st.Outputs, i) {
			elem = 2
		}
		raw := make([]byte, elem*(r.Off+span+refGuard))
		if err := q.Read(r.Buf, 0, raw, nil); err != nil {
			return nil, fmt.Errorf("RunPlan: reading output %d: %w", i, err)
		}
		all := bytesToFloats(raw)
		if elem == 2 {
			all = halfBytesToFloats(raw)
		}
		inside := func(j int) bool { return j >= r.Off && j < r.Off+span && (j-r.Off)%stride < per }
		for j, v := range all {
			if !inside(j) && !math.IsNaN(float64(v)) {
				return nil, fmt.Errorf("RunPlan: output %d: a kernel wrote element %d outside the tensor's %d (at offset %d, %d per image every %d)", i, j-r.Off, span, r.Off, per, stride)
			}
		}
		data := make([]float32, 0, numel(s))
		for at := r.Off; at < r.Off+span; at += stride {
			data = append(data, all[at:at+per]...)
		}
		outs[i] = &HostTensor{Shape: cloneShape(s), Data: data}
	}
	return outs, nil
}

// refGuard is the NaN gap, in floats, that RunPlan leaves before and after each tensor:
// 256 bytes, a multiple of every vector a kernel loads, so offsets keep vectors aligned.
const refGuard = 64

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
