#!/usr/bin/env bash
# make fuzz: every fuzz target of the module (found in the tracked *_test.go files), run for
# FUZZTIME each (default 30s).
set -euo pipefail
GO=${GO:-go}
git ls-files -z -- '*_test.go' | xargs -0 grep -H '^func Fuzz' |
	sed -E 's|^(.*)/[^/]*_test.go:func (Fuzz[A-Za-z0-9_]*).*|./\1 \2|' | sort -u |
	while read -r pkg target; do
		echo "fuzz: $pkg $target"
		"$GO" test "$pkg" -short -run '^$' -fuzz "^$target\$" -fuzztime "${FUZZTIME:-30s}"
	done
