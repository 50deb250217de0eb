#!/usr/bin/env bash
# A private multi-node Ray cluster on this machine: a head and two worker nodes, each its
# own raylet (make ray-cluster-up / ray-cluster-down; the engine/ray multi-node tests use it
# through RAYFLOW_RAY_CLUSTER).
#   scripts/ray-cluster.sh up          start the head (no CPUs: the driver's node) and the
#                                      worker nodes w1 and w2 (1 CPU and a custom resource
#                                      rf_w1 / rf_w2 each, 100 MB object store), every one in
#                                      its own process group and temp dir, on free ports
#                                      (never the shared head's); records them in
#                                      $RAY_CLUSTER_STATE and prints the address
#   scripts/ray-cluster.sh down        stop exactly the process groups that up started
#   scripts/ray-cluster.sh kill NODE   SIGKILL worker node NODE (w1 or w2): its raylet and
#                                      everything in its process group, as a lost machine
#   scripts/ray-cluster.sh restart NODE  start worker node NODE again after a kill
#   scripts/ray-cluster.sh alive       exit 0 when every recorded node is running
#   scripts/ray-cluster.sh address     print the head's address
# Relative paths are from the repository's root. Each node's Ray node ID is in
# $RAY_CLUSTER_STATE/NODE.node_id. Each node's processes see RAYFLOW_CLUSTER_NODE=head|w1|w2 in their environment (the
# tests' leaves report where they ran with it). Settings come from the environment; the
# Makefile passes its own.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:?usage: ray-cluster.sh up|down|kill NODE|restart NODE|alive|address}
RAY_VENV=${RAY_VENV:-.venv-ray}
RAY_CLUSTER_STATE=${RAY_CLUSTER_STATE:-.ray-cluster}
NODES="head w1 w2"
py=$RAY_VENV/bin/python
ray=$RAY_VENV/bin/ray
# A head started where a Ray token is configured requires it: the worker nodes must then
# present it too (engine/ray/bridge.go does the same for the driver).
if [ -z "${RAY_AUTH_MODE:-}" ] && { [ -n "${RAY_AUTH_TOKEN:-}" ] || [ -f "${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}" ]; }; then
	export RAY_AUTH_MODE=token
fi

# group_alive PGID: a process of the group runs (zombies, dead but not yet reaped, do not
# count).
group_alive() {
	ps -o stat= -g "$1" 2>/dev/null | grep -q '^[^Z]'
}

node_alive() {
	[ -f "$RAY_CLUSTER_STATE/$1.pgid" ] && group_alive "$(cat "$RAY_CLUSTER_STATE/$1.pgid")"
}

alive() {
	[ -f "$RAY_CLUSTER_STATE/address" ] || return 1
	for n in $NODES; do node_alive "$n" || return 1; done
}

