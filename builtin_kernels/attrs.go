package builtinkernels

// Attrs is a map-backed Params for tests and tools. Values may be any Go integer or float
// type, slices of them, or strings; a value of the wrong kind reads as the default, as an
// absent one does, because Params has no error path and ops validate the values they get.
type Attrs map[string]any

var _ Params = Attrs(nil)

// Has reports whether the attribute is set.
func (a Attrs) Has(name string) bool {
	_, ok := a[name]
	return ok
}

// Int returns an integer attribute.
func (a Attrs) Int(name string, def int64) int64 {
	switch v := a[name].(type) {
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return def
}

// Float returns a float attribute; integers are accepted too.
func (a Attrs) Float(name string, def float32) float32 {
	switch v := a[name].(type) {
	case float32:
		return v
	case float64:
		return float32(v)
	case int:
		return float32(v)
	case int64:
		return float32(v)
	}
	return def
}

// Ints returns an integer list attribute.
func (a Attrs) Ints(name string, def []int64) []int64 {
	switch v := a[name].(type) {
	case []int64:
		return v
	case []int:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	case []int32:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	return def
}

// Floats returns a float list attribute; integer lists are accepted too.
func (a Attrs) Floats(name string, def []float32) []float32 {
	switch v := a[name].(type) {
	case []float32:
		return v
	case []float64:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	case []int:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	return def
}

// String returns a string attribute.
func (a Attrs) String(name string, def string) string {
	if v, ok := a[name].(string); ok {
		return v
	}
	return def
}
