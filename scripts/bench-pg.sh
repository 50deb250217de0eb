#!/usr/bin/env bash
# make bench-durable / bench-progress / bench-read: the PostgreSQL benchmarks, on the server
# named by RAYFLOW_TEST_DATABASE_URL, else on the private cluster (scripts/pg.sh up).
#   scripts/bench-pg.sh durable    durable queue: schedule lease hand-over, claim latency, idle queries, throughput, saturation, unique enqueue, fair admission
#   scripts/bench-pg.sh progress   progress storage: chains of 1k-100k nodes, sparse update, heap
#   scripts/bench-pg.sh read       progress reads with the record cache on, then off
#   scripts/bench-pg.sh resume     resumable maps: kill -9 at 50 %, repair, ledger overhead (Ray rows with RAYFLOW_RAY_ADDRESS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
PG_STATE=${PG_STATE:-.pg-local}
what=${1:?usage: bench-pg.sh durable|progress|read|resume}

url=${RAYFLOW_TEST_DATABASE_URL:-}
if [ -z "$url" ]; then
	"$here/pg.sh" up "$PG_STATE" >&2
	url=$(cat "$PG_STATE/url")
fi
export RAYFLOW_TEST_DATABASE_URL=$url

case $what in
durable)
	echo "bench-durable: $url; $(uptime)"
	RAYFLOW_BENCH_DURABLE=1 "$GO" test -count=1 -run '^(TestBenchDurable|TestBenchUnique|TestBenchFair)$' -v -timeout 30m ./durable/ |
		grep -E '^(\||BENCH|---|ok|FAIL)'
	;;
progress)
	echo "bench-progress: $url; $(uptime)"
	RAYFLOW_BENCH_PROGRESS=1 "$GO" test -count=1 -run '^TestBenchProgress$' -v ./progress/pgstore/
	;;
read)
	echo "bench-read: $(uptime)"
	echo '--- warm: the decoded-record cache on (the default)'
	"$GO" test -count=1 -run '^$' -bench '^BenchmarkReads$' -benchtime 200x -timeout 30m ./serve/reader/ | grep -E '^(\||ok|FAIL|---)'
	echo '--- cold: every read decodes and validates every record (RAYFLOW_BENCH_READ_COLD=1)'
	RAYFLOW_BENCH_READ_COLD=1 "$GO" test -count=1 -run '^$' -bench '^BenchmarkReads$' -benchtime 200x -timeout 30m ./serve/reader/ | grep -E '^(\||ok|FAIL|---)'
	;;
resume)
	echo "bench-resume: $url; ray ${RAYFLOW_RAY_ADDRESS:-not set (local rows only)}; $(uptime)"
	RAYFLOW_BENCH_RESUME=1 "$GO" test -count=1 -run '^TestBenchResume$' -v -timeout 30m ./durable/ |
		grep -E '^(\||---|ok|FAIL)'
	;;
*)
	echo "usage: bench-pg.sh durable|progress|read|resume" >&2
	exit 2
	;;
esac
