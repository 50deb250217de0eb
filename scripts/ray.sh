#!/usr/bin/env bash
# The pinned Ray venv and a local Ray head for development and tests
# (make ray-venv / ray-up / ray-down).
#   scripts/ray.sh venv    create $RAY_VENV with ray[default]==$RAY_VERSION (reused when present)
#   scripts/ray.sh up      start a head (2 CPUs, 512 MiB object store, dashboard on 127.0.0.1) in
#                          its own process group, recorded in $RAY_STATE (pgid, address, log)
#   scripts/ray.sh down    stop the head that up started (only that one)
#   scripts/ray.sh alive   exit 0 when the recorded head is running
# Settings come from the environment; the Makefile passes its own.
set -euo pipefail
cmd=${1:?usage: ray.sh venv|up|down|alive}
PYTHON=${PYTHON:-python3}
RAY_VERSION=${RAY_VERSION:-2.60.0}
RAY_VENV=${RAY_VENV:-.venv-ray}
RAY_STATE=${RAY_STATE:-.ray-local}
RAY_PORT=${RAY_PORT:-6390}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}

alive() {
	[ -f "$RAY_STATE/pgid" ] && [ -f "$RAY_STATE/address" ] && kill -0 -- "-$(cat "$RAY_STATE/pgid")" 2>/dev/null
}

case $cmd in
venv)
	if "$RAY_VENV/bin/python" -c "import sys, ray; sys.exit(ray.__version__ != '$RAY_VERSION')" 2>/dev/null; then
		echo "ray-venv: $RAY_VENV has ray $RAY_VERSION"
	else
		echo "ray-venv: installing ray[default]==$RAY_VERSION into $RAY_VENV"
		"$PYTHON" -m venv "$RAY_VENV"
		"$RAY_VENV/bin/pip" install -q --disable-pip-version-check "ray[default]==$RAY_VERSION"
	fi
	;;
up)
	if alive; then
		echo "ray-up: already running at $(cat "$RAY_STATE/address")"
		exit 0
	fi
	mkdir -p "$RAY_STATE"
	rm -f "$RAY_STATE/address"
	RAY_USAGE_STATS_ENABLED=0 setsid "$RAY_VENV/bin/ray" start --head --block --node-ip-address=127.0.0.1 \
		--port="$RAY_PORT" --num-cpus=2 --object-store-memory=536870912 \
		--dashboard-host=127.0.0.1 --dashboard-port="$RAY_DASHBOARD_PORT" \
		--disable-usage-stats >"$RAY_STATE/log" 2>&1 </dev/null &
	echo $! >"$RAY_STATE/pgid"
	for _ in $(seq 240); do
		if grep -q 'Ray runtime started' "$RAY_STATE/log"; then
			echo "127.0.0.1:$RAY_PORT" >"$RAY_STATE/address"
			echo "ray-up: Ray head at 127.0.0.1:$RAY_PORT (process group $(cat "$RAY_STATE/pgid"))"
			exit 0
		fi
		kill -0 "$(cat "$RAY_STATE/pgid")" 2>/dev/null || break
		sleep 0.5
	done
	echo "ray-up: the head did not start:"
	cat "$RAY_STATE/log"
	"$0" down
	exit 1
	;;
down)
	if [ ! -f "$RAY_STATE/pgid" ]; then
		echo "ray-down: nothing recorded in $RAY_STATE"
		exit 0
	fi
	pg=$(cat "$RAY_STATE/pgid")
	kill -TERM -- "-$pg" 2>/dev/null || true
	for _ in $(seq 40); do
		kill -0 -- "-$pg" 2>/dev/null || break
		sleep 0.25
	done
	kill -KILL -- "-$pg" 2>/dev/null || true
	rm -rf "$RAY_STATE"
	echo "ray-down: stopped process group $pg"
	;;
alive)
	alive
	;;
*)
	echo "usage: ray.sh venv|up|down|alive" >&2
	exit 2
	;;
esac
