// Package graph turns a model into an executable plan: topological levels (every layer
// whose inputs are all available forms the next level), cycle detection, shape checks and
// inference for the built-in layer types, and graph passes (fusion, memory planning).
package graph
