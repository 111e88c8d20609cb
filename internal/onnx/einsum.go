package onnx

import (
	"strings"

	"github.com/clhost/clhost/model"
)

// Einsum of batched matrix-product form becomes MatMul. Attention written with
// torch.einsum (MaxViT's window and grid attention: "bghid,bghjd->bghij") exports as
// Einsum, and a MatMul with a Transpose of one operand is the same product on kernels
// clhost has. Other equations stay Einsum layers.

// rewriteEinsum replaces each default-domain Einsum whose equation matmulForm accepts by
// a MatMul, after a Transpose of the last two axes of an operand whose letters come the
// other way round.
func (im *importer) rewriteEinsum() {
	var out []model.Layer
	for _, l := range im.layers {
		if l.Type != "Einsum" || l.Has("domain") || len(l.Inputs) != 2 || len(l.Outputs) != 1 {
			out = append(out, l)
			continue
		}
		rank, ta, tb, ok := matmulForm(l.String("equation", ""))
		if !ok {
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
