"""rayflow's Ray bridge: the Ray driver that the Go coordinator starts.

It speaks the bridge protocol (version PROTOCOL) on stdin/stdout, and its
task code speaks the leaf-process protocol (version LEAF_PROTOCOL) with the
Go leaf processes it starts in Ray workers. Both are described in one place,
engine/ray/PROTOCOL.md; keep that file in step with any change here.
"""

import ctypes
import json
import os
import re
import struct
import sys
import threading
import time
import traceback
import types
import zlib

PROTOCOL = 4

# A task still pending this long after its cancellation is cancelled again
# (op_cancel).
RECANCEL_AFTER = 2.0

# The protocol stream is a private duplicate of fd 1; fd 1 itself goes to
# stderr so that nothing printed by Ray or by libraries corrupts a frame.
_OUT = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)
_IN = os.fdopen(os.dup(0), "rb", buffering=1 << 20)
_WRITE_LOCK = threading.Lock()


def log(*args):
    print("rayflow-bridge:", *args, file=sys.stderr, flush=True)


# The process that started the bridge (the Go coordinator, its owner).
_OWNER = os.getppid()


def _end_private_cluster():
    """Ends the private cluster this bridge started, and the bridge, as the
    coordinator's kill does: every other process of the bridge's process
    group (the coordinator made the bridge its leader; Ray starts the GCS,
    the raylet and the agents in it), every process below the bridge
    (workers lead groups of their own) and every process naming the
    cluster's session directory is SIGKILLed, until none is left (a process
    forked meanwhile can miss one round), for at most about a second."""
    import signal
    me = os.getpid()
    session = ""
    try:
        session = ray._private.worker._global_node.get_session_dir_path().encode()
    except Exception:
        pass
    doomed = set()
    for _ in range(50):
        procs = {}  # pid -> (ppid, pgrp)
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                if st[0] in ("Z", "X"):
                    continue
                pid = int(name)
                procs[pid] = (int(st[1]), int(st[2]))
                if session and pid not in doomed:
                    with open("/proc/%s/cmdline" % name, "rb") as f:
                        if session in f.read():
                            doomed.add(pid)
            except (OSError, IndexError, ValueError):
                continue
        grown = True
        while grown:
            grown = False
            for pid, (ppid, pgrp) in procs.items():
                if pid not in doomed and (pgrp == me or ppid == me or ppid in doomed):
                    doomed.add(pid)
                    grown = True
        left = [pid for pid in doomed if pid in procs]
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    os._exit(1)


def _watch_owner():
    """Ends the private cluster when the bridge's owner is gone (killed:
    it could not close the engine). The bridge then has another parent;
    the main loop also sees its input close, unless an op blocks it."""
    while os.getppid() == _OWNER:
        time.sleep(0.2)
    log("the owner (pid %d) is gone: ending the private cluster" % _OWNER)
    _end_private_cluster()


