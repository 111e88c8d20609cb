package serve

import (
	"fmt"
	"strconv"
)

// decodeJSONData reads a tensor's "data": JSON numbers, nested in arrays in the tensor's
// natural shape or flattened, in row-major order. data is already known to be valid
// JSON (it came through encoding/json). It fills dst and fails unless it held exactly
// len(dst) numbers of datatype dt.
func decodeJSONData(name, dt string, data []byte, dst []float32) error {
	n := 0
	integer := dt != "FP32"
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '[' || c == ']' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '"':
			return fmt.Errorf("input %q: data holds a string; %s data are JSON numbers", name, dt)
		case c == '{':
			return fmt.Errorf("input %q: data holds an object; %s data are JSON numbers", name, dt)
		case c == 't' || c == 'f':
			return fmt.Errorf("input %q: data holds a boolean; %s data are JSON numbers", name, dt)
		case c == 'n':
			return fmt.Errorf("input %q: data holds null; %s data are JSON numbers", name, dt)
		}
		j := i
		for j < len(data) && data[j] != ',' && data[j] != ']' && data[j] != ' ' && data[j] != '\n' && data[j] != '\t' && data[j] != '\r' {
			j++
		}
		tok := string(data[i:j])
		if n >= len(dst) {
			return fmt.Errorf("input %q: data holds more than the %d values its shape has", name, len(dst))
		}
		if integer {
			v, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				return fmt.Errorf("input %q: value %d (%s) is not an integer, as %s data are", name, n, tok, dt)
			}
			if lo, hi := intRange(dt); v < lo || v > hi {
				return fmt.Errorf("input %q: value %d (%d) is out of the range of %s", name, n, v, dt)
			}
			if v > maxExactInt || v < -maxExactInt {
				return fmt.Errorf("input %q: value %d (%d) is beyond ±2^24, which the model's float32 arithmetic cannot hold exactly", name, n, v)
			}
			dst[n] = float32(v)
		} else {
			v, err := strconv.ParseFloat(tok, 32)
			if err != nil {
				return fmt.Errorf("input %q: value %d (%s) is not a float32 number", name, n, tok)
			}
			dst[n] = float32(v)
		}
		n++
		i = j
	}
	if n != len(dst) {
		return fmt.Errorf("input %q: data holds %d values, its shape has %d", name, n, len(dst))
	}
	return nil
}

// countJSONData checks, without decoding a number, that a tensor's "data" holds
// exactly want numbers, with the messages decodeJSONData gives: the tensor is
// allocated only after this, so a request cannot claim more memory than it sends.
func countJSONData(name, dt string, data []byte, want int) error {
	n := 0
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '[', ']', ',', ' ', '\t', '\n', '\r':
			i++
			continue
		case '"':
			return fmt.Errorf("input %q: data holds a string; %s data are JSON numbers", name, dt)
		case '{':
			return fmt.Errorf("input %q: data holds an object; %s data are JSON numbers", name, dt)
		case 't', 'f':
			return fmt.Errorf("input %q: data holds a boolean; %s data are JSON numbers", name, dt)
		case 'n':
			return fmt.Errorf("input %q: data holds null; %s data are JSON numbers", name, dt)
		}
		if n >= want {
			return fmt.Errorf("input %q: data holds more than the %d values its shape has", name, want)
		}
		n++
		for i < len(data) && data[i] != ',' && data[i] != ']' && data[i] != ' ' && data[i] != '\n' && data[i] != '\t' && data[i] != '\r' {
			i++
		}
	}
	if n != want {
		return fmt.Errorf("input %q: data holds %d values, its shape has %d", name, n, want)
	}
	return nil
}

// intRange is the range of an integer datatype.
func intRange(dt string) (lo, hi int64) {
	switch dt {
	case "INT8":
		return -128, 127
	case "UINT8":
		return 0, 255
	case "INT32":
		return -1 << 31, 1<<31 - 1
	}
	return -1 << 63, 1<<63 - 1
}
