#!/usr/bin/env bash
# Private PostgreSQL cluster for development and tests (make pg-up / pg-down).
#   scripts/pg.sh up   DIR   initdb into DIR (once), start on a free 127.0.0.1 port with
#                           its unix socket in DIR, create database "rayflow", write the
#                           URL to DIR/url. Idempotent: a running cluster is left alone.
#   scripts/pg.sh down DIR   stop it (fast shutdown); the data stays in DIR.
#   scripts/pg.sh restart DIR  stop then start on the same port (reliability tests).
# PostgreSQL comes from Debian packages (/usr/lib/postgresql/*/bin); when missing it
# is installed with apt-get. initdb refuses to run as root, so as root the server
# runs as the "postgres" OS user (created by the package).
set -euo pipefail
cmd=${1:?usage: pg.sh up|down|restart DIR}
dir=$(mkdir -p "${2:?DIR}" && cd "$2" && pwd)

bindir() {
	local b
	b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
	if [ -z "$b" ] || [ ! -x "$b/initdb" ]; then
		echo "pg: PostgreSQL server binaries not found; installing with apt-get" >&2
		if [ "$(id -u)" = 0 ]; then
			DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2 || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2; }
		else
			sudo DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
		fi
		b=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	fi
	echo "$b"
}

# as runs a command as the cluster's owner.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

BIN=$(bindir)
data=$dir/data
# srv holds what the server itself opens (its data directory, socket and log):
# DIR, unless the server runs as "postgres" (we are root) and that user cannot
# reach DIR, as in a checkout under root's 0700 home. Then the data directory
# lives in a folder of that user's under /var/tmp, keyed by DIR, and DIR/data
# links to it, so DIR stays the one place the Makefile and users look.
srv=$dir
if [ -L "$data" ]; then
	srv=$(dirname "$(readlink "$data")")
elif [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$dir"; then
	if [ -e "$data" ]; then
		echo "pg: the postgres user cannot reach $data: move $dir under a folder that user can traverse, or remove $data" >&2
		exit 1
	fi
	srv=/var/tmp/rayflow-pg/$(printf %s "$dir" | sha256sum | cut -c1-16)
fi
if [ "$srv" != "$dir" ]; then
	data=$srv/data
	if [ "$cmd" != down ] && [ "$cmd" != stop ]; then
		mkdir -p "$data"
		chmod 0755 "$(dirname "$srv")" "$srv"
		chown postgres "$srv" "$data"
		chmod 0700 "$data"
		if [ ! -L "$dir/data" ]; then
			ln -s "$data" "$dir/data"
			echo "pg: the postgres user cannot reach $dir; the data directory is $data (linked as $dir/data)" >&2
		fi
	fi
fi
case $cmd in
up | start | restart)
	if [ "$cmd" = restart ] && [ -f "$data/postmaster.pid" ]; then
		as "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
	fi
	if [ "$(id -u)" = 0 ]; then
		chown postgres "$srv"
		chmod 0755 "$srv"
	fi
	if [ ! -f "$data/PG_VERSION" ]; then
		as "$BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; exit 1; }
	fi
	if as "$BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
		echo "pg: already running: $(cat "$dir/url")"
		exit 0
	fi
	start() {
		echo "$1" >"$dir/port"
		as "$BIN/pg_ctl" -D "$data" -l "$srv/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $1 -k $srv -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=128MB" start >/dev/null
	}
	# The same port as last time (restarts keep the URL), else a free one.
	port=$(cat "$dir/port" 2>/dev/null || freeport)
	if ! start "$port"; then
		port=$(freeport)
		start "$port" || { tail -20 "$srv/server.log" >&2; exit 1; }
	fi
	as "$BIN/psql" -h "$srv" -p "$port" -U postgres -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname='rayflow'" | grep -q 1 ||
		as "$BIN/createdb" -h "$srv" -p "$port" -U postgres rayflow
	echo "postgres://postgres@127.0.0.1:$port/rayflow?sslmode=disable" >"$dir/url"
	echo "pg: running: $(cat "$dir/url")"
	;;
down | stop)
	if [ -f "$data/postmaster.pid" ]; then
		as "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null && echo "pg: stopped"
	else
		echo "pg: not running"
	fi
	;;
*)
	echo "usage: pg.sh up|down|restart DIR" >&2
	exit 2
	;;
esac
