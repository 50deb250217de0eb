"""Native Ray driver for make bench-ray: no-op tasks through the same
windowed ray.wait loop that rayflow's bounded map uses, on the same cluster.

usage:
  bench_native.py serve ADDRESS
      connects once, warms the workers, then reads "N WINDOW [LEAF]" lines on
      stdin and answers each with one JSON line {"seconds", "cpu"} (cpu: this
      process's CPU time for the round), so that the Go benchmark can
      interleave its rounds with rayflow's; LEAF is noop (the default),
      burn2ms or burn200ms (a task spending that much of its thread's CPU
      time, as the Go benchmark's Burn2ms and Burn200ms leaves do);
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


def _burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for _ in range(200):
            pass


@ray.remote
def burn(x, seconds):
    _burn(seconds)
    return x


LEAVES = {
    "noop": lambda i: noop.remote(i),
    "burn2ms": lambda i: burn.remote(i, 0.002),
    "burn200ms": lambda i: burn.remote(i, 0.2),
}


@ray.remote
def stamp(_):
    return time.time_ns()


def run(n, window, leaf="noop"):
    submit = LEAVES[leaf]
    start = time.perf_counter()
    inflight, results, submitted = {}, [None] * n, 0
    while submitted < n or inflight:
        while submitted < n and len(inflight) < window:
            inflight[submit(submitted)] = submitted
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
        fields = line.split()
        n, window = int(fields[0]), int(fields[1])
        leaf = fields[2] if len(fields) > 2 else "noop"
        cpu = time.process_time()
        seconds = run(n, window, leaf)
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
