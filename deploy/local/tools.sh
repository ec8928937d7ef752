#!/usr/bin/env bash
# Installs the pinned Go tools into .bin/ (buf and the protoc plugins), only
# those missing or at another version. Everything comes from the Go module
# proxy, so `make generate` works offline afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/.bin"
mkdir -p "$bin"

# name|package@version — keep in step with the runtime versions in go.mod.
tools=(
  "buf|github.com/bufbuild/buf/cmd/buf@v1.57.0"
  "protoc-gen-go|google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10"
  "protoc-gen-go-grpc|google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1"
  "protoc-gen-grpc-gateway|github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@v2.27.3"
)

for t in "${tools[@]}"; do
  name=${t%%|*}
  pkg=${t#*|}
  stamp="$bin/.$name.version"
  if [[ -x "$bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$pkg" ]]; then
    continue
  fi
  echo "installing $pkg" >&2
  (cd "$root" && GOWORK=off GOBIN="$bin" go install "$pkg")
  echo "$pkg" > "$stamp"
done

# The project's own plugin, built from source each time (the build cache
# makes an unchanged one instant).
(cd "$root/pkg" && go build -o "$bin/protoc-gen-switchboard-openapi" ./openapi/cmd/protoc-gen-switchboard-openapi)