def _read_exact(f, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError("stream closed")
        buf += chunk
    return bytes(buf)


def read_frame(f):
    (n,) = struct.unpack(">I", _read_exact(f, 4))
    header = json.loads(_read_exact(f, n))
    sections = [_read_exact(f, size) for size in header.get("sizes", [])]
    return header, sections


def encode_frame(header, sections=()):
    sections = [bytes(s) for s in sections]
    header = dict(header, sizes=[len(s) for s in sections])
    h = json.dumps(header, separators=(",", ":")).encode()
    return b"".join([struct.pack(">I", len(h)), h] + sections)


def send(header, sections=()):
    data = encode_frame(header, sections)
    with _WRITE_LOCK:
        _OUT.write(data)


def send_ok(hs):
    """Sends an "ok" event: the tasks behind handles hs succeeded. Its
    header is written exactly so (PROTOCOL.md), which the coordinator reads
    without a JSON decoder."""
    h = ('{"event":"ok","hs":[%s]}' % ",".join(map(str, hs))).encode()
    with _WRITE_LOCK:
        _OUT.write(len(h).to_bytes(4, "big") + h)


try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: F401

    RAY_VERSION = ray.__version__
    IMPORT_ERROR = None
    try:
        from ray._common.signature import DUMMY_TYPE as _DUMMY
    except Exception:  # another Ray layout: no direct submission
        _DUMMY = None
except Exception as e:  # reported in the handshake
    ray = None
    _DUMMY = None
    RAY_VERSION = None
    IMPORT_ERROR = "%s: %s" % (type(e).__name__, e)


class LeafError(Exception):
    """A leaf's failure: args are (info dict, encoded error value), packed
    by _leaf_error when large. Its text is short: Ray copies an
    exception's text into the task's error object."""

    def __str__(self):
        info = self.args[0] if self.args and isinstance(self.args[0], dict) else {}
        return "leaf %s failed" % info.get("node", "?")


# A leaf task has one return (PROTOCOL.md): the bridge tells a failed leaf
# from a succeeded one by whether that return is an error, reading it only
# when it is in the driver's memory (a small value). A value Ray put in the
# object store (over its max_direct_call_object_size, 100 KiB by default)
# is a success, so a leaf's failure must stay under that: one whose info
# and error chain are over _ERROR_INLINE bytes is packed (zlib), and when
# that is still over, the packed bytes go to the object store and the
# failure carries their reference.
_ERROR_INLINE = 48 << 10


def _leaf_error(info, value):
    """The LeafError of a leaf's failure (info, encoded error chain), small
    enough for Ray to keep it in the owner's memory (see _ERROR_INLINE)."""
    size = len(value) + sum(len(v) for v in info.values() if isinstance(v, str))
    if size <= _ERROR_INLINE:
        return LeafError(info, value)
    hdr = json.dumps(info).encode()
    packed = zlib.compress(len(hdr).to_bytes(4, "big") + hdr + bytes(value), 1)
    if len(packed) <= _ERROR_INLINE:
        return LeafError({"packed": "zlib", "node": info.get("node", "")}, packed)
    return LeafError({"packed": "ref", "node": info.get("node", "")}, ray.put(packed))


def _unpack_error(info, value):
    """A LeafError's (info, encoded error chain), unpacked (_leaf_error)."""
    how = info.get("packed")
    if how is None:
        return info, value
    if how == "ref":
        value = ray.get(value, timeout=60)
    blob = zlib.decompress(value)
    n = int.from_bytes(blob[:4], "big")
    return json.loads(blob[4:4 + n]), blob[4 + n:]


class LeafProcessError(Exception):
    """The leaf's Go process could not start or refused its handshake: args
    are (info dict,) with kind "leaf_start", a reason, the node and a
    message naming the fix (for a build mismatch, both digests)."""


# The leaf-process protocol version this worker speaks (PROTOCOL.md).
LEAF_PROTOCOL = 3

def _start_error(node, reason, message, want="", got=""):
    return LeafProcessError({"kind": "leaf_start", "node": node, "reason": reason, "message": message,
                             "want": want, "got": got})


def _leaf_proc(exe, digest, node):
    """The worker's persistent leaf process for exe, started and
    handshaken (protocol version, binary digest) on first use. A process
    whose digest is not the plan's is refused, whether it is new or not."""
    procs = sys.__dict__.setdefault("_rayflow_leaf_procs", {})
    ent = procs.get(exe)
    if ent is not None and ent[0].poll() is not None:
        ent = None
    if ent is None:
        ent = procs[exe] = _start_leaf(exe, digest, node)
    return _same_build(exe, ent, digest, node)


def _fresh_proc(exe, digest, node):
    """A leaf process of its own for one task that holds accelerators (flag
    "a"). Ray sets CUDA_VISIBLE_DEVICES and the like in this worker's
    environment for such a task only, and restores it after; a child
    process sees the environment it started with, so the persistent leaf
    process would see another task's devices, or all of them. This one is
    started under the task's environment and ended after it (_in_fresh), which
    also frees what it held on the devices: Ray's own default for GPU
    tasks, max_calls=1, ends the whole worker instead."""
    ent = _start_leaf(exe, digest, node)
    try:
        return _same_build(exe, ent, digest, node)
    except LeafProcessError:
        _kill(ent[0])  # not kept for another plan, unlike a persistent one
        raise


def _start_leaf(exe, digest, node):
    """Starts a leaf process of exe and handshakes (the leaf refuses a
    digest other than its own): (process, its digest)."""
    import subprocess

    # The leaf process sets its own parent-death signal (deathsig_linux.go)
    # and exits if its parent is not RAYFLOW_LEAF_PARENT: without a
    # preexec hook, Python spawns it with vfork, not a fork of this
    # worker's address space (~1 instead of ~11 ms of CPU).
    env = dict(os.environ, RAYFLOW_LEAF="1", RAYFLOW_LEAF_PARENT=str(os.getpid()))
    if os.path.exists(exe) and not os.access(exe, os.X_OK):
        # A runtime_env working_dir upload does not keep file modes.
        os.chmod(exe, os.stat(exe).st_mode | 0o111)
    try:
        p = subprocess.Popen(
            [exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
    except OSError as e:
        raise _start_error(node, "start", "starting the leaf process %s: %s" % (exe, e))
    try:
        p.stdin.write(encode_frame({"hello": {"protocol": LEAF_PROTOCOL, "digest": digest}}))
        rd = _LeafReader(p.stdout.fileno(), deadline=time.monotonic() + 120)
        (n,) = struct.unpack(">I", rd.read(4))
        h = json.loads(rd.read(n))
        for size in h.get("sizes", []):
            rd.read(size)
    except (EOFError, BrokenPipeError, OSError, ValueError, TimeoutError) as e:
        _kill(p)
        raise _start_error(node, "start", "the leaf binary %s ended or broke its handshake (%s: %s): does its main call "
                           "ray.ServeLeafIfRequested first, and is it built with this rayflow?" % (exe, type(e).__name__, e))
    if not h.get("ok") or "hello" not in h:
        _kill(p)
        err = h.get("error") or {}
        raise _start_error(node, err.get("reason", "protocol"), err.get("message") or (
            "the leaf binary %s does not speak leaf protocol %d" % (exe, LEAF_PROTOCOL)), err.get("want", ""), err.get("got", ""))
    return (p, h["hello"].get("digest", ""))


def _same_build(exe, ent, digest, node):
    """The process of ent, unless its digest is not the plan's."""
    p, own = ent
    if digest and own != digest:
        raise _start_error(node, "digest_mismatch", "the leaf binary %s is build %s, the plan was made by build %s "
                           "(deploy the same binary, or set a build revision)" % (exe, own, digest), digest, own)
    return p


def _in_fresh(exe, digest, node, run):
    """run(p) in a fresh leaf process p (_fresh_proc), ended after: it
    exits when its input closes."""
    p = _fresh_proc(exe, digest, node)
    try:
        return run(p)
    finally:
        try:
            p.stdin.close()
            p.wait(timeout=5)
        except Exception:
            _kill(p)


def _kill(p):
    try:
        p.kill()
        p.wait(timeout=5)
    except Exception:
        pass


def _drop_proc(exe, p):
    procs = sys.__dict__.get("_rayflow_leaf_procs", {})
    if procs.get(exe, (None,))[0] is p:  # a fresh process (_fresh_proc) is not in procs
        del procs[exe]
    try:
        p.kill()
        p.wait(timeout=5)
    except Exception:
        pass


class _LeafReader:
    """Reads the leaf's response in as few system calls as possible; the
    select timeout keeps bytecodes running so that an asynchronous
    exception (Ray's cooperative cancellation) is seen promptly."""

    def __init__(self, fd, idle=None, deadline=None):
        self.fd = fd
        self.buf = bytearray()
        self.idle = idle
        self.deadline = deadline

    def read(self, n):
        import select

        while len(self.buf) < n:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise TimeoutError("no answer in time")
            r, _, _ = select.select([self.fd], [], [], 0.02 if self.idle else 0.05)
            if self.idle:
                self.idle()
            if not r:
                continue
            chunk = os.read(self.fd, max(1 << 16, n - len(self.buf)))
            if not chunk:
                raise EOFError("leaf process closed its output")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class _Events:
    """Forwards a leaf's progress events to the collector actor and writes
    each acknowledgement back to the leaf process."""

    def __init__(self, actor, stdin):
        self.actor = actor
        self.stdin = stdin
        self.pending = {}  # ref -> seq

    def push(self, seq, wire):
        self.pending[self.actor.push.remote(wire)] = seq

    def poll(self, timeout=0):
        if not self.pending:
            return
        refs = list(self.pending)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout, fetch_local=True)
        for ref in ready:
            seq = self.pending.pop(ref)
            try:
                verdict = ray.get(ref)
                ack = {"ack": seq, "ok": verdict == b"", "reason": verdict.decode()}
            except Exception:
                ack = {"ack": seq, "ok": False, "reason": "ack_failed"}
            try:
                self.stdin.write(encode_frame(ack))
            except (BrokenPipeError, OSError):
                pass


def _execution():
    """This Ray task's identity for its STARTED event (best effort)."""
    out = {"ray_task_id": None, "ray_job_id": None, "ray_node_id": None, "ray_worker_id": None,
           "assigned_resources": {}}
    try:
        ctx = ray.get_runtime_context()
        out["ray_task_id"] = ctx.get_task_id()
        out["ray_job_id"] = ctx.get_job_id()
        out["ray_node_id"] = ctx.get_node_id()
        out["ray_worker_id"] = ctx.get_worker_id()
        out["assigned_resources"] = {k: float(v) for k, v in ctx.get_assigned_resources().items() if v >= 0}
    except Exception as e:
        log("execution identity", type(e).__name__, e)
    return out


def _leaf_task(head, *rest):
    """A leaf's Ray task. head packs the spec and, in the common case, the
    inline input, so that a leaf is a one-argument task (each argument costs
    serialization on submit and deserialization here): a big-endian uint32
    spec length, the spec ("exe NUL name NUL node NUL bootstrap NUL digest NUL
    lib NUL lib_rev NUL ident NUL flags", see _spec) and the input's bytes unless flags
    hold "r". rest holds, in this
    order, the bound value ("b"), the input as an object-store value ("r"),
    the progress binding ("p") and the W3C traceparent of the leaf's node
    span ("t"). Flags "w" alone mark the warm-up (_warm); "a" a task that
    holds accelerators (_fresh_proc)."""
    (n,) = struct.unpack_from(">I", head)
    spec, flags = _parse_spec(head[4:4 + n])
    if flags == "w":
        return _warm(spec)
    i = 0
    bound = arg = prog = None
    if "b" in flags:
        bound, i = rest[i], i + 1
    if "k" in flags:
        # A batch: base, count, map id, then each input (length-prefixed).
        off = 4 + n
        base, count, mlen = struct.unpack_from(">III", head, off)
        off += 12
        mapid = head[off:off + mlen].decode()
        off += mlen
        inputs = []
        for _ in range(count):
            (size,) = struct.unpack_from(">I", head, off)
            inputs.append(head[off + 4:off + 4 + size])
            off += 4 + size
        trace = rest[i] if "t" in flags else None
        return _call_batch(spec, bound, mapid, base, inputs, trace, "a" in flags)
    if "r" in flags:
        arg, i = rest[i], i + 1
    else:
        arg = head[4 + n:]
    if "p" in flags:
        prog, i = rest[i], i + 1
    trace = rest[i] if "t" in flags else None
    return _call_leaf(spec, bound, arg, "", prog, trace, "a" in flags)


def _parse_spec(raw):
    """Splits a leaf head's spec ("exe NUL name NUL node NUL bootstrap NUL
    digest NUL lib NUL lib_rev NUL ident NUL flags") into its fields and its
    flags."""
    parts = raw.decode().split("\x00")
    return tuple(parts[:8]), parts[8]


_IDENTS = {}  # the run identity's JSON -> its parsed form, for header dicts


def _identified(header, ident):
    """Adds the run identity (its JSON, "" for none) to a leaf header, so
    that the step's context carries it (sdk.AttemptFrom)."""
    if ident:
        obj = _IDENTS.get(ident)
        if obj is None:
            if len(_IDENTS) >= 256:
                _IDENTS.clear()
            obj = _IDENTS[ident] = json.loads(ident)
        header["identity"] = obj


def _traced(header, trace):
    """Adds the trace context and this Ray task's id to a leaf header."""
    if trace:
        header["trace"] = trace
        try:
            header["ray_task_id"] = ray.get_runtime_context().get_task_id()
        except Exception as e:
            log("task id", type(e).__name__, e)


def _read_reply(fd):
    """Reads one reply frame from the leaf process with blocking reads (the
    whole frame usually arrives in one): (header, sections). A force
    cancellation kills the worker, and the leaf process with it, so nothing
    needs to interrupt the read."""
    buf = os.read(fd, 1 << 16)
    if len(buf) < 4:
        buf = _read_more(fd, buf, 4)
    n = int.from_bytes(buf[:4], "big")
    if len(buf) < 4 + n:
        buf = _read_more(fd, buf, 4 + n)
    h, sizes = _reply_header(buf[4:4 + n])
    end = 4 + n + sum(sizes)
    if len(buf) < end:
        buf = _read_more(fd, buf, end)
    secs, off = [], 4 + n
    for size in sizes:
        secs.append(buf[off:off + size])
        off += size
    return h, secs


def _write_all(fd, data):
    n = os.write(fd, data)
    if n < len(data):
        view = memoryview(data)
        while n < len(data):
            n += os.write(fd, view[n:])


def _read_more(fd, buf, n):
    parts, have = [buf], len(buf)
    while have < n:
        chunk = os.read(fd, max(1 << 16, n - have))
        if not chunk:
            raise EOFError("leaf process closed its output")
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


_HEADERS = {}  # (name, bound, bootstrap, kind, ident) -> the request header's JSON up to its node


def _request(name, node, bound, boot, kind, ident, arg):
    """A plain leaf request frame (no progress, no trace), its header
    written without a dict per leaf. ident is the run identity's JSON ("" for
    none), copied verbatim (the coordinator wrote it)."""
    key = (name, bound is not None, boot, kind, ident)
    pre = _HEADERS.get(key)
    if pre is None:
        if len(_HEADERS) >= 256:
            _HEADERS.clear()
        pre = _HEADERS[key] = '{"name":%s,"bound":%s,"bootstrap":%s,"kind":%s,%s"node":' % (
            json.dumps(name), "true" if bound is not None else "false", "true" if boot == "1" else "false", json.dumps(kind),
            '"identity":%s,' % ident if ident else "")
    bound = bound or b""
    h = ('%s%s,"sizes":[%d,%d]}' % (pre, _json_str(node), len(bound), len(arg))).encode()
    return b"".join((len(h).to_bytes(4, "big"), h, bound, arg))


def _json_str(s):
    """s as a JSON string: a node id (printable ASCII, no quote or
    backslash, the common case) without the encoder."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    return json.dumps(s)


_OK_REPLY = b'{"ok":true,"sizes":['


def _reply_header(hb):
    """(header, section sizes) of a reply's header bytes hb; a success's
    header (the common case) is read without the JSON decoder."""
    if hb.startswith(_OK_REPLY) and hb.endswith(b"]}"):
        size = hb[len(_OK_REPLY):-2]
        if size.isdigit():
            return _OK, (int(size),)
    h = json.loads(hb)
    return h, h.get("sizes") or ()


def _split_reply(buf):
    """The reply frame in buf: (header, sections)."""
    hn = int.from_bytes(buf[:4], "big")
    h, sizes = _reply_header(buf[4:4 + hn])
    secs, off = [], 4 + hn
    for size in sizes:
        secs.append(buf[off:off + size])
        off += size
    return h, secs


_OK = {"ok": True}  # a success's header, shared: read, never written


def _lib_call(path, want, node, frame):
    """Runs one leaf request frame in this worker's process through the
    leaf library at path (loaded once per worker): (header, sections). A
    library whose VCS revision is not want (when set) is refused, as a leaf
    process whose digest is not the plan's."""
    ent = getattr(sys, "_rayflow_leaf_libs", _NO_LIBS).get(path) or _load_lib(path, node)
    lib, got, free = ent
    if want and got != want:
        raise _start_error(node, "digest_mismatch", "the leaf library %s is build %s, the plan was made by build %s "
                           "(build the library from the same checkout)" % (path, got or "(no VCS revision)", want), want, got)
    out, n = ctypes.c_void_p(), ctypes.c_size_t()
    lib.rayflow_leaf_call(frame, len(frame), ctypes.byref(out), ctypes.byref(n))
    try:
        buf = ctypes.string_at(out, n.value)
    finally:
        free(out)  # libc's free: rayflow_leaf_free is free too, but calling it would enter Go once more
    return _split_reply(buf)


_NO_LIBS = {}  # read only: what _lib_call sees before _load_lib made the table


def _load_lib(path, node):
    """Loads the leaf library at path once per process: (library, its VCS
    identity, libc's free). The table lives in sys, not in this module,
    because Ray unpickles the module's functions into more than one
    namespace, and a second Go runtime in one process would not survive; and
    because the driver pickles this module's globals with its functions,
    which must hold no ctypes object."""
    libs = sys.__dict__.setdefault("_rayflow_leaf_libs", {})
    ent = libs.get(path)
    if ent is not None:
        return ent
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise _start_error(node, "start", "loading the leaf library %s: %s" % (path, e))
    lib.rayflow_leaf_call.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(ctypes.c_size_t)]
    lib.rayflow_leaf_call.restype = ctypes.c_int
    lib.rayflow_leaf_free.argtypes = [ctypes.c_void_p]
    lib.rayflow_leaf_identity.restype = ctypes.c_void_p
    lib.rayflow_leaf_protocol.restype = ctypes.c_int
    proto = lib.rayflow_leaf_protocol()
    if proto != LEAF_PROTOCOL:
        raise _start_error(node, "protocol", "the leaf library %s speaks leaf protocol %d, the worker %d (rebuild it with "
                           "this rayflow)" % (path, proto, LEAF_PROTOCOL), str(LEAF_PROTOCOL), str(proto))
    p = lib.rayflow_leaf_identity()
    try:
        got = ctypes.string_at(p).decode()
    finally:
        lib.rayflow_leaf_free(p)
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    ent = libs[path] = (lib, got, free)
    return ent


def _roundtrip(exe, p, node, frame, events=None):
    """Sends one request frame to the leaf process and reads its reply; with
    events (a leaf that reports progress) the leaf's events are forwarded
    to the collector actor meanwhile and reach it before the reply counts.
    Without events: one write, blocking reads. A leaf process that dies
    mid-leaf fails this Ray worker, so that Ray treats it as a system
    failure (retried per max_retries)."""
    try:
        if events is None:
            _write_all(p.stdin.fileno(), frame)
            return _read_reply(p.stdout.fileno())
        p.stdin.write(frame)
        rd = _LeafReader(p.stdout.fileno(), events.poll)
        while True:
            (n,) = struct.unpack(">I", rd.read(4))
            h = json.loads(rd.read(n))
            secs = [rd.read(s) for s in h.get("sizes", [])]
            if "event" not in h:
                break
            events.push(h["event"], secs[0])
        events.poll(timeout=2.0)
        return h, secs
    except KeyboardInterrupt:
        _drop_proc(exe, p)  # cancelled: the leaf stops with its process
        raise
    except (EOFError, BrokenPipeError, OSError) as e:
        _drop_proc(exe, p)
        if _cancelled():
            # Ray's force-cancel ends the worker's child processes, the leaf
            # process among them, before the worker itself: the leaf was
            # stopped, it did not die. The task ends as cancelled, and Ray
            # ends the worker as it intends to; exiting here instead would
            # make Ray report an unexpected worker death.
            raise KeyboardInterrupt("the leaf's task was cancelled")
        print("rayflow leaf process for %s died: %s" % (node, e), file=sys.stderr, flush=True)
        os._exit(1)


def _cancelled():
    """Whether Ray cancelled the task this worker runs."""
    try:
        return bool(ray.get_runtime_context().is_canceled())
    except Exception:
        return False


def _call_leaf(spec, bound, arg, kind="", prog=None, trace=None, fresh=False):
    """Runs one leaf: in the leaf library when the engine has one, else in
    the worker's leaf process; fresh (a task that holds accelerators) in a
    leaf process of its own. Returns the encoded result, or raises the
    leaf's failure (_leaf_error)."""
    exe, name, node, boot, digest, lib, librev, ident = spec
    frame = None
    if prog is None and not trace:
        # The common case (every map item): a header without a dict.
        frame = _request(name, node, bound, boot, kind, ident, arg)
        if lib and not fresh:
            h, secs = _lib_call(lib, librev, node, frame)
            if h.get("ok"):
                return secs[0]
            raise _leaf_error(h.get("error", {}), secs[0] if secs else b"")
    if fresh:
        return _in_fresh(exe, digest, node, lambda p: _leaf_in(exe, p, spec, bound, arg, kind, prog, trace, frame))
    return _leaf_in(exe, _leaf_proc(exe, digest, node), spec, bound, arg, kind, prog, trace, frame)


def _leaf_in(exe, p, spec, bound, arg, kind, prog, trace, frame):
    """Runs one leaf in leaf process p (frame: its request, unless the leaf
    reports progress or is traced)."""
    _, name, node, boot = spec[:4]
    events = None
    if prog is not None or trace:
        header = {"name": name, "node": node, "bound": bound is not None, "bootstrap": boot == "1", "kind": kind}
        _identified(header, spec[7])
        _traced(header, trace)
        if prog is not None:
            header["progress"] = prog[1]
            header["execution"] = _execution()
            events = _Events(prog[0], p.stdin)
        frame = encode_frame(header, [bound or b"", arg])
    h, secs = _roundtrip(exe, p, node, frame, events)
    if h.get("ok"):
        return secs[0]
    raise _leaf_error(h.get("error", {}), secs[0] if secs else b"")


def _call_batch(spec, bound, mapid, base, inputs, trace=None, fresh=False):
    """Runs a batch of map items in the worker's leaf process (PROTOCOL.md),
    or the library, or (fresh) a leaf process of its own: returns the
    status and one result per item, or raises the failing item's
    LeafError."""
    exe, name, node, boot, digest, lib, librev, ident = spec
    header = {"name": name, "node": node, "bound": bound is not None, "bootstrap": boot == "1", "kind": "batch",
              "map": mapid, "base": base, "n": len(inputs)}
    _identified(header, ident)
    _traced(header, trace)
    frame = encode_frame(header, [bound or b""] + inputs)
    if fresh:
        h, secs = _in_fresh(exe, digest, node, lambda p: _roundtrip(exe, p, node, frame))
    elif lib and not trace:
        h, secs = _lib_call(lib, librev, node, frame)
    else:
        h, secs = _roundtrip(exe, _leaf_proc(exe, digest, node), node, frame)
    if h.get("ok"):
        return (b"",) + tuple(secs)
    raise _leaf_error(h.get("error", {}), secs[0] if secs else b"")


class ActorLimitError(Exception):
    """A result-buffer or fold actor refused a transition that would exceed
    one of its limits; args are (what, bytes, limit, message)."""


class ActorProtocolError(Exception):
    """A result-buffer or fold actor got a call that breaks its protocol."""


def _limit(what, n, limit, msg):
    return ActorLimitError(what, int(n), int(limit), msg)


class _BufferActor:
    """Keeps a bounded map's encoded results by input index. Appends are
    transactional: the item count and the retained encoded bytes are checked
    before anything is kept. Finalize returns a small acknowledgement and the
    ordered JSON array as two direct returns."""

    def __init__(self, max_items, max_bytes):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.items = {}
        self.bytes = 0

    def ready(self):
        return b"ready"

    def add(self, index, item):
        item = bytes(item)
        if index in self.items or index < 0:
            raise ActorProtocolError("item %d appended twice" % index)
        if index >= self.max_items or len(self.items) + 1 > self.max_items:
            raise _limit("items", len(self.items) + 1, self.max_items,
                         "the result buffer would hold more than %d items" % self.max_items)
        total = self.bytes + len(item)
        if total > self.max_bytes:
            raise _limit("retained", total, self.max_bytes,
                         "the result buffer would retain %d encoded bytes (item %d: %d bytes), over its limit of %d"
                         % (total, index, len(item), self.max_bytes))
        self.items[index] = item
        self.bytes = total
        return b"ok"

    def finalize(self, n):
        if len(self.items) != n or any(i not in self.items for i in range(n)):
            raise ActorProtocolError("finalize with %d items, buffer holds %d" % (n, len(self.items)))
        out = b"[" + b",".join(self.items[i] for i in range(n)) + b"]"
        ack = json.dumps({"items": n, "bytes": self.bytes}).encode()
        self.items = {}
        return ack, out


class _FoldActor:
    """A strict input-order left fold. The accumulator stays encoded here;
    the reducer runs in this actor's persistent Go leaf process. Out-of-order
    items are retained (up to max_retained) until the contiguous prefix can
    be folded. Every transition is transactional: the item, each resulting
    accumulator and the combined state (accumulator plus retained items) are
    checked against max_bytes before the state changes."""

    def __init__(self, spec, initial, max_bytes, max_retained):
        self.spec = tuple(spec.split("\x00"))  # _spec's fields
        self.acc = bytes(initial)
        self.max_bytes = max_bytes
        self.max_retained = max_retained
        self.pending = {}
        self.pending_bytes = 0
        self.next = 0

    def ready(self):
        if len(self.acc) > self.max_bytes:
            raise _limit("initial", len(self.acc), self.max_bytes,
                         "the initial accumulator is %d encoded bytes, over the fold's limit of %d"
                         % (len(self.acc), self.max_bytes))
        # Start the Go process and check that it knows the reducer.
        _call_leaf(self.spec, b"", b"", "check_reducer")
        return b"ready"

    def add(self, index, item):
        item = bytes(item)
        if index < self.next or index in self.pending:
            raise ActorProtocolError("item %d added twice" % index)
        if len(item) > self.max_bytes:
            raise _limit("item", len(item), self.max_bytes,
                         "item %d is %d encoded bytes, over the fold's limit of %d"
                         % (index, len(item), self.max_bytes))
        pending = dict(self.pending)
        pending[index] = item
        retained = len(pending) - (1 if self.next in pending else 0)
        if retained > self.max_retained:
            raise ActorProtocolError("%d out-of-order items retained, at most %d" % (retained, self.max_retained))
        acc, nxt = self.acc, self.next
        while nxt in pending:
            acc = _call_leaf(self.spec, acc, pending.pop(nxt), "reduce")
            if len(acc) > self.max_bytes:
                raise _limit("accumulator", len(acc), self.max_bytes,
                             "the accumulator after item %d is %d encoded bytes, over the fold's limit of %d"
                             % (nxt, len(acc), self.max_bytes))
            nxt += 1
        pbytes = sum(len(v) for v in pending.values())
        if len(acc) + pbytes > self.max_bytes:
            raise _limit("state", len(acc) + pbytes, self.max_bytes,
                         "the fold would hold %d encoded bytes (accumulator %d, %d retained items %d), over its limit of %d"
                         % (len(acc) + pbytes, len(acc), len(pending), pbytes, self.max_bytes))
        self.acc, self.next, self.pending, self.pending_bytes = acc, nxt, pending, pbytes
        return json.dumps({"incorporated": nxt}).encode()

    def finalize(self, n):
        if self.next != n or self.pending:
            raise ActorProtocolError("finalize after %d items, folded %d" % (n, self.next))
        ack = json.dumps({"items": n, "bytes": len(self.acc)}).encode()
        return ack, self.acc


class _ProgressActor:
    """A run's progress collector on Ray: it only buffers bounded encoded
    events (every graph semantic is the coordinator's, in Go). An event over
    the 32 KiB wire cap, or one that would overflow the buffer, is refused
    (the verdict is the push's return: b"" accepted, else the reason)."""

    MAX_WIRE = 32 * 1024

    def __init__(self, max_events, max_bytes):
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.buf = []
        self.bytes = 0
        self.stats = {"accepted": 0, "rejected_size": 0, "rejected_overflow": 0, "drains": 0}

    def ready(self):
        return b"ready"

    def push(self, wire):
        wire = bytes(wire)
        if len(wire) > self.MAX_WIRE:
            self.stats["rejected_size"] += 1
            return b"payload_too_large"
        if len(self.buf) >= self.max_events or self.bytes + len(wire) > self.max_bytes:
            self.stats["rejected_overflow"] += 1
            return b"buffer_full"
        self.buf.append(wire)
        self.bytes += len(wire)
        self.stats["accepted"] += 1
        return b""

    def drain(self):
        self.stats["drains"] += 1
        out = [json.dumps(self.stats).encode(), b"\n"]
        for w in self.buf:
            out.append(struct.pack(">I", len(w)))
            out.append(w)
        self.buf, self.bytes = [], 0
        return b"".join(out)


def _spec(req):
    """A leaf's spec string: exe, name, node, bootstrap flag, digest, the
    leaf library and its revision ("" for none), and the run identity's
    JSON ("" for none)."""
    return "%s\x00%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%s" % (
        req["exe"], req["name"], req["node"], bool(req.get("bootstrap")), req.get("digest") or "", req.get("lib") or "",
        req.get("lib_rev") or "", req.get("ident") or "")


def _warm(spec):
    """The warm-up (a leaf task with flags "w"): starts this worker's
    persistent leaf process (its handshake, without a digest check: each
    leaf's request is checked against the digest it reports), or loads the
    leaf library, so that the first leaf finds a running worker that has
    imported the leaf function, and its leaf process or library."""
    exe, _name, node, _boot, _digest, lib, _librev, _ident = spec
    if lib:
        _load_lib(lib, node)
    else:
        _leaf_proc(exe, "", node)
    return b""


def _join_local(args):
    """Joins the values into a JSON array in the bridge when every one is
    already in this process: inline bytes, or a finished task's small
    result, which Ray keeps in the owner's (this driver's) memory store. A
    chunk of a plain map's results is usually all of that: joining it here
    costs a fraction of a collector task (no argument inlining, no
    deserialization in a worker, and no extra worker process started beside
    the running leaves). Anything else (a value in the object store, a
    pending or failed task, no core worker API) returns None: the caller
    submits a collector task."""
    try:
        cw = ray._private.worker.global_worker.core_worker
        refs = [a for a in args if isinstance(a, ray.ObjectRef)]
        if not all(cw.object_exists(r, memory_store_only=True) for r in refs):
            return None
        got = iter(ray.get(refs, timeout=0) if refs else ())
        vals = [bytes(next(got)) if isinstance(a, ray.ObjectRef) else bytes(a) for a in args]
    except Exception:
        return None
    return b"[" + b",".join(vals) + b"]"


def _collect_json(*items):
    return b"", b"[" + b",".join(items) + b"]"


def _concat_json(*arrays):
    """Concatenates JSON arrays (as _collect_json writes them) without
    decoding their elements."""
    return b"", b"[" + b",".join(bytes(a)[1:-1] for a in arrays if len(a) > 2) + b"]"


# Direct submission (RAYFLOW_RAY_DIRECT_SUBMIT=0 turns it off). Ray's
# .remote() recomputes, for every task, what is the same for every task of
# one prepared remote function (its resources, retries, scheduling strategy
# and runtime env, the export check) before it calls the core worker's
# submit_task; that is about half of its CPU (~200 µs of a ~400 µs
# submission here). _Prepared captures the arguments .remote() passes to
# submit_task for its first task and submits the later ones with the same
# arguments and only the task's own arguments replaced.
DIRECT_SUBMIT = os.environ.get("RAYFLOW_RAY_DIRECT_SUBMIT", "1") != "0"
_CAPTURE = {}  # the capture in progress: "args" once submit_task ran


def _capturing_invocation(invocation):
    """Ray's invocation decorator hook (the function's
    __ray_invocation_decorator__): while _Prepared captures, the invocation
    is rebuilt around a stand-in for its global worker whose core worker
    records submit_task's arguments and passes the call on. Nothing global
    is replaced, so the waiter thread's Ray calls are unaffected. Anything
    unexpected leaves the invocation as it is (no capture: .remote() stays
    in use)."""
    if "want" not in _CAPTURE:
        return invocation
    code = invocation.__code__
    if "worker" not in code.co_freevars or not invocation.__closure__:
        return invocation
    i = code.co_freevars.index("worker")
    worker = invocation.__closure__[i].cell_contents
    real = getattr(worker, "core_worker", None)
    if real is None:
        return invocation

    class _CoreWorker:
        def submit_task(self, *args):
            _CAPTURE["args"] = args
            return real.submit_task(*args)

    stand_in = types.SimpleNamespace(core_worker=_CoreWorker(), debugger_breakpoint=worker.debugger_breakpoint)
    cells = list(invocation.__closure__)
    cells[i] = types.CellType(stand_in)
    return types.FunctionType(code, invocation.__globals__, invocation.__name__, invocation.__defaults__, tuple(cells))


# The bridge's prepared leaf functions capture their submission arguments
# through Ray's invocation decorator hook (_Prepared).
_leaf_task.__ray_invocation_decorator__ = _capturing_invocation


def _flat(args):
    """Positional arguments as Ray's flatten_args lays them out."""
    out = []
    for a in args:
        out.append(_DUMMY)
        out.append(a)
    return out


class _Prepared:
    """A prepared remote function (one option set) whose tasks after the
    first go straight to the core worker (DIRECT_SUBMIT)."""

    def __init__(self, f):
        self.f = f
        self.fast = None  # (submit_task, arguments before the task's, after)
        self.direct = 0  # tasks submitted directly

    def remote(self, *args):
        if self.fast is None:
            return self._first(args)
        submit, pre, post = self.fast
        refs = submit(*pre, _flat(args), *post)
        self.direct += 1
        return refs[0] if len(refs) == 1 else refs

    def _first(self, args):
        if not DIRECT_SUBMIT or _DUMMY is None:
            return self.f.remote(*args)
        _CAPTURE.clear()
        _CAPTURE["want"] = True
        try:
            out = self.f.remote(*args)
        finally:
            got = _CAPTURE.pop("args", None)
            _CAPTURE.clear()
        # Use the capture only when it has the expected shape: the task's
        # own arguments in third place, no debugger breakpoint.
        if (got is not None and len(got) > 10 and got[2] == _flat(args) and got[10] == b""
                and ray._private.worker.global_worker.debugger_breakpoint == b""):
            core = ray._private.worker.global_worker.core_worker
            self.fast = (core.submit_task, got[:2], got[3:])
        return out


def _holds_accelerators(opts):
    """Whether Ray gives a task with these options accelerator ids (and sets
    CUDA_VISIBLE_DEVICES or its like for it): GPUs, or a custom resource
    that is one of Ray's accelerators (neuron_cores, TPU, ...)."""
    if (opts.get("num_gpus") or 0) > 0:
        return True
    res = opts.get("resources") or {}
    if not res:
        return False
    from ray._private import accelerators

    return any((res.get(n) or 0) > 0 for n in accelerators.get_all_accelerator_resource_names())


# The status of a leaf task's handle: the task's one return is its own
# status (Bridge.statuses).
_SELF = object()


class Bridge:
    """The ref table, the ops and the waiter.

    Handles are chosen by the coordinator, so creating ops (put, submit,
    collect) need no response: the coordinator pipelines them. Every task
    handle is watched: when it becomes ready the waiter reports it in a
    batched "ready" event (id 0) with its success or failure.
    """

    def __init__(self):
        self.table = {}
        # Status refs already cancelled (op_cancel), dropped on release.
        self.cancelled = {}  # ref -> when it was last cancelled
        self.started_local = False
        self.leaf = None
        self.plain = None
        self.collect = None
        self.concat = None
        self.variants = {}  # option set id (and batch size) -> prepared remote function
        self.optsets = {}  # option set id -> options
        self.accelerated = set()  # option set ids whose tasks hold accelerators (flag "a")
        self.actors = {}  # actor handle -> ActorHandle
        self.cond = threading.Condition()
        self.watched = {}  # payload ref -> (handle, status ref or _SELF)
        # Payload refs whose result goes with their ready event when it is
        # at most this many bytes (submit's "inline": a resumable map's
        # items, whose results the coordinator records).
        self.inline = {}  # payload ref -> max bytes
        # Handles whose creating op failed (Ray refused the submission):
        # their failure, which get and wait answer until they are released.
        self.failed = {}  # handle -> error info
        self.waits = []  # [req_id, [(handle, payload_ref, status_ref)], deadline, all]
        self.waiter = None
        self.stopping = False  # set before ray.shutdown: the waiter stops

    def add(self, h, payload, status):
        """Adds handle h: payload is its value, status (a ref, or _SELF for a
        leaf task, whose value is its own status) tells when its task ended
        and whether it failed; None: not a task (not watched)."""
        self.table[h] = (payload, status)
        if status is not None:
            with self.cond:
                self.watched[payload] = (h, status)
                self.cond.notify()

    def refs(self, handles):
        return [(h,) + self.table[h] for h in handles if h in self.table]

    # --- ops
    def op_init(self, req, _):
        address = req.get("address") or None
        kw = dict(log_to_driver=req.get("log_to_driver", True),
                  include_dashboard=False, configure_logging=True)
        if req.get("runtime_env"):
            kw["runtime_env"] = req["runtime_env"]
        if address in (None, "", "local"):
            kw.update(num_cpus=req.get("num_cpus") or None,
                      object_store_memory=req.get("object_store_memory") or None)
            # address="local" always starts a new private cluster, even when
            # another one runs on this machine.
            ray.init(address="local", **{k: v for k, v in kw.items() if v is not None})
            self.started_local = True
            threading.Thread(target=_watch_owner, daemon=True).start()
        else:
            kw.pop("include_dashboard")
            ray.init(address=address, **kw)
        # One return: the leaf's result, or its failure (PROTOCOL.md); a
        # batch's task has its status first, then one return per item.
        self.leaf = ray.remote(num_returns=1)(_leaf_task)
        self.plain = _Prepared(self.leaf)  # leaves without options
        self.collect = ray.remote(num_returns=2, num_cpus=0, max_retries=0)(_collect_json)
        self.concat = ray.remote(num_returns=2, num_cpus=0, max_retries=0)(_concat_json)
        self.waiter = threading.Thread(target=self.wait_loop, daemon=True)
        self.waiter.start()
        res = ray.cluster_resources()
        gcs = ray.get_runtime_context().gcs_address
        session, raylet = "", ""
        try:
            node = ray._private.worker._global_node
            session = node.get_session_dir_path()
            raylet = "%s:%d" % (node.node_ip_address, node.node_manager_port)
        except Exception as e:
            log("session dir", type(e).__name__, e)
        return {"cluster_resources": res, "ray": RAY_VERSION, "gcs_address": gcs, "session_dir": session,
                "raylet_address": raylet, "private": self.started_local}, []

    def arg(self, a, sections):
        if "h" in a:
            return self.table[a["h"]][0]
        return sections[a["s"]]

    def op_submit(self, req, sections):
        """Submits a batch of leaves (one frame, no reply). Each item's
        option set is named by an id ("o"); the item that first uses an id
        carries its options, and the prepared remote function is kept per id,
        so .options() runs once per distinct option set, not per leaf."""
        for it in req["items"]:
            try:
                self.submit_one(it, sections)
            except Exception as e:
                log("submit failed:", traceback.format_exc())
                hs = [it["h"]] + list((it.get("batch") or {}).get("ih", ()))
                self.fail(hs, {"kind": "submit", "type": type(e).__name__, "message": str(e)})

    def fail(self, hs, err):
        """Fails handles whose creating op raised: a ready event now, and
        the same failure for every later get or wait until release."""
        for h in hs:
            self.failed[h] = err
        send({"id": 0, "event": "ready", "ready": [{"h": h, "ok": False, "error": err} for h in hs]})

    def submit_one(self, it, sections):
        oid = it.get("o", 0)
        if oid and oid not in self.optsets:
            self.optsets[oid] = it["options"]
            try:
                if _holds_accelerators(it["options"]):
                    self.accelerated.add(oid)
                self.variants[oid] = _Prepared(self.leaf.options(**it["options"]))
            except Exception as e:
                # Only the set's first item carries its options: the later
                # ones are refused alike.
                self.variants[oid] = e
                raise
        batch = it.get("batch")
        if batch is not None:
            n = len(batch["ih"])
            f = self.variants.get((oid, n))
            if f is None:
                f = self.variants[(oid, n)] = _Prepared(self.leaf.options(num_returns=n + 1, **self.optsets.get(oid, {})))
        else:
            f = self.variants[oid] if oid else self.plain
            if isinstance(f, Exception):
                raise f
        flags = "a" if oid in self.accelerated else ""
        rest = []
        if it.get("bound") is not None:
            flags += "b"
            rest.append(sections[it["bound"]])
        a = it.get("arg") or {}
        if batch is not None:
            flags += "k"
            m = batch["map"].encode()
            parts = [struct.pack(">III", batch["base"], n, len(m)), m]
            for i in batch["items"]:
                parts.append(struct.pack(">I", len(sections[i])))
                parts.append(sections[i])
            data = b"".join(parts)
        elif "h" in a:
            flags += "r"
            rest.append(self.table[a["h"]][0])
            data = b""
        else:
            data = sections[a["s"]]
        pr = it.get("progress")
        if pr and batch is None:
            actor = self.actors.get(pr["actor"])
            if actor is not None:
                flags += "p"
                rest.append((actor, {"identity": pr["identity"], "label": pr["label"], "preview": pr.get("preview", "")}))
        if it.get("trace"):
            flags += "t"
            rest.append(it["trace"])
        spec = ("%s\x00%s" % (_spec(it), flags)).encode()
        refs = f.remote(struct.pack(">I", len(spec)) + spec + data, *rest)
        if batch is None:
            if it.get("inline"):
                self.inline[refs] = it["inline"]
            self.add(it["h"], refs, _SELF)
            return
        # The batch's handle is its status (watched, cancellable); each
        # item's handle is its own result.
        self.add(it["h"], refs[0], refs[0])
        for h, ref in zip(batch["ih"], refs[1:]):
            self.add(h, ref, None)

    def op_warm(self, req, _):
        # Through the leaf function itself: the worker imports it now, not
        # at the first leaf.
        spec = "\x00".join((req["exe"], "", "warm-up", "0", "", req.get("lib", ""), "", "", "w")).encode()
        self.add(req["h"], self.plain.remote(struct.pack(">I", len(spec)) + spec), _SELF)

    def op_collect(self, req, sections):
        args = [self.arg(a, sections) for a in req["args"]]
        if not req.get("concat"):
            data = _join_local(args)
            if data is not None:
                # Joined here: the handle is ready at once.
                self.table[req["h"]] = (ray.put(data), None)
                send({"id": 0, "event": "ready", "ready": [{"h": req["h"], "ok": True}]})
                return
        status, payload = (self.concat if req.get("concat") else self.collect).remote(*args)
        self.add(req["h"], payload, status)

    def op_actor(self, req, sections):
        """Creates a result-buffer or fold actor (fixed: no restarts, no
        task retries, one call at a time, two pending calls) and submits its
        readiness handshake under handle h."""
        opts = dict(req.get("options") or {})
        opts.update(max_restarts=0, max_task_retries=0, max_concurrency=1, max_pending_calls=2)
        if req["kind"] == "progress":
            opts.update(max_concurrency=1, max_pending_calls=-1)
            actor = ray.remote(_ProgressActor).options(**opts).remote(req["max_items"], req["max_bytes"])
        elif req["kind"] == "buffer":
            cls = ray.remote(_BufferActor).options(**opts)
            actor = cls.remote(req["max_items"], req["max_bytes"])
        else:
            cls = ray.remote(_FoldActor).options(**opts)
            spec = _spec(req)
            actor = cls.remote(spec, sections[0], req["max_bytes"], req["max_retained"])
        self.actors[req["actor"]] = actor
        ref = actor.ready.remote()
        self.add(req["h"], ref, ref)

    def op_actor_call(self, req, sections):
        actor = self.actors[req["actor"]]
        args = [self.arg(a, sections) if isinstance(a, dict) else a for a in req.get("args", [])]
        method = getattr(actor, req["method"])
        if req["method"] == "finalize":
            ack, payload = method.options(num_returns=2).remote(*args)
            self.add(req["h"], payload, ack)
        else:
            ref = method.remote(*args)
            self.add(req["h"], ref, ref)

    def op_actor_kill(self, req, _):
        actor = self.actors.pop(req["actor"], None)
        if actor is not None:
            try:
                ray.kill(actor, no_restart=True)
            except Exception as e:
                log("kill actor", type(e).__name__, e)
        return {}, []

    def op_put(self, req, sections):
        self.add(req["h"], ray.put(sections[0]), None)

    def op_get(self, req, _):
        err = self.failed.get(req["h"])
        if err is not None:
            return {"failed": err}, [b""]
        payload, _status = self.table[req["h"]]
        try:
            data = ray.get(payload, timeout=req.get("timeout"))
        except Exception as e:
            info, value = error_info(e)
            return {"failed": info}, [value]
        return {}, [data]

    def op_cancel(self, req, _):
        # A running leaf blocks in its Go process, where Ray's cooperative
        # cancellation (an asynchronous KeyboardInterrupt) does not reach it
        # reliably, so pending tasks are force-cancelled: Ray kills the
        # worker, and the leaf process dies with it (PDEATHSIG, stdin EOF).
        #
        # A task is cancelled not recursively (leaf and collect tasks submit
        # no child tasks), and again only when it is still pending
        # RECANCEL_AFTER seconds after its last cancellation: Ray 2.60's core
        # worker can abort the whole driver ("Check failed: it !=
        # submissible_tasks_.end() Tried to complete task that was not
        # pending") when a cancellation races the task's completion, so the
        # engine lets tasks end on their own for a grace first (cancel.go)
        # and the bridge gives that race as few chances as it can; Ray can also
        # lose a cancellation that races the task's dispatch to a worker
        # (the task then runs to its end), which only a later one mends.
        now = time.monotonic()
        refs = []
        for h in req["handles"]:
            ent = self.table.get(h)
            if ent is None or ent[1] is None or now - self.cancelled.get(ent[0], -RECANCEL_AFTER) < RECANCEL_AFTER:
                continue
            refs.append(ent[0])
        if not refs:
            return {}, []
        ready, pending = ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
        for ref in pending:
            self.cancelled[ref] = now
            try:
                ray.cancel(ref, force=True, recursive=False)
            except Exception as e:
                log("cancel", ref, type(e).__name__, e)
        return {"cancelled": len(pending)}, []

    def op_release(self, req, _):
        with self.cond:
            for h in req["handles"]:
                self.failed.pop(h, None)
                ent = self.table.pop(h, None)
                if ent is not None:
                    self.watched.pop(ent[0], None)
                    self.cancelled.pop(ent[0], None)
                    self.inline.pop(ent[0], None)
        return {}, []

    def op_wait(self, req, _):
        # Answered by the waiter thread.
        ents = self.refs(req["handles"])
        failed = [{"h": h, "ok": False, "error": self.failed[h]} for h in req["handles"] if h in self.failed]
        deadline = time.monotonic() + float(req.get("timeout", 1.0))
        with self.cond:
            self.waits.append([req["id"], ents, deadline, bool(req.get("all")), failed])
            self.cond.notify()
        return None

    def op_list_actors(self, req, _):
        # Ray's state API (needs a cluster with its dashboard).
        from ray.util.state import list_actors

        # This driver's job only: other drivers on a shared cluster (tests
        # of other packages) create actors of the same class meanwhile.
        job = ray.get_runtime_context().get_job_id()
        acts = list_actors(filters=[("class_name", "=", req["class_name"]), ("job_id", "=", job)], limit=10000, timeout=5,
                           raise_on_missing_output=False)
        return {"actors": [{"id": a.actor_id, "state": a.state} for a in acts]}, []

    def op_stats(self, req, _):
        direct = sum(f.direct for f in list(self.variants.values()) + [self.plain] if isinstance(f, _Prepared))
        return {"handles": len(self.table), "failed": len(self.failed), "waits": len(self.waits), "watched": len(self.watched),
                "actors": len(self.actors),
                "direct_submits": direct}, []

    # --- the waiter: one batched ray.wait over every watched task and every
    # pending wait request
    def wait_loop(self):
        while True:
            with self.cond:
                while not self.waits and not self.watched and not self.stopping:
                    self.cond.wait()
                if self.stopping:
                    return
                snapshot = list(self.waits)
                watched = dict(self.watched)
            refs = set(watched)
            for w in snapshot:
                for ent in w[1]:
                    refs.add(ent[1])
            reflist = list(refs)
            now = time.monotonic()
            timeout = 0.005
            if snapshot:
                timeout = max(0.0, min(timeout, min(w[2] for w in snapshot) - now))
            # Block until a batch (an eighth of what is pending) is ready or
            # the timeout passes, then take everything that is ready.
            ready = ()
            try:
                if reflist:
                    ready, _ = ray.wait(reflist, num_returns=max(1, len(reflist) // 8),
                                        timeout=timeout, fetch_local=False)
                if ready and len(reflist) > len(ready):
                    ready, _ = ray.wait(reflist, num_returns=len(reflist), timeout=0, fetch_local=False)
            except Exception as e:
                if self.stopping:
                    return
                log("wait failed:", type(e).__name__, e)
                time.sleep(0.01)
                continue
            ready = set(ready)
            # Watched tasks that finished: one batched get of their small
            # status objects tells successes from failures.
            payloads = [ref for ref in ready if ref in watched]
            events = [(watched[ref][0], ref, watched[ref][1]) for ref in payloads]
            if events:
                with self.cond:
                    for ref in ready:
                        self.watched.pop(ref, None)
                out, secs, values = self.statuses(events)
                if self.inline:
                    self.inline_results(out, secs, payloads, values)
                # Plain successes go in an "ok" event, the coordinator's
                # fast path; failures and inlined results in a "ready" one.
                oks = [it["h"] for it in out if len(it) == 2 and it["ok"]]
                if oks:
                    send_ok(oks)
                if len(oks) < len(out):
                    send({"id": 0, "event": "ready", "ready": [it for it in out if len(it) != 2 or not it["ok"]]}, secs)
            now = time.monotonic()
            done = []
            for w in snapshot:
                r = [ent for ent in w[1] if ent[1] in ready]
                finished = (len(r) == len(w[1])) if w[3] else bool(r or w[4])
                if finished or now >= w[2]:
                    done.append((w, r))
            if not done:
                if not reflist and timeout > 0:
                    # Waits for no task (handles released, or refused at
                    # submission) wait out their deadline here, not in a
                    # spin: ray.wait is not called without refs.
                    with self.cond:
                        self.cond.wait(timeout)
                continue
            with self.cond:
                for w, _ in done:
                    self.waits.remove(w)
            for w, r in done:
                out, secs, _ = self.statuses(r)
                send({"id": w[0], "ok": True, "ready": out + w[4]}, secs)

    def inline_results(self, out, secs, payloads, read):
        """Adds the results of the succeeded tasks submitted with "inline"
        to their ready items (section "v"): those statuses read (read: ref ->
        value), else in one get: they are small and already in this process
        (Ray returns small results to their owner), and the coordinator
        would get each of them next."""
        want = []
        for item, ref in zip(out, payloads):
            cap = self.inline.pop(ref, None)
            if cap is not None and item["ok"]:
                want.append((item, ref, cap))
        if not want:
            return
        try:
            rest = [ref for _, ref, _ in want if ref not in read]
            got = dict(zip(rest, ray.get(rest, timeout=5))) if rest else {}
        except Exception as e:  # a lost object: the coordinator's own get says why
            log("inline results:", type(e).__name__, e)
            return
        for item, ref, cap in want:
            v = read[ref] if ref in read else got[ref]
            if isinstance(v, (bytes, bytearray)) and len(v) <= cap:
                item["v"] = len(secs)
                secs.append(v)

    @staticmethod
    def statuses(items):
        """The ready items of finished tasks, given as (handle, payload ref,
        status ref): their successes and failures (one batched get of the
        statuses; one get each only when one failed), the failures' encoded
        values (sections), and the leaf results read meanwhile (payload ref
        -> bytes). A leaf task's status is its one return (_SELF): read
        when it is in this process's memory store, where Ray keeps small
        values and every failure (_ERROR_INLINE); a value in the object
        store is a success, and is not fetched."""
        out, secs, read = [], [], {}
        cw = ray._private.worker.global_worker.core_worker
        probe = []
        for _h, payload, st in items:
            if st is _SELF:
                if cw.object_exists(payload, memory_store_only=True):
                    probe.append(payload)
            elif st is not None:
                probe.append(st)
        failed = False
        if probe:
            try:
                got = ray.get(probe)
            except Exception:
                failed = True
            else:
                read = dict(zip(probe, got))
        probed = set(probe) if failed else ()
        for h, payload, st in items:
            item = {"h": h, "ok": True}
            ref = payload if st is _SELF else st
            if failed and ref in probed:
                try:
                    v = ray.get(ref)
                    if st is _SELF:
                        read[payload] = v
                except Exception as e:
                    info, value = error_info(e)
                    item = {"h": h, "ok": False, "error": info, "s": len(secs)}
                    secs.append(value)
            out.append(item)
        return out, secs, read


_NODE_ID = re.compile(r"node ID: ([0-9a-f]+)")


def error_info(e):
    """Maps a Ray exception to (info, encoded value)."""
    cause = e
    if ray is not None and isinstance(e, ray.exceptions.RayTaskError):
        cause = getattr(e, "cause", None) or e
    if type(cause).__name__ == "LeafError" and len(cause.args) == 2:
        try:
            info, value = _unpack_error(*cause.args)
        except Exception as ue:  # its packed bytes are lost (their owner, the worker, is gone)
            return {"kind": "ray", "type": "LeafError",
                    "message": "the failure of leaf %s is lost: %s: %s" % (cause.args[0].get("node", "?"), type(ue).__name__, ue)}, b""
        return dict(info, kind="leaf"), value
    if type(cause).__name__ == "LeafProcessError" and len(cause.args) == 1 and isinstance(cause.args[0], dict):
        return cause.args[0], b""
    if type(cause).__name__ == "ActorLimitError" and len(cause.args) == 4:
        what, n, limit, msg = cause.args
        return {"kind": "actor_limit", "type": what, "bytes": n, "limit": limit, "message": msg}, b""
    if type(cause).__name__ == "ActorProtocolError":
        return {"kind": "actor_protocol", "message": str(cause)}, b""
    if ray is not None:
        if isinstance(cause, ray.exceptions.TaskCancelledError):
            return {"kind": "cancelled", "message": str(cause)}, b""
        if isinstance(cause, ray.exceptions.NodeDiedError):
            # The node the task ran on is gone (its raylet died): Ray names it only
            # in the message.
            m = _NODE_ID.search(str(cause))
            return {"kind": "node_died", "ray_node": m.group(1) if m else "", "message": str(cause)}, b""
        if isinstance(cause, ray.exceptions.WorkerCrashedError):
            return {"kind": "worker_crashed", "message": str(cause)}, b""
        if isinstance(cause, ray.exceptions.OwnerDiedError):
            return {"kind": "owner_died", "message": str(cause)}, b""
        if isinstance(cause, ray.exceptions.ObjectLostError):
            return {"kind": "object_lost", "message": str(cause)}, b""
        if isinstance(cause, ray.exceptions.GetTimeoutError):
            return {"kind": "timeout", "message": str(cause)}, b""
    return {"kind": "ray", "type": type(cause).__name__, "message": str(cause)[:4096]}, b""


def main():
    send({"op": "hello", "protocol": PROTOCOL, "ray": RAY_VERSION,
          "python": "%d.%d.%d" % sys.version_info[:3], "import_error": IMPORT_ERROR,
          "executable": sys.executable})
    b = Bridge()
    while True:
        try:
            req, sections = read_frame(_IN)
        except EOFError:
            if b.started_local:
                # The owner closed the protocol without a shutdown: it is
                # gone, and its private cluster goes with it.
                _end_private_cluster()
            break
        op = req.get("op")
        rid = req.get("id", 0)
        if op == "shutdown":
            with b.cond:
                b.stopping = True
                b.cond.notify_all()
            if b.waiter is not None:
                b.waiter.join(timeout=2)
            if ray is not None and ray.is_initialized():
                ray.shutdown()
            if rid:
                send({"id": rid, "ok": True})
            break
        fn = getattr(b, "op_" + str(op), None)
        try:
            if fn is None:
                raise ValueError("unknown op %r" % op)
            res = fn(req, sections)
            if res is None:
                continue
            header, secs = res
            if rid:
                send(dict(header, id=rid, ok=True), secs)
        except Exception as e:
            log("op", op, "failed:", traceback.format_exc())
            err = {"kind": "bridge", "type": type(e).__name__, "message": str(e)}
            if rid:
                send({"id": rid, "ok": False, "error": err})
            elif "h" in req:
                # A pipelined creating op failed: its handle fails.
                b.fail([req["h"]], dict(err, kind="submit"))
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
