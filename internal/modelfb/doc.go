// Package modelfb is the FlatBuffers code of clhost's native model form (.clm), generated
// from model/model.fbs by `go generate ./model`; package model reads and writes .clm
// files through it. Every other file here is flatc's output: edit the schema, not them.
package modelfb
