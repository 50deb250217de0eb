#!/usr/bin/env bash
# make fmt-check: gofmt must have nothing to change in the Go files of the checkout.
set -euo pipefail
out=$(git ls-files -z -co --exclude-standard -- '*.go' | xargs -0 gofmt -l)
if [ -n "$out" ]; then
	echo "gofmt would change:"
	echo "$out"
	exit 1
fi
