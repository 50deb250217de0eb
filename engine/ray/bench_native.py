"""Native Ray driver for make bench-ray: no-op tasks through the same
windowed ray.wait loop that rayflow's bounded map uses, on the same cluster.

usage:
  bench_native.py serve ADDRESS
      connects once, warms the workers, then reads "N WINDOW" lines on stdin
      and answers each with one JSON line {"seconds", "cpu"} (cpu: this
      process's CPU time for the round), so that the Go benchmark can
      interleave its rounds with rayflow's;
  bench_native.py first ADDRESS EXEC_NS
      a fresh driver: ray.init and one task; prints {"init_to_task",
      "exec_to_task"} in seconds: from just before ray.init, and from
      EXEC_NS (the Go side's wall clock just before it started this
      interpreter), to the moment the task started in its worker.
"""
import json
import sys
import time

import ray


@ray.remote
def noop(x):
    return x


@ray.remote
def stamp(_):
    return time.time_ns()


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


def serve(address):
    ray.init(address=address, log_to_driver=False)
    run(200, 64)  # warm the workers
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        n, window = (int(x) for x in line.split())
        cpu = time.process_time()
        seconds = run(n, window)
        print(json.dumps({"seconds": seconds, "cpu": time.process_time() - cpu}), flush=True)
    ray.shutdown()


def first(address, exec_ns):
    t0 = time.time_ns()
    ray.init(address=address, log_to_driver=False)
    started = ray.get(stamp.remote(0))
    print(json.dumps({"init_to_task": (started - t0) / 1e9, "exec_to_task": (started - exec_ns) / 1e9}), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        first(sys.argv[2], int(sys.argv[3]))
