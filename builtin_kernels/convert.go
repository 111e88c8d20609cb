package builtinkernels

import (
	"fmt"
	"slices"
	"strings"
)

// convertSource converts between float and half storage, one element per work-item. It
// is appended to the program of a plan that converts around its kernels (ConvertAround);
// the names cannot clash with a built-in kernel's.
const convertSource = `
__kernel void clhost_half_to_float(__global const half* restrict x, int x_off, __global float* restrict y, int y_off, int n)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i < n) {
        y[i] = vload_half(i, x);
    }
}

__kernel void clhost_float_to_half(__global const float* restrict x, int x_off, __global half* restrict y, int y_off, int n)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i < n) {
        vstore_half(x[i], i, y);
    }
}
`

// Conversion names a tensor of a layer that the host stores otherwise than the layer's
// plan reads or writes it: input or output Index of Elements values.
type Conversion struct {
	Index    int
	Elements int
}

// ConvertAround rewrites plan so that the inputs in ins, which the host stores in the
// other storage than the plan's (half for a float plan, float for a half one), are
// converted into scratch buffers before its launches, and the outputs in outs are
// written into scratch buffers and converted into the host's storage after them, as
// OpenVINO inserts reorders. half is the plan's own storage. The kernels themselves run
// unchanged; the conversions are launches of the same program, so they run in the
// layer's step and their buffers are planned with its scratch memory.
func ConvertAround(plan *Plan, half bool, ins, outs []Conversion, dev DeviceInfo) (*Plan, error) {
	if len(ins) == 0 && len(outs) == 0 {
		return plan, nil
	}
	if plan.AliasInput >= 0 {
		return nil, fmt.Errorf("a plan that aliases input %d takes no conversions", plan.AliasInput)
	}
	if plan.OutputBatchStride != 0 && len(outs) > 0 {
		return nil, fmt.Errorf("a plan writing its output %d elements apart per image takes no conversions of it", plan.OutputBatchStride)
	}
	q := *plan
	q.Scratch = slices.Clone(plan.Scratch)
	// The copies are in the plan's storage: its inputs converted from the host's, its
	// outputs converted to it.
	elem, before, after := 2, "clhost_float_to_half", "clhost_half_to_float"
	if !half {
		elem, before, after = 4, "clhost_half_to_float", "clhost_float_to_half"
	}
	conv := func(kernel string, from, to Arg, n int) Launch {
		gl, lo := launchSize([]int{n}, dev)
		return Launch{Kernel: kernel, Global: gl, Local: lo, Args: []Arg{from, to, {Kind: ArgInt, Int: int32(n)}}}
	}
	inAt, outAt := map[int]int{}, map[int]int{}
	var pre, post []Launch
	for _, c := range ins {
		k := len(q.Scratch)
		q.Scratch = append(q.Scratch, elem*c.Elements)
		inAt[c.Index] = k
		pre = append(pre, conv(before, Arg{Kind: ArgInput, Index: c.Index}, Arg{Kind: ArgScratch, Index: k}, c.Elements))
	}
	for _, c := range outs {
		k := len(q.Scratch)
		q.Scratch = append(q.Scratch, elem*c.Elements)
		outAt[c.Index] = k
		post = append(post, conv(after, Arg{Kind: ArgScratch, Index: k}, Arg{Kind: ArgOutput, Index: c.Index}, c.Elements))
	}
	remap := func(ls []Launch) ([]Launch, bool) {
		out := make([]Launch, len(ls))
		readsConverted := false
		for i, l := range ls {
			l.Args = slices.Clone(l.Args)
			for j, a := range l.Args {
				switch a.Kind {
				case ArgInput:
					if k, ok := inAt[a.Index]; ok {
						l.Args[j] = Arg{Kind: ArgScratch, Index: k}
						readsConverted = true
					}
				case ArgOutput:
					if k, ok := outAt[a.Index]; ok {
						l.Args[j] = Arg{Kind: ArgScratch, Index: k}
					}
				}
			}
			out[i] = l
		}
		return out, readsConverted
	}
	setup, setupReads := remap(plan.Setup)
	main, _ := remap(plan.Launches)
	if setupReads {
		// A setup launch that reads a converted input must come after its conversion.
		q.Setup = append(pre, setup...)
		q.Launches = append(main, post...)
	} else {
		q.Setup = setup
		q.Launches = append(append(pre, main...), post...)
	}
	if !strings.Contains(plan.Source, convertSource) {
		q.Source = plan.Source + "\n" + convertSource
	}
	return &q, nil
}
