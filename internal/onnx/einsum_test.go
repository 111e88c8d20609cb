package onnx

import (
	"slices"
	"testing"

	"github.com/clhost/clhost/model"
)

// TestEinsumMatMulForm: the equations of batched matrix products are recognised, with
// the operands to transpose, and others (a trace, an outer product, a sum, an element-wise
// product, ellipses, mismatched batch letters) are not.
func TestEinsumMatMulForm(t *testing.T) {
	cases := []struct {
		eq         string
		rank       int
		ta, tb, ok bool
	}{
		{eq: "ij,jk->ik", rank: 2, ok: true},
		{eq: "bij,bjk->bik", rank: 3, ok: true},
		{eq: "B G H I D, B G H J D -> B G H I J", rank: 5, tb: true, ok: true},
		{eq: "BGHIJ,BGHJD->BGHID", rank: 5, ok: true},
		{eq: "bki,bkj->bij", rank: 3, ta: true, ok: true},
		{eq: "bki,bjk->bij", rank: 3, ta: true, tb: true, ok: true},
		{eq: "ii->i"},
		{eq: "i,j->ij"},
		{eq: "ij,jk"},
		{eq: "ij,ij->ij"},
		{eq: "...ij,...jk->...ik"},
		{eq: "bij,cjk->bik"},
		{eq: "bij,bjk->bki"},
		{eq: "ij,jk,kl->il"},
	}
	for _, c := range cases {
		rank, ta, tb, ok := matmulForm(c.eq)
		if ok != c.ok || ok && (rank != c.rank || ta != c.ta || tb != c.tb) {
			t.Errorf("%q: rank %d, transpose %v %v, ok %v; want %d, %v %v, %v", c.eq, rank, ta, tb, ok, c.rank, c.ta, c.tb, c.ok)
		}
	}
}

// TestEinsumBecomesMatMul: MaxViT's attention product imports as a Transpose of the keys'
// last two axes and a MatMul, with the shapes of the product; an equation of no form
// rewritten (a trace) stays an Einsum.
func TestEinsumBecomesMatMul(t *testing.T) {
	eq := func(s string) pb { return pb{}.str(1, "equation").bytes(4, []byte(s)).varint(20, attrString) }
	g := graphOf(vinfo("q", dtFloat, 2, 3, 5, 4), vinfo("y", dtFloat), addInput(vinfo("k", dtFloat, 2, 3, 6, 4)),
		addNode(node("Einsum", "scores", []string{"q", "k"}, []string{"y"}, eq("bhid,bhjd->bhij"))))
	m := decodeOK(t, onnxModel(14, g), Options{})
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers, want a Transpose and a MatMul: %v", len(m.Layers), m.Layers)
	}
	tr := wantLayer(t, m, "scores/transpose_b", "Transpose", []string{"k"}, []string{"scores/b_transposed"})
	wantAttrs(t, tr, []model.Attr{ints("perm", 0, 1, 3, 2)})
	wantLayer(t, m, "scores", "MatMul", []string{"q", "scores/b_transposed"}, []string{"y"})
	wantShapes(t, m, map[string][]int{"scores/b_transposed": {2, 3, 4, 6}, "y": {2, 3, 5, 6}})

	trace := graphOf(vinfo("q", dtFloat, 3, 3), vscalar("y", dtFloat),
		addNode(node("Einsum", "trace", []string{"q"}, []string{"y"}, eq("ii->"))))
	m = decodeOK(t, onnxModel(14, trace), Options{})
	wantLayer(t, m, "trace", "Einsum", []string{"q"}, []string{"y"})
}

