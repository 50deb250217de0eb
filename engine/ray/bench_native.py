"""Native Ray driver for make bench-ray: N no-op tasks through the same
windowed ray.wait loop that rayflow's bounded map uses, on the same cluster.

usage: bench_native.py ADDRESS N WINDOW ROUNDS  (prints one JSON line per round)
"""
import json
import sys
import time

import ray


@ray.remote
def noop(x):
    return x


def run(n, window):
    start = time.perf_counter()
    inflight, results, submitted = {}, [None] * n, 0
    while submitted < n or inflight:
        while submitted < n and len(inflight) < window:
            inflight[noop.remote(submitted)] = submitted
            submitted += 1
        ready, _ = ray.wait(list(inflight), num_returns=1, fetch_local=False)
        for ref in ready:
            results[inflight.pop(ref)] = ref
    out = ray.get(results)
    assert out == list(range(n))
    return time.perf_counter() - start


def main():
    address, n, window, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ray.init(address=address, log_to_driver=False)
    run(min(n, 200), window)  # warm the workers
    for _ in range(rounds):
        print(json.dumps({"leaves": n, "seconds": run(n, window)}), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
