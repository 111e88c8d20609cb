# clhost: `make demo` runs the main job, `make test` runs the tests. Both install what a
# fresh Debian machine lacks (when run as root) before anything else.

GO      ?= go
BIN     ?= bin/clhost
DEB_PKGS = pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
CHECK_PKGS = oclgrind

.PHONY: all build deps deps-check test test-full vet lint demo check-kernels fuzz bench clean

all: build

# deps installs the OpenCL runtime (PoCL), the loader and headers when any is missing.
deps:
	@scripts/install-deps.sh $(DEB_PKGS)

build: deps
	$(GO) build -o $(BIN) ./cmd/clhost

vet:
	$(GO) vet ./...

# test: vet, every test on PoCL, the concurrency tests under the race detector, and every
# kernel under oclgrind, each phase timed (scripts/test.sh). The server's tests need Node's
# gRPC client libraries (scripts/serve-test-deps.sh, from the npm registry). PoCL's kernel cache and
# clhost's program cache start empty in temporary folders, as on a new machine.
test: deps
	@scripts/install-deps.sh $(CHECK_PKGS)
	@scripts/serve-test-deps.sh
	@GO=$(GO) scripts/test.sh

# test-full: make test, then the exhaustive sweeps (every tile, device shape and network
# variant of the plan tests) and the ONNX conformance run.
test-full: deps
	@scripts/install-deps.sh $(CHECK_PKGS)
	@scripts/serve-test-deps.sh
	@GO=$(GO) scripts/test.sh full

# lint runs staticcheck (fetched through the Go module proxy on first use).
lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...

# demo: the main job — a sample model with a custom layer, run on the default device.
demo: build
	@samples/demo.sh $(BIN)

# check-kernels runs every built-in, global-config and sample kernel under oclgrind,
# failing on invalid memory accesses, uninitialised reads and data races.
check-kernels: deps
	@scripts/install-deps.sh $(CHECK_PKGS)
	@scripts/check-kernels.sh

fuzz:
	@scripts/fuzz.sh $${FUZZTIME:-60s}

bench: build
	$(GO) test -run XXX -bench . -benchtime 2000x ./cl/

clean:
	rm -rf bin

# conformance runs ONNX's backend node tests and the PyTorch-converted and -operator sets
# (Debian's libonnx-testdata, installed when missing) through clhost on PoCL, prints
# pass / wrong / refused / crash per op type, and fails when a test listed in
# scripts/conformance-pass.txt stops passing or any test is wrong or crashes.
.PHONY: conformance
conformance: deps
	@scripts/onnx-conformance.sh

# serve-deps installs what serve's tests need beyond Go: Node's gRPC client
# libraries (@grpc/grpc-js, @grpc/proto-loader from the npm registry) into
# serve/testdata/node/node_modules, and curl.
.PHONY: serve-deps
serve-deps:
	@scripts/serve-test-deps.sh
