package graph

import (
	"fmt"
	"testing"

	"github.com/clhost/clhost/model"
)

// fuzzBytes hands out the fuzzer's bytes one at a time, zeros once they run out.
type fuzzBytes []byte

func (b *fuzzBytes) next() int {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return int(v)
}

// small is a signed value around zero, where the interesting edge cases lie.
func (b *fuzzBytes) small() int64 { return int64(int8(b.next())) % 9 }

// FuzzOutputShapes builds a layer of a built-in type from the fuzzer's bytes: inputs of
// random small shapes (some omitted, some integer constants), outputs, and attributes from
// the ones the rules read. Shape inference must never panic, and whatever it accepts must
// have one shape per output and no negative dimension.
func FuzzOutputShapes(f *testing.F) {
	f.Add([]byte{0, 2, 1, 4, 1, 3, 8, 8, 1, 4, 4, 2, 3, 3, 1, 1, 0})
	f.Add([]byte{5, 3, 1, 3, 2, 6, 4, 0, 1, 2, 3, 0, 255, 1, 2, 2})
	f.Add([]byte{17, 2, 1, 2, 4, 3, 1, 1, 2, 0, 1, 0, 1, 2, 1, 3, 4, 2, 2})
	types := ShapeTypes()
	attrNames := []string{"strides", "pads", "dilations", "kernel_shape", "group", "axis", "ceil_mode", "auto_pad", "transA", "transB", "allowzero"}
	autoPads := []string{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "bogus"}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzBytes(data)
		l := &model.Layer{Name: "L", Type: types[r.next()%len(types)]}
		n := r.next() % 6
		in := make([][]int, n)
		consts := make([]*model.Tensor, n)
		for i := range n {
			if r.next()%8 == 0 {
				l.Inputs = append(l.Inputs, "")
				continue
			}
			l.Inputs = append(l.Inputs, fmt.Sprint("in", i))
			shape := make([]int, r.next()%6)
			for k := range shape {
				shape[k] = r.next() % 12
			}
			in[i] = shape
			if r.next()%4 == 0 && elements(shape) <= 16 {
				vals := make([]int64, elements(shape))
				for k := range vals {
					vals[k] = r.small()
				}
				consts[i] = &model.Tensor{Name: l.Inputs[i], Type: model.Int64, Shape: shape, Data: model.Int64Bytes(vals)}
			}
		}
		for k := range 1 + r.next()%3 {
			l.Outputs = append(l.Outputs, fmt.Sprint("out", k))
		}
		for range r.next() % 5 {
			name := attrNames[r.next()%len(attrNames)]
			switch r.next() % 3 {
			case 0:
				l.Attrs = append(l.Attrs, model.IntAttr(name, r.small()))
			case 1:
				vals := make([]int64, r.next()%7)
				for k := range vals {
					vals[k] = r.small()
				}
				l.Attrs = append(l.Attrs, model.IntsAttr(name, vals...))
			default:
				l.Attrs = append(l.Attrs, model.StringAttr(name, autoPads[r.next()%len(autoPads)]))
			}
		}
		out, err := OutputShapes(l, in, consts...)
		if err != nil {
			return
		}
		if len(out) != len(l.Outputs) {
			t.Fatalf("%+v: %d shapes for %d outputs", l, len(out), len(l.Outputs))
		}
		for _, s := range out {
			for _, d := range s {
				if d < 0 {
					t.Fatalf("%+v with inputs %v: negative dimension in %v", l, in, out)
				}
			}
		}
	})
}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
