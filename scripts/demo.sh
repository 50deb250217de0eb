#!/usr/bin/env bash
# make demo: the fan-out example on a private local Ray cluster, the same in process,
# the plan as the rayflow binary fingerprints it, the durable path (scripts/demo-durable.sh)
# and rayflow serve with live showcase runs (scripts/demo-serve.sh; `make demo-down`
# stops it). Needs bin/rayflow and the venv (make build ray-venv). COUNT items (200).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
RAYFLOW=${RAYFLOW:-bin/rayflow}
RAY_PY=${RAY_PY:-.venv-ray/bin/python}
PG_STATE=${PG_STATE:-.pg-local}
DEMO_STATE=${DEMO_STATE:-.demo-serve}
count=${COUNT:-200}

run() { echo "$*"; "$@"; }

echo '--- examples/fanout on Ray: build_items -> map(calculate, window 16, max 10,000) -> summarize'
run env RAYFLOW_PYTHON="$PWD/$RAY_PY" "$GO" run ./examples/fanout -count "$count" -ray local
echo
echo '--- the same workflow in this process (no Ray): the same result'
run "$GO" run ./examples/fanout -count "$count"
echo
echo "--- the plan as the rayflow binary fingerprints it (rayflow plan fingerprint fanout): a plan's code identity"
echo "    is the digest of the executable that runs its steps, so it differs from the example binary's above;"
echo '    the durable task below, run by this binary, pins this one'
run "$RAYFLOW" plan fingerprint fanout
echo
echo '--- the durable path: a PostgreSQL task, run by a rayflow worker on Ray (make demo-durable)'
started=
[ -f "$PG_STATE/data/postmaster.pid" ] || started=1
"$here/demo-durable.sh" || {
	rc=$?
	[ -z "$started" ] || "$here/pg.sh" down "$PG_STATE"
	exit $rc
}
mkdir -p "$DEMO_STATE"
[ -z "$started" ] || touch "$DEMO_STATE/pg-started"
echo
echo '--- rayflow serve with a live showcase run (make demo-serve; make demo-down stops it)'
"$here/demo-serve.sh" start
