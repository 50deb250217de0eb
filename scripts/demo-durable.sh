#!/usr/bin/env bash
# make demo-durable: enqueue the fan-out as a PostgreSQL task; a `rayflow worker --runner
# ray` runs it; it must succeed with the in-process result. Starts the private PostgreSQL
# (scripts/pg.sh) when it is not running; needs bin/rayflow and the venv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
RAYFLOW=${RAYFLOW:-bin/rayflow}
RAY_PY=${RAY_PY:-.venv-ray/bin/python}
PG_STATE=${PG_STATE:-.pg-local}
n=${COUNT:-200}

"$here/pg.sh" up "$PG_STATE"
export RAYFLOW_DATABASE_URL=$(cat "$PG_STATE/url") RAYFLOW_PYTHON=$PWD/$RAY_PY
"$RAYFLOW" migrate up
want=$("$GO" run ./examples/fanout -count "$n" | tail -1)
id=$("$RAYFLOW" tasks enqueue fanout --input "$n")
echo "--- enqueued fanout($n) as task $id"
"$RAYFLOW" worker --runner ray --ray-address "${RAYFLOW_RAY_ADDRESS:-local}" --concurrency 2 2>"$PG_STATE/demo-worker.log" &
wpid=$!
trap 'kill -TERM $wpid 2>/dev/null; wait $wpid 2>/dev/null || true' EXIT
got=$("$RAYFLOW" tasks wait "$id" --timeout 10m) || {
	tail -20 "$PG_STATE/demo-worker.log"
	exit 1
}
"$RAYFLOW" tasks show "$id"
echo "--- durable result:   $got"
echo "--- in-process result: $want"
[ "$got" = "$want" ] || {
	echo "demo-durable: the results differ"
	exit 1
}
echo "demo-durable: SUCCEEDED on Ray with the same result"
