package onnx

import (
	"slices"
	"strings"

	"github.com/clhost/clhost/model"
)

// Einsum becomes layers clhost has kernels for. Attention written with torch.einsum
// (MaxViT's window and grid attention: "bghid,bghjd->bghij") exports as Einsum; a MatMul
// with a Transpose of one operand is the same product. Sums, transposes and products of
// operands of the same letters become ReduceSum, Transpose and Mul, and the diagonal of
// the last two axes a product with the identity summed. Other equations stay Einsum
// layers.

// rewriteEinsum replaces each default-domain Einsum whose equation reduceForm,
// diagonalForm or matmulForm accepts by the layers it means.
func (im *importer) rewriteEinsum() {
	var out []model.Layer
	for _, l := range im.layers {
		if l.Type != "Einsum" || im.isCustom(&l) || len(l.Outputs) != 1 {
			out = append(out, l)
			continue
		}
		eq := l.String("equation", "")
		if axes, perm, ok := reduceForm(eq, len(l.Inputs)); ok {
			out = append(out, im.einsumReduce(l, axes, perm)...)
			continue
		}
		if len(l.Inputs) == 1 && diagonalForm(eq) {
			out = append(out, im.einsumDiagonal(l)...)
			continue
		}
		rank, ta, tb, ok := matmulForm(eq)
		if !ok || len(l.Inputs) != 2 {
			out = append(out, l)
			continue
		}
		in := []string{l.Inputs[0], l.Inputs[1]}
		for k, t := range []bool{ta, tb} {
			if !t {
				continue
			}
			perm := make([]int64, rank)
			for i := range perm {
				perm[i] = int64(i)
			}
			perm[rank-2], perm[rank-1] = int64(rank-1), int64(rank-2)
			side := []string{"a", "b"}[k]
			tn := uniqueConst(im, l.Name+"/"+side+"_transposed")
			out = append(out, model.Layer{Name: uniqueName(im, l.Name+"/transpose_"+side), Type: "Transpose",
				Inputs: []string{in[k]}, Outputs: []string{tn}, Attrs: []model.Attr{{Name: "perm", Kind: model.AttrInts, Ints: perm}}})
			in[k] = tn
		}
		out = append(out, model.Layer{Name: l.Name, Type: "MatMul", Inputs: in, Outputs: l.Outputs})
	}
	im.layers = out
}

// matmulForm reports whether an Einsum equation is a batched matrix product: both
// operands and the output have the same leading letters (no "..."), one letter of the
// operands' last two is summed over, and the output ends in the first operand's free
// letter then the second's. ta and tb say whether an operand's last two letters are the
// other way round from (row, summed) and (summed, column); rank is the number of letters.
func matmulForm(eq string) (rank int, ta, tb, ok bool) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, o, found := strings.Cut(eq, "->")
	p, q, two := strings.Cut(lhs, ",")
	if !found || !two || strings.Contains(q, ",") {
		return 0, false, false, false
	}
	n := len(p)
	if n < 2 || len(q) != n || len(o) != n || !distinctLetters(p) || !distinctLetters(q) || !distinctLetters(o) {
		return 0, false, false, false
	}
	batch := p[:n-2]
	if q[:n-2] != batch || o[:n-2] != batch {
		return 0, false, false, false
	}
	p2, q2, o2 := p[n-2:], q[n-2:], o[n-2:]
	row, col := o2[0], o2[1]
	var sum byte
	switch {
	case p2[0] == row:
		sum = p2[1]
	case p2[1] == row:
		sum, ta = p2[0], true
	default:
		return 0, false, false, false
	}
	switch {
	case q2 == string([]byte{sum, col}):
	case q2 == string([]byte{col, sum}):
		tb = true
	default:
		return 0, false, false, false
	}
	if sum == row || sum == col || strings.IndexByte(batch, sum) >= 0 || strings.IndexByte(batch, row) >= 0 || strings.IndexByte(batch, col) >= 0 {
		return 0, false, false, false
	}
	return n, ta, tb, true
}

func distinctLetters(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || strings.IndexByte(s[i+1:], c) >= 0 {
			return false
		}
	}
	return true
}

