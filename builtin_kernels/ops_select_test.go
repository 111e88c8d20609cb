package builtinkernels

// The cases of select.go's ops in the one harness (TestOpsMatchReference).
func init() {
	x := sh(2, 3, 4, 5)
	opCases = append(opCases,
		opCase{name: "axis1", typ: gatherElementsType, attrs: Attrs{"axis": 1}, in: shapes(x, sh(2, 2, 4, 5)), out: shapes(sh(2, 2, 4, 5)), gen: "rn"},
		opCase{name: "last_axis_wider", typ: gatherElementsType, attrs: Attrs{"axis": -1}, in: shapes(sh(4, 2), sh(3, 6)), out: shapes(sh(3, 6)), gen: "rb"},
		opCase{name: "upper_k1", typ: "Trilu", attrs: Attrs{"k": 1}, in: shapes(x), out: shapes(x)},
		opCase{name: "lower_k_minus1", typ: "Trilu", attrs: Attrs{"k": -1, "upper": 0}, in: shapes(x), out: shapes(x)},
		opCase{name: "axis1", typ: "CumSum", attrs: Attrs{"axis": 1}, in: shapes(x), out: shapes(x)},
		opCase{name: "exclusive_reverse", typ: "CumSum", attrs: Attrs{"axis": -1, "exclusive": 1, "reverse": 1}, in: shapes(x), out: shapes(x)},
		// 0/1 values tie: the lower index comes first.
		opCase{name: "largest_ties", typ: "TopK", attrs: Attrs{"k": 3}, in: shapes(x), out: shapes(sh(2, 3, 4, 3), sh(2, 3, 4, 3)), gen: "b"},
		opCase{name: "smallest_axis1", typ: "TopK", attrs: Attrs{"k": 2, "axis": 1, "largest": 0}, in: shapes(x), out: shapes(sh(2, 2, 4, 5), sh(2, 2, 4, 5)), gen: "w"},
	)
}
