#!/usr/bin/env bash
# make test: the checks of `make test-checks` against a Ray cluster and a PostgreSQL,
# set-up included.
#   Ray: the cluster named by RAYFLOW_RAY_ADDRESS, else the head of `make ray-up` (both
#   left running), else a head started here and stopped on every exit.
#   PostgreSQL: the server named by RAYFLOW_TEST_DATABASE_URL, else the one of `make
#   pg-up` (both left running), else one started here and stopped on every exit.
# The venv (scripts/ray.sh venv) must exist; the Makefile's test target makes it first.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MAKE=${MAKE:-make}
PG_STATE=${PG_STATE:-.pg-local}
RAY_STATE=${RAY_STATE:-.ray-local}

stop_ray= stop_pg=
trap 'exit 130' INT TERM
trap '[ -z "$stop_ray" ] || "$here/ray.sh" down; [ -z "$stop_pg" ] || "$here/pg.sh" down "$PG_STATE"' EXIT

if [ -n "${RAYFLOW_RAY_ADDRESS:-}" ]; then
	addr=$RAYFLOW_RAY_ADDRESS
	echo "make test: using the Ray cluster at RAYFLOW_RAY_ADDRESS=$addr"
elif "$here/ray.sh" alive; then
	addr=$(cat "$RAY_STATE/address")
	echo "make test: using the Ray head of make ray-up at $addr (left running)"
else
	"$here/ray.sh" up || exit 1
	stop_ray=1
	addr=$(cat "$RAY_STATE/address")
fi

if [ -n "${RAYFLOW_TEST_DATABASE_URL:-}" ]; then
	db=$RAYFLOW_TEST_DATABASE_URL
	echo "make test: using the PostgreSQL at RAYFLOW_TEST_DATABASE_URL"
elif [ -f "$PG_STATE/data/postmaster.pid" ]; then
	db=$(cat "$PG_STATE/url")
	echo "make test: using the PostgreSQL of make pg-up at $db (left running)"
else
	"$here/pg.sh" up "$PG_STATE" || exit 1
	stop_pg=1
	db=$(cat "$PG_STATE/url")
fi

RAYFLOW_RAY_ADDRESS=$addr RAYFLOW_TEST_DATABASE_URL=$db "$MAKE" --no-print-directory test-checks || exit 1
echo "make test: all checks passed"
