// Package graph turns a model into an executable plan: topological levels (every layer
// whose inputs are all available forms the next level), cycle detection, shape checks and
// inference, and graph passes (fusion, memory planning). Shapes are not kept here: each
// built-in op in builtin_kernels states its own rule (builtinkernels.Shaper), and the
// graph asks the op registry for it.
package graph
