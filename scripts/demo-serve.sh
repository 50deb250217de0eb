#!/usr/bin/env bash
# make demo-serve / demo-stop / demo-down: rayflow serve and a `rayflow worker --runner ray`
# in the background, their process groups recorded in $DEMO_STATE.
#   scripts/demo-serve.sh start  (re)start both on RAYFLOW_DATABASE_URL, else the private
#                                PostgreSQL (started when needed); enqueue the order-fulfillment
#                                and recovery showcases; print their graph page URLs and the token
#   scripts/demo-serve.sh stop   stop rayflow serve and the worker
#   scripts/demo-serve.sh down   stop them, and the PostgreSQL that make demo started
# Needs bin/rayflow and the venv (make build ray-venv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RAYFLOW=${RAYFLOW:-bin/rayflow}
RAY_PY=${RAY_PY:-.venv-ray/bin/python}
PG_STATE=${PG_STATE:-.pg-local}
DEMO_STATE=${DEMO_STATE:-.demo-serve}
DEMO_ADDR=${DEMO_ADDR:-127.0.0.1:8080}

stop() {
	for p in worker serve; do
		f=$DEMO_STATE/$p.pid
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		rm -f "$f"
		kill -0 -- "-$pid" 2>/dev/null || continue
		kill -TERM -- "-$pid" 2>/dev/null || true
		for _ in $(seq 60); do
			kill -0 -- "-$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
		echo "demo: stopped rayflow $p (process group $pid)"
	done
}

start() {
	stop
	mkdir -p "$DEMO_STATE"
	if [ -z "${RAYFLOW_DATABASE_URL:-}" ]; then
		[ -f "$PG_STATE/data/postmaster.pid" ] || {
			"$here/pg.sh" up "$PG_STATE"
			touch "$DEMO_STATE/pg-started"
		}
		export RAYFLOW_DATABASE_URL=$(cat "$PG_STATE/url")
	fi
	export RAYFLOW_PYTHON=$PWD/$RAY_PY
	umask 077
	url=http://$DEMO_ADDR
	if curl -s -o /dev/null "$url/livez"; then
		echo "demo-serve: $DEMO_ADDR is in use; stop that server or pick another address: make demo-serve DEMO_ADDR=127.0.0.1:8081"
		exit 1
	fi
	"$RAYFLOW" migrate up >/dev/null
	[ -s "$DEMO_STATE/token" ] || openssl rand -hex 24 >"$DEMO_STATE/token"
	tok=$(cat "$DEMO_STATE/token")
	printf 'demo %s *\n' "$tok" >"$DEMO_STATE/tokens"
	[ -s "$DEMO_STATE/cursor-keys" ] || openssl rand -hex 32 >"$DEMO_STATE/cursor-keys"
	setsid "$RAYFLOW" serve --addr "$DEMO_ADDR" --tokens-file "$DEMO_STATE/tokens" --cursor-keys-file "$DEMO_STATE/cursor-keys" \
		>"$DEMO_STATE/serve.log" 2>&1 </dev/null &
	echo $! >"$DEMO_STATE/serve.pid"
	setsid "$RAYFLOW" worker --runner ray --ray-address "${RAYFLOW_RAY_ADDRESS:-local}" --concurrency 2 --retry-backoff 2s \
		>"$DEMO_STATE/worker.log" 2>&1 </dev/null &
	echo $! >"$DEMO_STATE/worker.pid"
	for i in $(seq 150); do
		curl -sf "$url/readyz" >/dev/null && break
		if ! kill -0 "$(cat "$DEMO_STATE/serve.pid")" 2>/dev/null || [ "$i" = 150 ]; then
			echo "demo-serve: rayflow serve did not start at $url:"
			cat "$DEMO_STATE/serve.log"
			stop
			exit 1
		fi
		sleep 0.2
	done
	enqueue() { curl -sS -f -X POST -H "Authorization: Bearer $tok" "$url/api/examples/$1" | sed -nE 's/.*"task_id":"([0-9a-f-]+)".*/\1/p'; }
	order=$(enqueue 'orderfulfillment?item_count=3&work_seconds=2')
	rec=$(enqueue 'recovery?item_count=1&work_seconds=0.2')
	if [ -z "$order" ] || [ -z "$rec" ]; then
		echo "demo-serve: enqueueing the showcases failed"
		stop
		exit 1
	fi
	echo "$order" >"$DEMO_STATE/order-task"
	echo "rayflow serve: $url (log $DEMO_STATE/serve.log); a rayflow worker on Ray (log $DEMO_STATE/worker.log)"
	echo "enqueued through POST /api/examples/orderfulfillment: task $order (3 items, 21 nodes; live for about half a minute)"
	echo "enqueued through POST /api/examples/recovery:         task $rec (fails twice, succeeds at attempt 3)"
	echo
	echo "Open the live graph page of the order-fulfillment showcase run:"
	echo
	echo "    $url/tasks/$order/graph"
	echo
	echo "Sign in with this token (also in $DEMO_STATE/token): $tok"
	echo "The recovery showcase's three attempts: $url/tasks/$rec/graph"
	echo "The JSON API: curl -H \"Authorization: Bearer $tok\" $url/api/workflows/$order"
	echo "Stop rayflow serve, the worker and the demo's PostgreSQL: make demo-down"
}

case ${1:?usage: demo-serve.sh start|stop|down} in
start) start ;;
stop) stop ;;
down)
	stop
	if [ -f "$DEMO_STATE/pg-started" ]; then
		rm -f "$DEMO_STATE/pg-started"
		"$here/pg.sh" down "$PG_STATE"
	fi
	;;
*)
	echo "usage: demo-serve.sh start|stop|down" >&2
	exit 2
	;;
esac
