#!/bin/sh
# Installs what serve's tests need beyond Go: Node's gRPC client libraries
# (@grpc/grpc-js, @grpc/proto-loader, versions pinned in serve/testdata/node) from
# the npm registry into serve/testdata/node/node_modules (ignored by git), curl, and the
# Python gRPC client with protoc that the shared-memory client test uses.
set -eu
cd "$(dirname "$0")/.."
dir=serve/testdata/node
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -q && apt-get install -y -q nodejs npm curl
	else
		echo "serve-test-deps: install node, npm and curl (as root on Debian: apt-get install nodejs npm curl)" >&2
		exit 1
	fi
fi
if ! /usr/bin/python3 -c 'import grpc, google.protobuf' >/dev/null 2>&1 || ! command -v protoc >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y -q python3-grpcio python3-protobuf protobuf-compiler ||
			{ apt-get update -q && apt-get install -y -q python3-grpcio python3-protobuf protobuf-compiler; }
	else
		echo "serve-test-deps: install python3-grpcio, python3-protobuf and protobuf-compiler (as root on Debian: apt-get install python3-grpcio python3-protobuf protobuf-compiler)" >&2
		exit 1
	fi
fi
if [ -d "$dir/node_modules/@grpc/grpc-js" ] && [ -d "$dir/node_modules/@grpc/proto-loader" ]; then
	exit 0
fi
npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --loglevel=error
