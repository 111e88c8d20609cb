package jit

import (
	"fmt"
	"math"

	"github.com/clhost/clhost/customlayer"
)

// Layout is the memory layout of one tensor as the kernel sees it: sizes, paddings and
// pitches in B, F, Y, X order, all in elements. The host uses the same numbers to size
// and fill buffers, so there is one definition of where element (b, f, y, x) lives.
type Layout struct {
	Format  customlayer.Format // never ANY
	Dims    [4]int             // B, F, Y, X without padding
	Lower   [4]int             // padding before each dimension
	Upper   [4]int             // padding after each dimension
	Pitches [4]int             // elements between neighbours along B, F, Y, X
	Offset  int                // elements from the buffer start to element (0,0,0,0)
}

// Dims4 maps a shape of rank 0 to 4 onto B, F, Y, X, padding a lower rank with trailing
// 1s: [T,N,C] → B=T F=N Y=C X=1; [N,C] → N,C,1,1.
func Dims4(shape []int) ([4]int, error) {
	d := [4]int{1, 1, 1, 1}
	if len(shape) > 4 {
		return d, fmt.Errorf("rank %d shape %v: at most 4 dimensions are supported", len(shape), shape)
	}
	for i, v := range shape {
		if v < 1 {
			return d, fmt.Errorf("shape %v: dimension %d is %d, must be at least 1", shape, i, v)
		}
		if v > math.MaxInt32 {
			return d, fmt.Errorf("shape %v: dimension %d is too large", shape, i)
		}
		d[i] = v
	}
	return d, nil
}

// Pitches returns the pitches of a tensor of format f whose padded sizes (size + lower +
// upper padding) are p, as docs/custom-layers.md tabulates. ANY is treated as BFYX.
func Pitches(f customlayer.Format, p [4]int) [4]int {
	const b, fe, y, x = 0, 1, 2, 3
	switch f {
	case customlayer.BYXF:
		return [4]int{p[y] * p[x] * p[fe], 1, p[x] * p[fe], p[fe]}
	case customlayer.YXFB:
		return [4]int{1, p[b], p[x] * p[fe] * p[b], p[fe] * p[b]}
	case customlayer.FYXB:
		return [4]int{1, p[y] * p[x] * p[b], p[x] * p[b], p[b]}
	default:
		return [4]int{p[fe] * p[y] * p[x], p[y] * p[x], p[x], 1}
	}
}

// NewLayout computes the layout of a tensor of the given shape (rank ≤ 4) in format f
// (ANY means BFYX) with paddings in B, F, Y, X order (missing entries are 0). Every
// number must fit the C int the kernel sees.
func NewLayout(shape []int, f customlayer.Format, lower, upper []int) (Layout, error) {
	if f == customlayer.ANY {
		f = customlayer.BFYX
	}
	l := Layout{Format: f}
	var err error
	if l.Dims, err = Dims4(shape); err != nil {
		return l, err
	}
	for _, pad := range []struct {
		name string
		in   []int
		out  *[4]int
	}{{"lower", lower, &l.Lower}, {"upper", upper, &l.Upper}} {
		if len(pad.in) > 4 {
			return l, fmt.Errorf("%s padding %v has more than 4 entries", pad.name, pad.in)
		}
		for i, v := range pad.in {
			if v < 0 || v > math.MaxInt32 {
				return l, fmt.Errorf("%s padding %v: entry %d is out of range", pad.name, pad.in, i)
			}
			pad.out[i] = v
		}
	}
	// The padded element count bounds every pitch and the offset; check it in int64
	// first so no product can wrap.
	var padded [4]int
	total := int64(1)
	for i := range padded {
		padded[i] = l.Dims[i] + l.Lower[i] + l.Upper[i]
		total *= int64(padded[i])
		if padded[i] > math.MaxInt32 || total > math.MaxInt32 {
			return l, fmt.Errorf("shape %v with padding %v/%v: the tensor has more than %d elements, too many for int indexing", shape, lower, upper, math.MaxInt32)
		}
	}
	l.Pitches = Pitches(f, padded)
	for i := range l.Pitches {
		l.Offset += l.Pitches[i] * l.Lower[i]
	}
	return l, nil
}

// Padded returns the sizes including padding.
func (l Layout) Padded() [4]int {
	var p [4]int
	for i := range p {
		p[i] = l.Dims[i] + l.Lower[i] + l.Upper[i]
	}
	return p
}

// Size is the number of elements the buffer holds, padding included.
func (l Layout) Size() int {
	p := l.Padded()
	return p[0] * p[1] * p[2] * p[3]
}

// Index returns the buffer position of element (b, f, y, x) of the unpadded tensor.
func (l Layout) Index(b, f, y, x int) int {
	return l.Offset + b*l.Pitches[0] + f*l.Pitches[1] + y*l.Pitches[2] + x*l.Pitches[3]
}
