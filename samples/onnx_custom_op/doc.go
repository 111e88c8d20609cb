// Package onnxcustomop is the sample of a custom ONNX operator run by clhost and checked
// with its debugging tools (README.md). Its test runs the model with the good kernel and
// with the two broken ones, as `clhost run --check --expect` would.
package onnxcustomop
