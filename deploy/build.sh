#!/bin/sh
# Builds the lensgate binary exactly as the container image does: static, CGO off, trimmed paths,
# version stamped. Usage: deploy/build.sh OUTPUT [VERSION]
set -eu
out=${1:?usage: deploy/build.sh OUTPUT [VERSION]}
ver=${2:-dev}
CGO_ENABLED=0 exec go build -trimpath -ldflags "-s -w -X main.version=${ver}" -o "$out" ./cmd/lensgate
