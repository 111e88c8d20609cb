package serve

import (
	"encoding/json"
	"slices"
	"strconv"
)

// parseRequest reads an inference request's JSON into req. The common shape of a
// request, and every binary one (inputs with names, shapes, datatypes and scalar
// parameters, outputs with names and parameters, an id, request parameters), is read
// by fastRequest; anything else (tensor data in the JSON, escaped strings, other
// keys, repeated keys, null) by encoding/json, which also says what is wrong with a
// bad request. Reflection cost encoding/json about as long as a small model's whole
// inference per request.
func parseRequest(b []byte, req *restRequest) error {
	var fast restRequest
	if (&jsonScanner{b: b}).request(&fast) {
		*req = fast
		return nil
	}
	return json.Unmarshal(b, req)
}

// maxFastKeys is the most keys an object the fast path reads may have.
const maxFastKeys = 32

// jsonScanner reads the subset of JSON fastRequest takes. Each method reports false on
// anything outside it, and the caller gives up.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes c after white space.
func (s *jsonScanner) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes and returns its bytes.
func (s *jsonScanner) str() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// number reads a JSON number and returns its text; integer says it has no fraction or
// exponent.
func (s *jsonScanner) number() (text []byte, integer, ok bool) {
	s.ws()
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	lead := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[lead] == '0') {
		return nil, false, false
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false, false
		}
		integer = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false, false
		}
		integer = false
	}
	return s.b[start:s.i], integer, true
}

// scalar reads a string, number or boolean and returns its JSON text.
func (s *jsonScanner) scalar() (json.RawMessage, bool) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '"':
		if _, ok := s.str(); !ok {
			return nil, false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if _, _, ok := s.number(); !ok {
			return nil, false
		}
	case c == 't' || c == 'f':
		word := "true"
		if c == 'f' {
			word = "false"
		}
		if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
			return nil, false
		}
		s.i += len(word)
	default:
		return nil, false
	}
	// A copy: nothing read from a request refers to its body's pooled buffer.
	return json.RawMessage(append([]byte(nil), s.b[start:s.i]...)), true
}

// object reads an object, calling field for each key with the scanner before its
// value; a key seen twice gives up.
func (s *jsonScanner) object(field func(key string) bool) bool {
	if !s.lit('{') {
		return false
	}
	if s.lit('}') {
		return true
	}
	var seen []string
	for {
		k, ok := s.str()
		if !ok || !s.lit(':') {
			return false
		}
		key := string(k)
		// A repeated key is encoding/json's to settle; so is an object of many keys,
		// whose check against every earlier key would take quadratic time.
		if len(seen) == maxFastKeys || slices.Contains(seen, key) {
			return false
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if s.lit('}') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// array reads an array, calling elem for each element.
func (s *jsonScanner) array(elem func() bool) bool {
	if !s.lit('[') {
		return false
	}
	if s.lit(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.lit(']') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// params reads an object of scalar parameters.
func (s *jsonScanner) params(dst *map[string]json.RawMessage) bool {
	m := map[string]json.RawMessage{}
	ok := s.object(func(key string) bool {
		v, ok := s.scalar()
		m[key] = v
		return ok
	})
	*dst = m
	return ok
}

// text reads a string into dst.
func (s *jsonScanner) text(dst *string) bool {
	v, ok := s.str()
	*dst = string(v)
	return ok
}

// request reads a whole request; the document must end after it.
func (s *jsonScanner) request(req *restRequest) bool {
	ok := s.object(func(key string) bool {
		switch key {
		case "id":
			var id string
			req.ID = &id
			return s.text(&id)
		case "parameters":
			return s.params(&req.Parameters)
		case "inputs":
			req.Inputs = restInputList{}
			return s.array(func() bool {
				if len(req.Inputs) == maxRequestTensors {
					return false // encoding/json's reading names the problem
				}
				var in restInput
				ok := s.input(&in)
				req.Inputs = append(req.Inputs, in)
				return ok
			})
		case "outputs":
			req.Outputs = restOutputList{}
			return s.array(func() bool {
				if len(req.Outputs) == maxRequestTensors {
					return false
				}
				var o restOutput
				ok := s.object(func(key string) bool {
					switch key {
					case "name":
						return s.text(&o.Name)
					case "parameters":
						return s.params(&o.Parameters)
					}
					return false
				})
				req.Outputs = append(req.Outputs, o)
				return ok
			})
		}
		return false
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// input reads an input tensor without data.
func (s *jsonScanner) input(in *restInput) bool {
	return s.object(func(key string) bool {
		switch key {
		case "name":
			return s.text(&in.Name)
		case "datatype":
			return s.text(&in.Datatype)
		case "parameters":
			return s.params(&in.Parameters)
		case "shape":
			in.Shape = shapeDims{}
			return s.array(func() bool {
				if len(in.Shape) == maxShapeDims {
					return false // encoding/json's reading names the problem
				}
				t, integer, ok := s.number()
				if !ok || !integer {
					return false
				}
				v, err := strconv.ParseInt(string(t), 10, 64)
				in.Shape = append(in.Shape, v)
				return err == nil
			})
		}
		return false
	})
}
