package model

// internal/modelfb is generated from model.fbs (namespace modelfb) by the Debian
// flatbuffers-compiler (flatc 2.0.8) and committed, so building clhost needs no flatc.
//go:generate flatc --go -o ../internal model.fbs
