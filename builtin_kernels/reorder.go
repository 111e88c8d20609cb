package builtinkernels

import (
	"fmt"
	"strings"
)

// ReorderType is the internal layer the runtime inserts where a custom layer declares a
// memory format other than the one its producer wrote (or its consumer reads). Its
// attributes "from" and "to" name the formats; its input and output shapes are the
// tensor's logical B,F,Y,X dimensions (rank below 4 padded with trailing 1s).
const ReorderType = "clhost.Reorder"

func init() { Register(ReorderType, reorderOp{}) }

// formatOrder gives each format's dimensions from outermost to innermost in memory.
var formatOrder = map[string][4]byte{
	"BFYX": {'B', 'F', 'Y', 'X'},
	"BYXF": {'B', 'Y', 'X', 'F'},
	"YXFB": {'Y', 'X', 'F', 'B'},
	"FYXB": {'F', 'Y', 'X', 'B'},
}

// pitches gives the element distance between neighbours along B, F, Y and X of dims
// (B, F, Y, X) stored in format f, from the format's dimension order.
func pitches(f string, dims [4]int) [4]int {
	pos := map[byte]int{'B': 0, 'F': 1, 'Y': 2, 'X': 3}
	order := formatOrder[f]
	var p [4]int
	acc := 1
	for i := 3; i >= 0; i-- {
		d := pos[order[i]]
		p[d] = acc
		acc *= dims[d]
	}
	return p
}

type reorderOp struct{}

func (reorderOp) formats(p Params) (string, string, error) {
	p = paramsOr(p)
	var f [2]string
	for i, name := range []string{"from", "to"} {
		if !p.Has(name) {
			return "", "", fmt.Errorf("%s: the %s attribute is required (one of BFYX, BYXF, YXFB, FYXB)", ReorderType, name)
		}
		f[i] = strings.ToUpper(p.String(name, ""))
		if _, ok := formatOrder[f[i]]; !ok {
			return "", "", fmt.Errorf("%s: %s format %q: want one of BFYX, BYXF, YXFB, FYXB", ReorderType, name, p.String(name, ""))
		}
	}
	return f[0], f[1], nil
}

// bfyx pads a logical shape of rank 1 to 4 to B,F,Y,X with trailing 1s.
func bfyx(s []int) ([4]int, error) {
	d := [4]int{1, 1, 1, 1}
	if len(s) < 1 || len(s) > 4 {
		return d, fmt.Errorf("%s: shape %v: want rank 1 to 4 (B, F, Y, X)", ReorderType, s)
	}
	copy(d[:], s)
	return d, nil
}

func (o reorderOp) OutputShapes(p Params, in [][]int) ([][]int, error) {
	if err := checkCounts(ReorderType, in, nil, 1, 1, 0); err != nil {
		return nil, err
	}
	if _, _, err := o.formats(p); err != nil {
		return nil, err
	}
	if _, err := bfyx(in[0]); err != nil {
		return nil, err
	}
	return [][]int{cloneShape(in[0])}, nil
}

func (o reorderOp) Plan(p Params, in, out [][]int, dev DeviceInfo) (*Plan, error) {
	shapes, err := o.OutputShapes(p, in)
	if err != nil {
		return nil, err
	}
	if err := checkOut(ReorderType, out, shapes); err != nil {
		return nil, err
	}
	from, to, _ := o.formats(p)
	dims, _ := bfyx(in[0])
	src, err := kernelSource("reorder.cl")
	if err != nil {
		return nil, err
	}
	args := []Arg{{Kind: ArgInput, Index: 0}, {Kind: ArgOutput, Index: 0}}
	for _, group := range [][4]int{dims, pitches(from, dims), pitches(to, dims)} {
		args = append(args, intArgs(group[:]...)...)
	}
	gl, lo := launchSize([]int{numel(in[0])}, dev)
	return &Plan{
		Source:     src,
		Launches:   []Launch{{Kernel: "reorder", Global: gl, Local: lo, Args: args}},
		AliasInput: -1,
	}, nil
}

// Reference reads the source in its format's memory order into logical B,F,Y,X
// positions, then writes them out in the destination format's memory order: the
// definition of a layout, without the pitch arithmetic the kernel uses.
func (o reorderOp) Reference(p Params, in []*HostTensor, out [][]int) ([]*HostTensor, error) {
	shapes, want, err := referenceShapes(ReorderType, o, p, in, out)
	if err != nil {
		return nil, err
	}
	from, to, _ := o.formats(p)
	dims, _ := bfyx(shapes[0])
	size := map[byte]int{'B': dims[0], 'F': dims[1], 'Y': dims[2], 'X': dims[3]}
	logical := func(b, f, y, x int) int { return ((b*dims[1]+f)*dims[2]+y)*dims[3] + x }
	// walk calls fn for every element in the memory order of format f, with the
	// element's logical position.
	walk := func(f string, fn func(pos int)) {
		order := formatOrder[f]
		var idx [4]int
		var at = func() int {
			v := map[byte]int{}
			for k, c := range order {
				v[c] = idx[k]
			}
			return logical(v['B'], v['F'], v['Y'], v['X'])
		}
		for idx[0] = 0; idx[0] < size[order[0]]; idx[0]++ {
			for idx[1] = 0; idx[1] < size[order[1]]; idx[1]++ {
				for idx[2] = 0; idx[2] < size[order[2]]; idx[2]++ {
					for idx[3] = 0; idx[3] < size[order[3]]; idx[3]++ {
						fn(at())
					}
				}
			}
		}
	}
	vals := make([]float32, len(in[0].Data))
	k := 0
	walk(from, func(pos int) { vals[pos] = in[0].Data[k]; k++ })
	y := make([]float32, len(vals))
	k = 0
	walk(to, func(pos int) { y[k] = vals[pos]; k++ })
	return []*HostTensor{{Shape: cloneShape(want[0]), Data: y}}, nil
}
