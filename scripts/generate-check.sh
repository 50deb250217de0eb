#!/usr/bin/env bash
# make generate-check: `go generate ./...` must not change any generated file (Go and CUE
# files carrying the generated-code header, tracked or not).
set -euo pipefail
GO=${GO:-go}
gensum() {
	git ls-files -z -co --exclude-standard -- '*.go' '*.cue' |
		xargs -0 grep -lZ -E '^// Code generated .* DO NOT EDIT\.$' | xargs -0 -r sha256sum
}
before=$(gensum)
"$GO" generate ./...
after=$(gensum)
if [ "$before" != "$after" ]; then
	echo "generated files drifted from their sources: run 'make generate' and commit"
	diff <(echo "$before") <(echo "$after")
	exit 1
fi