// einsumReduce is the layers of an Einsum reduceForm accepts: the product of its
// operands, the sum over axes, then the transpose perm, each left out where it does
// nothing (an Identity where all are).
func (im *importer) einsumReduce(l model.Layer, axes, perm []int64) []model.Layer {
	var out []model.Layer
	x := l.Inputs[0]
	step := func(typ string, ins []string, attrs ...model.Attr) {
		o := uniqueConst(im, l.Name+"/"+strings.ToLower(typ))
		out = append(out, model.Layer{Name: uniqueName(im, l.Name+"/"+strings.ToLower(typ)), Type: typ, Inputs: ins, Outputs: []string{o}, Attrs: attrs})
		x = o
	}
	if len(l.Inputs) == 2 {
		step("Mul", []string{x, l.Inputs[1]})
	}
	if len(axes) > 0 {
		step("ReduceSum", []string{x}, model.Attr{Name: "axes", Kind: model.AttrInts, Ints: axes},
			model.Attr{Name: "keepdims", Kind: model.AttrInt, Int: 0})
	}
	if perm != nil {
		step("Transpose", []string{x}, model.Attr{Name: "perm", Kind: model.AttrInts, Ints: perm})
	}
	if len(out) == 0 {
		step("Identity", []string{x})
	}
	last := &out[len(out)-1]
	last.Name, last.Outputs = l.Name, l.Outputs
	return out
}

// reduceForm reports whether an Einsum equation of n operands is a sum and transpose of
// one operand, or of the element-wise product of two operands of the same letters in the
// same order: axes are those summed over, perm the transpose after (nil where none). The
// output is explicit ("ij->i") or implicit ("ij": the letters that appear once, sorted).
func reduceForm(eq string, n int) (axes, perm []int64, ok bool) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, o, explicit := strings.Cut(eq, "->")
	ops := strings.Split(lhs, ",")
	if len(ops) != n || n < 1 || n > 2 || n == 2 && ops[1] != ops[0] {
		return nil, nil, false
	}
	p := ops[0]
	if len(p) == 0 || !distinctLetters(p) {
		return nil, nil, false
	}
	if !explicit {
		o = ""
		if n == 1 {
			b := []byte(p)
			slices.Sort(b)
			o = string(b)
		}
	}
	if !distinctLetters(o) {
		return nil, nil, false
	}
	var kept []byte
	for i := range len(p) {
		if strings.IndexByte(o, p[i]) < 0 {
			axes = append(axes, int64(i))
		} else {
			kept = append(kept, p[i])
		}
	}
	if len(kept) != len(o) {
		return nil, nil, false // a letter of the output no operand has
	}
	for i := range len(o) {
		k := int64(strings.IndexByte(string(kept), o[i]))
		perm = append(perm, k)
		if k != int64(i) {
			ok = true
		}
	}
	if !ok {
		perm = nil
	}
	return axes, perm, true
}

// diagonalForm reports whether an Einsum equation takes the diagonal of one operand's
// last two axes: "...ii->...i" or "bii->bi", the leading letters kept in order.
func diagonalForm(eq string) bool {
	eq = strings.ReplaceAll(eq, " ", "")
	p, o, explicit := strings.Cut(eq, "->")
	lead, ok := strings.CutPrefix(p, "...")
	if ok != strings.HasPrefix(o, "...") {
		return false
	}
	o = strings.TrimPrefix(o, "...")
	n := len(lead)
	if !explicit || n < 2 || lead[n-1] != lead[n-2] || o != lead[:n-1] {
		return false
	}
	return distinctLetters(lead[:n-1])
}

// einsumDiagonal is the diagonal of x's last two axes (n of them) as layers: x times the
// n×n identity, summed over the last axis. The identity folds at load from x's shape
// (Shape from axis -2, ConstantOfShape, EyeLike); each sum adds zeros to the one diagonal
// element, so it is exact for finite x.
func (im *importer) einsumDiagonal(l model.Layer) []model.Layer {
	x := l.Inputs[0]
	shape, zeros, eye, prod := uniqueConst(im, l.Name+"/square"), uniqueConst(im, l.Name+"/zeros"),
		uniqueConst(im, l.Name+"/eye"), uniqueConst(im, l.Name+"/masked")
	return []model.Layer{
		{Name: uniqueName(im, l.Name+"/square"), Type: "Shape", Inputs: []string{x}, Outputs: []string{shape},
			Attrs: []model.Attr{{Name: "start", Kind: model.AttrInt, Int: -2}}},
		{Name: uniqueName(im, l.Name+"/zeros"), Type: "ConstantOfShape", Inputs: []string{shape}, Outputs: []string{zeros}},
		{Name: uniqueName(im, l.Name+"/eye"), Type: "EyeLike", Inputs: []string{zeros}, Outputs: []string{eye}},
		{Name: uniqueName(im, l.Name+"/masked"), Type: "Mul", Inputs: []string{x, eye}, Outputs: []string{prod}},
		{Name: l.Name, Type: "ReduceSum", Inputs: []string{prod}, Outputs: l.Outputs,
			Attrs: []model.Attr{{Name: "axes", Kind: model.AttrInts, Ints: []int64{-1}}, {Name: "keepdims", Kind: model.AttrInt, Int: 0}}},
	}
}
