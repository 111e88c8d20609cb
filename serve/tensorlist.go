package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// maxRequestTensors bounds the inputs, and the outputs, one request may name: more
// than any model has. Each is a struct of about 90 bytes made from as few as three
// ("{},"), and the slice holding them grows by copies: a million empty inputs, 3 MB,
// took 500 MB before any of them could be refused.
const maxRequestTensors = 1024

// restInputList is a request's inputs, refused past maxRequestTensors while read.
type restInputList []restInput

// restOutputList is a request's outputs, refused past maxRequestTensors while read.
type restOutputList []restOutput

func (l *restInputList) UnmarshalJSON(b []byte) error {
	return decodeList(b, "inputs", (*[]restInput)(l))
}

func (l *restOutputList) UnmarshalJSON(b []byte) error {
	return decodeList(b, "outputs", (*[]restOutput)(l))
}

// decodeList reads a JSON array into dst one element at a time, stopping past
// maxRequestTensors. encoding/json has checked the array's syntax; elements are split
// where they lie rather than through a json.Decoder, which would copy the whole array
// (tensor data included) into its buffer.
func decodeList[T any](b []byte, what string, dst *[]T) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*dst = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' {
		return fmt.Errorf("%s: %.40s is not an array", what, b)
	}
	out := []T{}
	depth, inString, escaped, start := 0, false, false, 1
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
			continue
		case c == '[' || c == '{':
			depth++
			continue
		case c == '}' || (c == ']' && depth > 0):
			depth--
			continue
		case depth > 0 || (c != ',' && c != ']'):
			continue
		}
		elem := bytes.TrimSpace(b[start:i])
		start = i + 1
		if len(elem) == 0 && c == ']' && len(out) == 0 {
			break // []
		}
		if len(out) == maxRequestTensors {
			return fmt.Errorf("a request names more than %d %s", maxRequestTensors, what)
		}
		var v T
		if err := json.Unmarshal(elem, &v); err != nil {
			return fmt.Errorf("%s[%d]: %w", what, len(out), err)
		}
		out = append(out, v)
	}
	*dst = out
	return nil
}
