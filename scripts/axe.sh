#!/usr/bin/env bash
# scripts/axe.sh [VERSION]: vendor axe-core's axe.min.js (and its licence) into
# serve/testdata/axe/ from npm's registry, for the browser tests' accessibility checks
# (serve/a11y_test.go injects it). The vendored file is pinned: a11y_test.go checks its
# sha256 (axeSHA256), so after vendoring another version, set axeVersion and axeSHA256
# there to what this script prints.
set -euo pipefail
version=${1:-4.14.1}
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/../serve/testdata/axe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "axe-core@$version" >/dev/null && tar xzf "axe-core-$version.tgz")
mkdir -p "$dest"
cp "$tmp/package/axe.min.js" "$tmp/package/LICENSE" "$dest/"
echo "axe-core $version: sha256 $(sha256sum "$dest/axe.min.js" | cut -d' ' -f1)"
