#!/bin/sh
# Builds tests/interop/sumdb/verify.go into OUT with Debian's golang-go and
# golang-golang-x-mod-dev only, offline: GOPATH mode over /usr/share/gocode
# (where the Debian -dev packages put their sources), no module proxy, no
# toolchain download, the build cache in OUT's directory (never the tree).
# Usage: build.sh OUT
set -eu
out=$1
src=$(cd "$(dirname "$0")" && pwd)/verify.go
dir=$(dirname "$out")
mkdir -p "$dir/go-cache"
GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local \
	GOCACHE="$dir/go-cache" CGO_ENABLED=0 go build -o "$out" "$src"
