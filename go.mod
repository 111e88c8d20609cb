module github.com/clhost/clhost

go 1.24

require (
	github.com/Knetic/govaluate v3.0.0+incompatible
	github.com/beevik/etree v1.8.1
	github.com/google/flatbuffers v25.12.19+incompatible
	github.com/sbinet/npyio v0.6.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gonum.org/v1/gonum v0.9.3 // indirect
)
