package model

// The fb package is generated from model.fbs by the Debian flatbuffers-compiler (flatc 2.0.8)
// and committed, so building clhost needs no flatc.
//go:generate flatc --go -o . model.fbs
