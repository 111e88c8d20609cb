// Package inferencepb holds the Go code generated from grpc_service.proto, the gRPC
// service of the Open Inference Protocol (KServe V2): messages and the
// inference.GRPCInferenceService client and server interfaces.
package inferencepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto
