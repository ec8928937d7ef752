#!/usr/bin/env bash
# docs-assets.sh: puts the Redoc bundle that renders the gateway's API
# reference pages (/v2/docs, /admin/v1/docs) where the gateway embeds it,
# gateway/internal/apidocs/assets/, when it is missing or of another version.
# `make build` and the e2e harness's own build run it before compiling the
# gateway. Minified bundles are never committed (assets/ is in .gitignore):
# they come from the npm registry at build time, at the version and SHA-256
# pinned here (npm checks the registry's integrity hash too), and afterwards
# builds work offline.
#
# To move to another Redoc version: set version, then
#   npm pack redoc@VERSION && sha256sum redoc-VERSION.tgz
# and set sha256 to what it prints.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/gateway/internal/apidocs/assets"

version=2.5.4
sha256=44922df4d0eb45c1b066c09ec251e6bd9bd7ded16bc69e87613337b9d911a56e
# The bundle, and the license notices its first line points to.
files=(redoc.standalone.js redoc.standalone.js.LICENSE.txt)

die() { printf 'docs-assets: error: %s\n' "$*" >&2; exit 1; }

stamp="$dest/redoc.version"
want="redoc@$version sha256:$sha256"
have_all() {
	local f
	for f in "${files[@]}"; do [ -s "$dest/$f" ] || return 1; done
}
if have_all && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

# Like the database servers, npm is installed when missing (Debian/Ubuntu).
command -v npm >/dev/null 2>&1 || "$root/deploy/local/infra.sh" npm >&2 ||
	die "npm not found: it fetches Redoc for the API reference pages; install Node.js and npm (Debian: apt-get install npm)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "docs-assets: fetching redoc@$version from the npm registry" >&2
(cd "$tmp" && npm pack --silent --pack-destination "$tmp" "redoc@$version" >"$tmp/npm.log" 2>&1) ||
	{ cat "$tmp/npm.log" >&2; die "npm pack redoc@$version failed"; }
tarball="$tmp/redoc-$version.tgz"
[ -f "$tarball" ] || die "npm pack left no $tarball"
got=$(sha256sum "$tarball" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || die "redoc-$version.tgz has SHA-256 $got, expected $sha256: refusing it"

tar -xzf "$tarball" -C "$tmp" "${files[@]/#/package/bundles/}" ||
	die "redoc-$version.tgz lacks ${files[*]}"
mkdir -p "$dest"
# Each file is renamed into place, so a concurrent build embeds a whole
# file or none; the stamp goes last.
for f in "${files[@]}"; do
	cp "$tmp/package/bundles/$f" "$dest/.$f.tmp"
	mv -f "$dest/.$f.tmp" "$dest/$f"
done
echo "$want" >"$dest/.redoc.version.tmp"
mv -f "$dest/.redoc.version.tmp" "$stamp"
echo "docs-assets: $dest/redoc.standalone.js is redoc@$version" >&2
