package customlayer

import (
	"fmt"
	"strings"
)

// Error is one problem of a configuration file.
type Error struct {
	File    string // the configuration file, as it was named to the loader
	Line    int    // 0 when unknown
	Layer   string // e.g. `layer "ReLU"`; empty for file-level problems
	Element string // e.g. "Tensor #2"; empty for layer-level problems
	Msg     string
}

// Error formats the problem as
// `relu.xml:4: layer "ReLU": Tensor #2: arg-index 1 is already used by Tensor #1`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	for _, s := range []string{e.Layer, e.Element, e.Msg} {
		if s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	return b.String()
}

// Errors is every problem found, in file order. A loader returns a non-empty Errors
// or nil, never an empty one.
type Errors []*Error

// Error lists the problems, one a line.
func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
