package builtinkernels

import (
	"fmt"
	"strings"
	"sync"
)

// The element-wise kernels' text, generated from the table's expressions, so an op's
// formula is written once and its code in math.cl is its row's place.

const (
	unaryMarker  = "/* @unary_f@ */\n"
	binaryMarker = "/* @binary_f@ */\n"
)

// mathSource is math.cl with the UNARY_* codes, unary_f and binary_f put in its markers.
var mathSource = sync.OnceValues(func() (string, error) {
	src, err := kernelSource("math.cl")
	if err != nil {
		return "", err
	}
	var u strings.Builder
	for i, f := range unaryFns {
		fmt.Fprintf(&u, "#define UNARY_%s %d\n", strings.ToUpper(f.name), i)
	}
	u.WriteString("__attribute__((noinline)) float unary_f(int op, float v, float a, float b)\n{\n    switch (op) {\n")
	for i, f := range unaryFns {
		fmt.Fprintf(&u, "    case %d: return (%s); /* %s */\n", i, f.cl, f.name)
	}
	u.WriteString("    }\n    return v;\n}\n")
	var b strings.Builder
	b.WriteString("__attribute__((noinline)) float binary_f(int op, float u, float v, float s)\n{\n    switch (op) {\n")
	for i, f := range binaryFns {
		fmt.Fprintf(&b, "    case %d: return (%s); /* %s */\n", i, f.cl, f.name)
	}
	b.WriteString("    }\n    return u;\n}\n")
	for _, m := range []string{unaryMarker, binaryMarker} {
		if strings.Count(src, m) != 1 {
			return "", fmt.Errorf("builtin kernel source math.cl: want one %q marker", strings.TrimSpace(m))
		}
	}
	src = strings.Replace(src, unaryMarker, u.String(), 1)
	return strings.Replace(src, binaryMarker, b.String(), 1), nil
})

// elementwiseSource is elementwise.cl with a UNARY kernel for each unary row that names
// one and the BINARY pair for each binary row that does.
var elementwiseSource = sync.OnceValues(func() (string, error) {
	src, err := kernelSource("elementwise.cl")
	if err != nil {
		return "", err
	}
	var s strings.Builder
	s.WriteString(src)
	s.WriteString("\n")
	for _, f := range unaryFns {
		if f.kernel != "" {
			fmt.Fprintf(&s, "UNARY(%s, %s)\n", f.kernel, f.cl)
		}
	}
	for _, f := range binaryFns {
		if f.kernel != "" {
			fmt.Fprintf(&s, "BINARY(%s, %s)\n", f.kernel, f.cl)
		}
	}
	return s.String(), nil
})
