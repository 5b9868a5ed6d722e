#!/bin/sh
# Prepares the build context of deploy/Dockerfile.scratch in DIR: the binary (built with
# deploy/build.sh, or the one given), the host's CA certificates, the runtime user's passwd and
# group lines, and the state and temporary directories. Nothing is downloaded.
# Usage: deploy/scratch-context.sh DIR [VERSION [BINARY]]
set -eu
dir=${1:?usage: deploy/scratch-context.sh DIR [VERSION [BINARY]]}
ver=${2:-dev}
bin=${3:-}
ca=${LENSGATE_CA_CERTIFICATES:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$ca" ]; then
	echo "scratch-context.sh: no CA certificates at $ca (install ca-certificates or set LENSGATE_CA_CERTIFICATES)" >&2
	exit 1
fi
mkdir -p "$dir/state" "$dir/tmp"
chmod 0700 "$dir/state" "$dir/tmp"
dir=$(cd "$dir" && pwd)
if [ -n "$bin" ]; then
	cp "$bin" "$dir/lensgate"
else
	# build.sh builds ./cmd/lensgate: run it from the repository root.
	(cd "$(dirname "$0")/.." && deploy/build.sh "$dir/lensgate" "$ver")
fi
cp "$ca" "$dir/ca-certificates.crt"
# The user distroless calls nonroot; the Kubernetes manifests run as this uid.
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$dir/passwd"
echo 'nonroot:x:65532:' >"$dir/group"
