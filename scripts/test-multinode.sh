#!/usr/bin/env bash
# make test-multinode (one of make test's checks): the multi-node tests (engine/ray and
# durable, TestMultiNode*) on the private cluster of scripts/ray-cluster.sh: items spread
# over nodes, large results crossing nodes, a worker node killed mid-map, the durable
# runner surviving it. Uses the cluster of `make ray-cluster-up` when it runs (and leaves
# it running); otherwise starts one and stops it on every exit. The durable test needs
# RAYFLOW_TEST_DATABASE_URL (it skips without it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
GO=${GO:-go}
RAY_CLUSTER_STATE=${RAY_CLUSTER_STATE:-.ray-cluster}

stop=
trap 'exit 130' INT TERM
trap '[ -z "$stop" ] || "$here/ray-cluster.sh" down' EXIT

if "$here/ray-cluster.sh" alive; then
	echo "test-multinode: using the cluster of make ray-cluster-up (left running)"
else
	"$here/ray-cluster.sh" up || exit 1
	stop=1
fi
RAYFLOW_RAY_ADDRESS=$(cat "$RAY_CLUSTER_STATE/address") RAYFLOW_RAY_CLUSTER=$RAY_CLUSTER_STATE \
	"$GO" test -race -count=1 -p 1 -run '^TestMultiNode' -v ./engine/ray/ ./durable/
