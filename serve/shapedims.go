package serve

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// maxShapeDims bounds the dimensions a request's shape may list. A shape is read
// before the model can say how many it takes, and each dimension costs 8 bytes for
// the two or so it takes in JSON: without a bound, a body of ones multiplied the
// memory it held fourfold, and the error quoting the shape echoed it back.
const maxShapeDims = 64

// shapeDims is a request input's shape as JSON gives it, refused past maxShapeDims.
type shapeDims []int64

func (d *shapeDims) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*d = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("shape %.40s is not an array of integers", b)
	}
	// encoding/json has checked the syntax: items are JSON values.
	body := bytes.TrimSpace(b[1 : len(b)-1])
	out := shapeDims{}
	for len(body) > 0 {
		if len(out) == maxShapeDims {
			return fmt.Errorf("a shape has more than %d dimensions", maxShapeDims)
		}
		item, rest, more := bytes.Cut(body, []byte(","))
		item = bytes.TrimSpace(item)
		v, err := strconv.ParseInt(string(item), 10, 64)
		if err != nil {
			return fmt.Errorf("shape dimension %.40s is not an integer of 64 bits", item)
		}
		out = append(out, v)
		if !more {
			break
		}
		body = rest
	}
	*d = out
	return nil
}

// shapeText writes a shape for an error message, its first dimensions only when it
// has many.
func shapeText(shape []int64) string {
	const show = 8
	if len(shape) <= show {
		return fmt.Sprint(shape)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range shape[:show] {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	fmt.Fprintf(&b, " … (%d dimensions)]", len(shape))
	return b.String()
}
