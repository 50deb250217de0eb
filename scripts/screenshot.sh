#!/usr/bin/env bash
# make screenshot: the README's screenshots of rayflow serve from a real run.
# On a database of its own (rayflow_screenshot, created afresh on the server of
# RAYFLOW_DATABASE_URL, else of make pg-up's PostgreSQL, and dropped at the end), it starts
# rayflow serve and a `rayflow worker --runner local`, enqueues the showcases (an order
# fulfillment whose reserve_inventory fails at item 2, one that succeeds, the three-attempt
# recovery and a fan-out), waits until they end, and saves docs/serve-tasks.png and
# docs/serve-failures.png (the failed task's failures view) with headless Chromium
# (serve/internal/shot). It stops what it started on every exit.
# Needs bin/rayflow (make build), psql and Chromium (make chromium).
set -euo pipefail
RAYFLOW=${RAYFLOW:-bin/rayflow}
GO=${GO:-go}
PG_STATE=${PG_STATE:-.pg-local}
STATE=${SHOT_STATE:-.screenshot}
ADDR=${SHOT_ADDR:-127.0.0.1:8091}
OUT=${SHOT_OUT:-docs}
DB=rayflow_screenshot

server_url=${RAYFLOW_DATABASE_URL:-}
if [ -z "$server_url" ]; then
	[ -s "$PG_STATE/url" ] || { echo "screenshot: set RAYFLOW_DATABASE_URL or run make pg-up"; exit 1; }
	server_url=$(cat "$PG_STATE/url")
fi
# the same server, database $DB
db_url=$(printf '%s' "$server_url" | sed -E "s#/[^/?]+(\?|\$)#/$DB\1#")

mkdir -p "$STATE"
umask 077
stop() {
	for p in worker serve; do
		f=$STATE/$p.pid
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		rm -f "$f"
		kill -TERM -- "-$pid" 2>/dev/null || continue
		for _ in $(seq 60); do
			kill -0 -- "-$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	psql -q "$server_url" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
}
trap stop EXIT
trap 'exit 130' INT TERM

psql -q "$server_url" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
export RAYFLOW_DATABASE_URL=$db_url
"$RAYFLOW" migrate up >/dev/null
openssl rand -hex 24 >"$STATE/token"
printf 'ops %s *\n' "$(cat "$STATE/token")" >"$STATE/tokens"
openssl rand -hex 32 >"$STATE/cursor-keys"
url=http://$ADDR
if curl -s -o /dev/null "$url/livez"; then
	echo "screenshot: $ADDR is in use; pick another: SHOT_ADDR=127.0.0.1:8092 make screenshot"
	exit 1
fi
setsid "$RAYFLOW" serve --addr "$ADDR" --tokens-file "$STATE/tokens" --cursor-keys-file "$STATE/cursor-keys" \
	>"$STATE/serve.log" 2>&1 </dev/null &
echo $! >"$STATE/serve.pid"
setsid "$RAYFLOW" worker --runner local --concurrency 2 --retry-backoff 1s >"$STATE/worker.log" 2>&1 </dev/null &
echo $! >"$STATE/worker.pid"
for i in $(seq 150); do
	curl -sf "$url/readyz" >/dev/null && break
	[ "$i" = 150 ] && { echo "screenshot: rayflow serve did not start:"; cat "$STATE/serve.log"; exit 1; }
	sleep 0.2
done
tok=$(cat "$STATE/token")
enqueue() { curl -sS -f -X POST -H "Authorization: Bearer $tok" "$url/api/examples/$1" | sed -nE 's/.*"task_id":"([0-9a-f-]+)".*/\1/p'; }
state() { curl -sS -f -H "Authorization: Bearer $tok" "$url/api/tasks/$1" | sed -nE 's/.*"state":"([A-Z_]+)".*/\1/p' | head -1; }
failed=$(enqueue 'orderfulfillment?item_count=6&work_seconds=0.2&failure_stage=reserve_inventory&failure_item=2')
tasks="$failed $(enqueue 'orderfulfillment?item_count=3&work_seconds=0.2') $(enqueue 'recovery?item_count=1&work_seconds=0.1') $(enqueue 'fanout?count=50')"
for i in $(seq 240); do
	busy=0
	for t in $tasks; do
		case $(state "$t") in QUEUED | RUNNING | "") busy=1 ;; esac
	done
	[ "$busy" = 0 ] && break
	[ "$i" = 240 ] && { echo "screenshot: the showcases did not end in 2 minutes:"; tail -20 "$STATE/worker.log"; exit 1; }
	sleep 0.5
done
[ "$(state "$failed")" = FAILED ] || { echo "screenshot: task $failed is $(state "$failed"), not FAILED"; exit 1; }
"$GO" run ./serve/internal/shot -base "$url" -token-file "$STATE/token" -task "$failed" -out "$OUT"
