package opspec

import "fmt"

// Broadcast returns the shape of an element-wise result of operands of shapes a and b
// under numpy broadcasting: shapes aligned at their last axis, each pair of dimensions
// equal or one of them 1.
func Broadcast(a, b []int) ([]int, error) {
	r := max(len(a), len(b))
	out := make([]int, r)
	for i := range r {
		da, db := 1, 1
		if k := len(a) - r + i; k >= 0 {
			da = a[k]
		}
		if k := len(b) - r + i; k >= 0 {
			db = b[k]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast: axis %d (from the end) is %d against %d", a, b, r-i, da, db)
		}
	}
	return out, nil
}