# free_ports N prints N TCP ports of 127.0.0.1 that were free a moment ago.
free_ports() {
	"$py" - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# On a loaded machine a raylet can take longer than Ray's 30 s to register with the GCS.
export RAY_raylet_start_wait_time_s=${RAY_raylet_start_wait_time_s:-120}

# start NODE ARGS... starts one node (twice at most: a raylet can still time out
# registering) and waits until it is up.
start() {
	if try_start "$@"; then return 0; fi
	echo "ray-cluster: node $1 did not start; once more"
	stop "$1" KILL >/dev/null
	try_start "$@"
}

# try_start NODE ARGS... starts one node's `ray start --block` in a session of its own
# and waits until it is up.
try_start() {
	local node=$1
	shift
	local dir id
	dir=$(mktemp -d /tmp/rfc-"$node"-XXXX)
	echo "$dir" >"$RAY_CLUSTER_STATE/$node.dir"
	read -r nm om al ag me re < <(free_ports 6)
	RAY_USAGE_STATS_ENABLED=0 RAYFLOW_CLUSTER_NODE=$node setsid "$ray" start --block \
		--node-ip-address=127.0.0.1 --temp-dir="$dir" --disable-usage-stats \
		--node-manager-port="$nm" --object-manager-port="$om" \
		--dashboard-agent-listen-port="$al" --dashboard-agent-grpc-port="$ag" \
		--metrics-export-port="$me" --runtime-env-agent-port="$re" \
		--min-worker-port=0 --max-worker-port=0 "$@" \
		>"$RAY_CLUSTER_STATE/$node.log" 2>&1 </dev/null &
	echo $! >"$RAY_CLUSTER_STATE/$node.pgid"
	for _ in $(seq 360); do
		# Up, and its raylet has logged its Ray node ID (the tests name a lost node by it).
		id=$(cat "$dir"/session_*/logs/raylet.out 2>/dev/null |
			sed -n 's/.*Setting node ID node_id=\([0-9a-f]*\).*/\1/p' | head -1 || true)
		if [ -n "$id" ] && grep -q 'Ray runtime started' "$RAY_CLUSTER_STATE/$node.log"; then
			echo "$id" >"$RAY_CLUSTER_STATE/$node.node_id"
			return 0
		fi
		node_alive "$node" || break
		sleep 0.5
	done
	echo "ray-cluster: node $node did not start:"
	cat "$RAY_CLUSTER_STATE/$node.log"
	return 1
}

# start_worker NODE starts worker node NODE (w1 or w2) against the recorded head.
start_worker() {
	start "$1" --address="$(cat "$RAY_CLUSTER_STATE/address")" --num-cpus=1 \
		--resources="{\"rf_$1\": 100}" --object-store-memory=100000000
}

# stop NODE SIGNAL ends one node's process group (TERM first, then KILL) and whatever
# still runs from its temp dir.
stop() {
	local node=$1 pg dir
	[ -f "$RAY_CLUSTER_STATE/$node.pgid" ] || return 0
	pg=$(cat "$RAY_CLUSTER_STATE/$node.pgid")
	kill "-$2" -- "-$pg" 2>/dev/null || true
	for _ in $(seq 40); do
		group_alive "$pg" || break
		sleep 0.25
	done
	kill -KILL -- "-$pg" 2>/dev/null || true
	dir=$(cat "$RAY_CLUSTER_STATE/$node.dir" 2>/dev/null || true)
	if [ -n "$dir" ]; then
		# A process of this node that left its group (none should) still names its temp dir.
		for p in $(pgrep -f -- "$dir" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		rm -rf "$dir"
	fi
	rm -f "$RAY_CLUSTER_STATE/$node".{pgid,dir,node_id}
	echo "ray-cluster: stopped node $node (process group $pg)"
}

case $cmd in
up)
	if alive; then
		echo "ray-cluster-up: already running at $(cat "$RAY_CLUSTER_STATE/address")"
		exit 0
	fi
	if [ -d "$RAY_CLUSTER_STATE" ]; then "$0" down >/dev/null; fi
	mkdir -p "$RAY_CLUSTER_STATE"
	read -r port client dash < <(free_ports 3)
	if ! start head --head --port="$port" --ray-client-server-port="$client" \
		--include-dashboard=false --dashboard-port="$dash" \
		--num-cpus=0 --resources='{"rf_head": 1}' --object-store-memory=100000000; then
		"$0" down
		exit 1
	fi
	addr=127.0.0.1:$port
	echo "$addr" >"$RAY_CLUSTER_STATE/address"
	for w in w1 w2; do
		if ! start_worker "$w"; then
			"$0" down
			exit 1
		fi
	done
	echo "ray-cluster-up: Ray cluster at $addr (head, w1, w2; process groups $(cat "$RAY_CLUSTER_STATE"/{head,w1,w2}.pgid | tr '\n' ' '))"
	echo "$addr"
	;;
down)
	if [ ! -d "$RAY_CLUSTER_STATE" ]; then
		echo "ray-cluster-down: nothing recorded in $RAY_CLUSTER_STATE"
		exit 0
	fi
	for n in w2 w1 head; do stop "$n" TERM; done
	rm -rf "$RAY_CLUSTER_STATE"
	;;
kill)
	node=${2:?usage: ray-cluster.sh kill w1|w2}
	case $node in w1 | w2) ;; *)
		echo "ray-cluster: kill names a worker node, w1 or w2" >&2
		exit 2
		;;
	esac
	if ! node_alive "$node"; then
		echo "ray-cluster: node $node is not running" >&2
		exit 1
	fi
	stop "$node" KILL
	;;
restart)
	node=${2:?usage: ray-cluster.sh restart w1|w2}
	case $node in w1 | w2) ;; *)
		echo "ray-cluster: restart names a worker node, w1 or w2" >&2
		exit 2
		;;
	esac
	if node_alive "$node"; then
		echo "ray-cluster: node $node is running"
		exit 0
	fi
	stop "$node" KILL >/dev/null
	start_worker "$node"
	echo "ray-cluster: node $node restarted (process group $(cat "$RAY_CLUSTER_STATE/$node.pgid"))"
	;;
alive)
	alive
	;;
address)
	cat "$RAY_CLUSTER_STATE/address"
	;;
*)
	echo "usage: ray-cluster.sh up|down|kill NODE|restart NODE|alive|address" >&2
	exit 2
	;;
esac