// TestEinsumReduceForm: sums and transposes of one operand, and products of two operands
// of the same letters, with explicit or implicit output, give the axes summed and the
// transpose after; a diagonal, an ellipsis, unlike operands and unknown output letters
// do not.
func TestEinsumReduceForm(t *testing.T) {
	cases := []struct {
		eq         string
		n          int
		axes, perm []int64
		ok         bool
	}{
		{eq: "ij->ji", n: 1, perm: []int64{1, 0}, ok: true},
		{eq: "ji", n: 1, perm: []int64{1, 0}, ok: true},
		{eq: "ij->i", n: 1, axes: []int64{1}, ok: true},
		{eq: "ijk->ki", n: 1, axes: []int64{1}, perm: []int64{1, 0}, ok: true},
		{eq: "i,i", n: 2, axes: []int64{0}, ok: true},
		{eq: "ij,ij->ij", n: 2, ok: true},
		{eq: "ii->i", n: 1},
		{eq: "...ii->...i", n: 1},
		{eq: "ij,jk->ik", n: 2},
		{eq: "ij->k", n: 1},
		{eq: "ij->i", n: 2},
	}
	for _, c := range cases {
		axes, perm, ok := reduceForm(c.eq, c.n)
		if ok != c.ok || ok && (!slices.Equal(axes, c.axes) || !slices.Equal(perm, c.perm)) {
			t.Errorf("%q (%d operands): axes %v, perm %v, ok %v; want %v, %v, %v", c.eq, c.n, axes, perm, ok, c.axes, c.perm, c.ok)
		}
	}
}

// TestEinsumInnerProduct: "i,i" imports as Mul then a ReduceSum to a scalar, which the
// Einsum's output names.
func TestEinsumInnerProduct(t *testing.T) {
	eq := pb{}.str(1, "equation").bytes(4, []byte("i,i")).varint(20, attrString)
	g := graphOf(vinfo("a", dtFloat, 5), vinfo("y", dtFloat), addInput(vinfo("b", dtFloat, 5)),
		addNode(node("Einsum", "dot", []string{"a", "b"}, []string{"y"}, eq)))
	m := decodeOK(t, onnxModel(14, g), Options{})
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers, want a Mul and a ReduceSum: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "dot/mul", "Mul", []string{"a", "b"}, []string{"dot/mul"})
	sum := wantLayer(t, m, "dot", "ReduceSum", []string{"dot/mul"}, []string{"y"})
	wantAttrs(t, sum, []model.Attr{ints("axes", 0), int1("keepdims", 0)})
	wantShapes(t, m, map[string][]int{"y": {}})
}

// TestEinsumDiagonal: the diagonal of the last two axes is recognised with leading
// letters or "...", and imports as a product with the identity, which folds from the
// input's shape, summed over the last axis; other repeated letters are not taken.
func TestEinsumDiagonal(t *testing.T) {
	for eq, want := range map[string]bool{
		"...ii->...i": true, "bii->bi": true, "ii->i": true, "ii": false, "iji->ij": false,
		"bii->ib": false, "...ii->i": false, "bbii->bbi": false,
	} {
		if got := diagonalForm(eq); got != want {
			t.Errorf("%q: diagonal %v, want %v", eq, got, want)
		}
	}
	eq := pb{}.str(1, "equation").bytes(4, []byte("...ii->...i")).varint(20, attrString)
	g := graphOf(vinfo("x", dtFloat, 2, 3, 3), vinfo("y", dtFloat),
		addNode(node("Einsum", "diag", []string{"x"}, []string{"y"}, eq)))
	m := decodeOK(t, onnxModel(14, g), Options{})
	if len(m.Layers) != 2 {
		t.Fatalf("%d layers, want a Mul and a ReduceSum: %v", len(m.Layers), m.Layers)
	}
	wantLayer(t, m, "diag/masked", "Mul", []string{"x", "diag/eye"}, []string{"diag/masked"})
	wantConst(t, m, "diag/eye", model.Float32, []int{3, 3}, f32bytes(1, 0, 0, 0, 1, 0, 0, 0, 1))
	sum := wantLayer(t, m, "diag", "ReduceSum", []string{"diag/masked"}, []string{"y"})
	wantAttrs(t, sum, []model.Attr{ints("axes", -1), int1("keepdims", 0)})
	wantShapes(t, m, map[string][]int{"y": {2, 3}})
}
