// Package opspec declares what the built-in layers promise the graph passes that rewrite
// models for them: the types and attributes of fused layers (internal/graph's Fuse writes
// them, builtin_kernels reads them), the window and broadcasting rules that their shapes
// follow, and the bounds of the fused kernels' buffers that decide whether a fusion pays.
//
// It is a leaf of pure Go apart from builtin_kernels, which needs OpenCL: internal/graph may
// import only model and this package, so the graph passes ask the ops here, and each
// name, rule and limit is declared once for both sides.
package opspec
