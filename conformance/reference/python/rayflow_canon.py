#!/usr/bin/env python3
"""Independent Python reference implementation of rayflow canonical JSON v1.

Written from the rules (docs/contracts.md#canonical-json-v1, its number lines and its
Unicode pin) and conformance/README.md, not from rayflow's Go code. Python 3.11, stdlib
only. Usable as a module and as the conformance command line::

    rayflow_canon.py canon [--no-fold]                      < json > canonical bytes
    rayflow_canon.py fingerprint --domain NAME [--no-fold] [--bare] < json
    rayflow_canon.py numbers --count N [--no-fold]
    rayflow_canon.py batch                                  < {"mode":…,"input_hex":…} lines

Exit status: 0 success, 3 rejection (``rejected: <rule>: <detail>`` on stderr),
2 usage error, 1 I/O or internal error.

Pipeline
--------
1. Strict decoding (both codecs): the bytes must be well-formed UTF-8
   (``invalid_utf8``); a hand-written RFC 8259 parser then reads exactly one value
   (``syntax``; a leading U+FEFF is a syntax error). It rejects raw U+0000-U+001F
   in strings (``control_character``), unpaired ``\\uD800``-``\\uDFFF`` escapes
   (``lone_surrogate``), a key repeated in one object after unescaping
   (``duplicate_key``), ``NaN``/``Infinity``/``-Infinity`` and literals that round
   to an infinite double (``non_finite``), integer literals of more than 4,300
   digits (``integer_digits``) and values nested deeper than 16 (fold) or 64
   (no-fold) containers, the root being at depth 0 (``depth``). A literal without
   fraction or exponent is an exact integer (``-0`` is 0); any other literal is a
   double rounded to nearest by ``float()`` (``1e-400`` is 0.0, ``-1e-400`` -0.0).
2. ``fold`` mode only (normalization): a string value longer than 2,048
   code points before NFC (``string_length``), a code point reserved in Unicode
   15.0.0 in a key or string (``unassigned_code_point``), an object with more than
   256 members (``object_entries``), an array with more than 1,024 items
   (``array_items``); keys are NFC-normalized and must be non-empty
   (``key_empty``), at most 2,048 code points after NFC (``key_length``) and
   distinct after NFC (``duplicate_key_nfc``); string values are NFC-normalized;
   an integral double becomes the exact integer of its binary value (``-0.0`` is
   0). ``no-fold`` mode does none of this.
3. Serialization: ``json.dumps(v, ensure_ascii=False,
   sort_keys=True, separators=(",", ":"), allow_nan=False)`` encoded as UTF-8,
   reimplemented here: keys in code point order, escapes ``\\"`` ``\\\\`` ``\\b``
   ``\\f`` ``\\n`` ``\\r`` ``\\t`` and ``\\u00xx`` (lowercase) for the other C0
   controls, everything else raw; integers in decimal; doubles as ``repr``.

Unicode 15.0.0
--------------
Python 3.11's ``unicodedata`` is Unicode 14.0.0, rayflow pins 15.0.0. NFC is
implemented here from scratch (UAX #15: full canonical decomposition including
algorithmic Hangul, canonical ordering by combining class, canonical composition
of primary composites plus Hangul LV/LVT) over these tables:

* canonical decompositions: ``unicodedata.decomposition`` (compatibility mappings,
  tagged ``<…>``, ignored);
* primary composites: code points with a two-element canonical decomposition that
  ``unicodedata.normalize("NFC", c)`` leaves unchanged (so composition exclusions,
  singletons and non-starter decompositions come from unicodedata);
* canonical combining class: ``unicodedata.combining``, overridden for code points
  that are unassigned in 14.0.0 but assigned in 15.0.0 by the classes in
  ``unicode15_delta.json``;
* assigned code points (for ``unassigned_code_point``): the 15.0.0 General_Category
  table in ``unicode15_delta.json``.

``unicode15_delta.json`` is written by ``gendelta/`` from Go 1.26's ``unicode``
package and golang.org/x/text/unicode/norm, both asserted to be 15.0.0. The tests
show the two table sets agree wherever both define a value (every 14.0.0-assigned
code point has the same combining class, the digests of all canonical
decompositions and of all primary composites match, so the 4,489 code points new
in 15.0.0 bring no decomposition and no composition, only ten non-zero combining
classes), check this NFC against ``unicodedata.normalize`` on 14.0.0 text and
against x/text on sample strings containing the ten new marks.

This is plain UAX #15 NFC, as Python's ``unicodedata.normalize`` (the seed
system) computes it. golang.org/x/text differs on one point: after 30 consecutive
non-starters it inserts U+034F COMBINING GRAPHEME JOINER (the Stream-Safe Text
Format), which also stops canonical reordering across it. The reference never
inserts U+034F; the vectors ``nfc/long_nonstarter_run_*`` pin this.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import hashlib
import json
import math
import re
import struct
import sys
import unicodedata
from pathlib import Path

__all__ = [
    "Rejected",
    "RULES",
    "decode",
    "normalize",
    "serialize",
    "canonicalize",
    "fingerprint",
    "nfc",
    "is_reserved",
    "number_bits",
    "number_text",
    "number_lines_digest",
]

HERE = Path(__file__).resolve().parent
DELTA_PATH = HERE / "unicode15_delta.json"
NUMBERS_PATH = HERE.parent.parent / "vectors" / "numbers.json"

FOLD_MAX_DEPTH = 16
NO_FOLD_MAX_DEPTH = 64
MAX_OBJECT_ENTRIES = 256
MAX_ARRAY_ITEMS = 1024
MAX_STRING_CODE_POINTS = 2048
MAX_KEY_CODE_POINTS = 2048
MAX_INTEGER_DIGITS = 4300

RULES = (
    "syntax",
    "invalid_utf8",
    "lone_surrogate",
    "control_character",
    "duplicate_key",
    "non_finite",
    "integer_digits",
    "depth",
    "object_entries",
    "array_items",
    "string_length",
    "key_empty",
    "key_length",
    "duplicate_key_nfc",
    "unassigned_code_point",
)


class Rejected(Exception):
    """The input breaks rule ``rule`` (one of RULES)."""

    def __init__(self, rule: str, detail: str):
        assert rule in RULES, rule
        super().__init__(f"{rule}: {detail}")
        self.rule = rule
        self.detail = detail


# ---------------------------------------------------------------------------
# Unicode 15.0.0 tables


def _load_delta() -> dict:
    with open(DELTA_PATH, "rb") as f:
        delta = json.load(f)
    if delta.get("unicode_version") != "15.0.0" or delta.get("norm_version") != "15.0.0":
        raise RuntimeError(f"{DELTA_PATH}: not Unicode 15.0.0 data")
    if delta["added_decompositions"]:
        # Code points new since 13.0.0 with a canonical decomposition would need
        # composition data this reference does not carry; 15.0.0 has none.
        raise RuntimeError(f"{DELTA_PATH}: new canonical decompositions are not supported")
    return delta


_DELTA = _load_delta()
_ASSIGNED_LO = [r[0] for r in _DELTA["assigned"]]
_ASSIGNED_HI = [r[1] for r in _DELTA["assigned"]]


def is_noncharacter(cp: int) -> bool:
    return 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE


def is_assigned15(cp: int) -> bool:
    """General_Category is not Cn in Unicode 15.0.0."""
    i = bisect.bisect_right(_ASSIGNED_LO, cp) - 1
    return i >= 0 and cp <= _ASSIGNED_HI[i]


def is_reserved(cp: int) -> bool:
    """Reserved in Unicode 15.0.0: Cn and not a noncharacter."""
    return not is_assigned15(cp) and not is_noncharacter(cp)


def _noncharacter_ranges() -> list[tuple[int, int]]:
    return [(0xFDD0, 0xFDEF)] + [(p * 0x10000 + 0xFFFE, p * 0x10000 + 0xFFFF) for p in range(17)]


def _reserved_regex() -> "re.Pattern[str]":
    """A character class of every code point reserved in Unicode 15.0.0."""
    taken = sorted([tuple(r) for r in _DELTA["assigned"]] + _noncharacter_ranges())
    cls = []
    nxt = 0
    for lo, hi in taken:
        if lo > nxt:
            cls.append(f"\\U{nxt:08x}-\\U{lo - 1:08x}")
        nxt = max(nxt, hi + 1)
    if nxt <= 0x10FFFF:
        cls.append(f"\\U{nxt:08x}-\\U{0x10FFFF:08x}")
    return re.compile("[" + "".join(cls) + "]")


_RESERVED_RE = _reserved_regex()


def _ccc_overrides() -> dict[int, int]:
    """Combining classes of code points unassigned in 14.0.0, assigned in 15.0.0."""
    out = {}
    for lo, hi, ccc in _DELTA["ccc"]:
        for cp in range(lo, hi + 1):
            if unicodedata.category(chr(cp)) == "Cn":
                out[cp] = ccc
    return out


_CCC_OVERRIDES = _ccc_overrides()


def ccc(cp: int) -> int:
    """Canonical combining class in Unicode 15.0.0."""
    v = _CCC_OVERRIDES.get(cp)
    if v is not None:
        return v
    return unicodedata.combining(chr(cp))


# ---------------------------------------------------------------------------
# NFC (UAX #15), Unicode 15.0.0

_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_L_COUNT, _V_COUNT, _T_COUNT = 19, 21, 28
_N_COUNT = _V_COUNT * _T_COUNT
_S_COUNT = _L_COUNT * _N_COUNT

# Canonical decompositions and compositions exist only below U+30000 (the tests
# check this against a scan of every code point).
_DECOMPOSITION_SCAN_END = 0x30000


@functools.lru_cache(maxsize=None)
def _decompose_cp(cp: int) -> tuple[int, ...]:
    """Full canonical decomposition of one code point."""
    if _S_BASE <= cp < _S_BASE + _S_COUNT:
        s = cp - _S_BASE
        t = s % _T_COUNT
        out = (_L_BASE + s // _N_COUNT, _V_BASE + (s % _N_COUNT) // _T_COUNT)
        return out + ((_T_BASE + t),) if t else out
    d = unicodedata.decomposition(chr(cp)) if cp not in _CCC_OVERRIDES else ""
    if not d or d.startswith("<"):
        return (cp,)
    out: tuple[int, ...] = ()
    for part in d.split():
        out += _decompose_cp(int(part, 16))
    return out


@functools.lru_cache(maxsize=1)
def composition_pairs() -> dict[tuple[int, int], int]:
    """(first, second) -> primary composite, from unicodedata (Hangul excluded)."""
    pairs = {}
    for cp in range(_DECOMPOSITION_SCAN_END):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = d.split()
        if len(parts) != 2:
            continue  # singleton: always excluded from composition
        if unicodedata.normalize("NFC", chr(cp)) != chr(cp):
            continue  # composition exclusion or non-starter decomposition
        pairs[(int(parts[0], 16), int(parts[1], 16))] = cp
    return pairs


def _compose(a: int, b: int) -> int | None:
    if _L_BASE <= a < _L_BASE + _L_COUNT and _V_BASE <= b < _V_BASE + _V_COUNT:
        return _S_BASE + ((a - _L_BASE) * _V_COUNT + (b - _V_BASE)) * _T_COUNT
    if (
        _S_BASE <= a < _S_BASE + _S_COUNT
        and (a - _S_BASE) % _T_COUNT == 0
        and _T_BASE < b < _T_BASE + _T_COUNT
    ):
        return a + (b - _T_BASE)
    return composition_pairs().get((a, b))


# No code point below U+0300 has a combining class, changes under NFC, or is the
# second element of a composition (checked by the tests), so such text is NFC.
_NFC_TRIVIAL = re.compile("[\u0000-\u02ff]*")


def nfc(s: str) -> str:
    """Unicode 15.0.0 NFC of s (s must hold no surrogates)."""
    if _NFC_TRIVIAL.fullmatch(s):
        return s
    # 1. full canonical decomposition
    cps: list[int] = []
    for ch in s:
        cps.extend(_decompose_cp(ord(ch)))
    classes = [ccc(cp) for cp in cps]
    # 2. canonical ordering: stable sort of every run of non-starters
    i, n = 0, len(cps)
    while i < n:
        if classes[i] == 0:
            i += 1
            continue
        j = i
        while j < n and classes[j] != 0:
            j += 1
        if j - i > 1:
            run = sorted(zip(classes[i:j], cps[i:j]), key=lambda t: t[0])
            classes[i:j] = [c for c, _ in run]
            cps[i:j] = [cp for _, cp in run]
        i = j
    # 3. canonical composition
    if not cps:
        return ""
    out = [cps[0]]
    starter = 0 if classes[0] == 0 else -1
    last_class = 0 if classes[0] == 0 else 256
    for cp, cls in zip(cps[1:], classes[1:]):
        # cp is not blocked from the starter when every character between them
        # has a lower class (last_class < cls), or when nothing is between them
        # (last_class == 0: the last character kept is the starter itself).
        if starter >= 0 and (last_class < cls or last_class == 0):
            comp = _compose(out[starter], cp)
            if comp is not None:
                out[starter] = comp
                continue
        if cls == 0:
            starter = len(out)
        last_class = cls
        out.append(cp)
    return "".join(map(chr, out))


# ---------------------------------------------------------------------------
# Strict decoding

_WS = " \t\n\r"
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_STRING_RUN_RE = re.compile(r'[^"\\\x00-\x1f]*')
_HEX4_RE = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Parser:
    def __init__(self, text: str, max_depth: int):
        self.s = text
        self.i = 0
        self.max_depth = max_depth

    def fail(self, detail: str) -> Rejected:
        return Rejected("syntax", f"{detail} at offset {self.i}")

    def ws(self) -> None:
        s, i, n = self.s, self.i, len(self.s)
        while i < n and s[i] in _WS:
            i += 1
        self.i = i

    def value(self, depth: int):
        if depth > self.max_depth:
            raise Rejected("depth", f"value at depth {depth} exceeds maximum nesting depth {self.max_depth}")
        s, i = self.s, self.i
        if i >= len(s):
            raise self.fail("unexpected end of input, expected a value")
        c = s[i]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            return self.string()
        if s.startswith("true", i):
            self.i = i + 4
            return True
        if s.startswith("false", i):
            self.i = i + 5
            return False
        if s.startswith("null", i):
            self.i = i + 4
            return None
        for word in ("NaN", "Infinity", "-Infinity"):
            if s.startswith(word, i):
                raise Rejected("non_finite", f"{word} at offset {i}")
        m = _NUMBER_RE.match(s, i)
        if m is None:
            raise self.fail(f"unexpected character {c!r}")
        self.i = m.end()
        lit = m.group(0)
        if m.group(1) is None and m.group(2) is None:
            digits = len(lit) - (1 if lit[0] == "-" else 0)
            if digits > MAX_INTEGER_DIGITS:
                raise Rejected("integer_digits", f"integer literal with {digits} digits exceeds {MAX_INTEGER_DIGITS}")
            return int(lit)
        x = float(lit)
        if not math.isfinite(x):
            raise Rejected("non_finite", f"number literal at offset {i} overflows a double")
        return x

    def string(self) -> str:
        s = self.s
        i = self.i + 1  # past the opening quote
        chunks: list[str] = []
        while True:
            m = _STRING_RUN_RE.match(s, i)
            chunks.append(m.group(0))
            i = m.end()
            if i >= len(s):
                self.i = i
                raise self.fail("unterminated string")
            c = s[i]
            if c == '"':
                self.i = i + 1
                return "".join(chunks)
            if c != "\\":
                raise Rejected("control_character", f"raw U+{ord(c):04X} in a string at offset {i}")
            if i + 1 >= len(s):
                self.i = i
                raise self.fail("unterminated escape")
            e = s[i + 1]
            if e in _SIMPLE_ESCAPES:
                chunks.append(_SIMPLE_ESCAPES[e])
                i += 2
                continue
            if e != "u":
                self.i = i
                raise self.fail(f"invalid escape \\{e}")
            u, i = self._hex4(i)
            if 0xD800 <= u <= 0xDBFF:
                if s.startswith("\\u", i) and _HEX4_RE.match(s, i + 2):
                    lo = int(s[i + 2 : i + 6], 16)
                    if 0xDC00 <= lo <= 0xDFFF:
                        chunks.append(chr(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)))
                        i += 6
                        continue
                raise Rejected("lone_surrogate", f"unpaired \\u{u:04x} at offset {i - 6}")
            if 0xDC00 <= u <= 0xDFFF:
                raise Rejected("lone_surrogate", f"unpaired \\u{u:04x} at offset {i - 6}")
            chunks.append(chr(u))

    def _hex4(self, i: int) -> tuple[int, int]:
        """Parse the \\uXXXX escape starting at i; return (value, next index)."""
        if not _HEX4_RE.match(self.s, i + 2):
            self.i = i
            raise self.fail("invalid \\u escape")
        return int(self.s[i + 2 : i + 6], 16), i + 6

    def obj(self, depth: int) -> dict:
        self.i += 1
        out: dict = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            if not self.s.startswith('"', self.i):
                raise self.fail("expected a string key")
            key = self.string()
            if key in out:
                raise Rejected("duplicate_key", f"key {key!r} repeated")
            self.ws()
            if not self.s.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            self.ws()
            out[key] = self.value(depth + 1)
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                self.ws()
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return out
            raise self.fail("expected ',' or '}'")

    def arr(self, depth: int) -> list:
        self.i += 1
        out: list = []
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            return out
        while True:
            out.append(self.value(depth + 1))
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                self.ws()
                continue
            if self.s.startswith("]", self.i):
                self.i += 1
                return out
            raise self.fail("expected ',' or ']'")


def decode(data: bytes, fold: bool = True):
    """Strictly decode one JSON text into None/bool/int/float/str/list/dict."""
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise Rejected("invalid_utf8", f"{e.reason} at byte offset {e.start}") from None
    if text.startswith("\ufeff"):
        raise Rejected("syntax", "leading byte-order mark")
    p = _Parser(text, FOLD_MAX_DEPTH if fold else NO_FOLD_MAX_DEPTH)
    p.ws()
    v = p.value(0)
    p.ws()
    if p.i != len(text):
        raise p.fail("trailing data after the value")
    return v


# ---------------------------------------------------------------------------
# Normalization (fold mode)


def _check_assigned(s: str, what: str) -> None:
    m = _RESERVED_RE.search(s)
    if m:
        raise Rejected("unassigned_code_point", f"{what} holds U+{ord(m.group(0)):04X}, reserved in Unicode 15.0.0")


def normalize(v, depth: int = 0):
    """Normalization over a decoded value (fold mode)."""
    if depth > FOLD_MAX_DEPTH:
        raise Rejected("depth", f"exceeds maximum nesting depth {FOLD_MAX_DEPTH}")
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise Rejected("non_finite", "non-finite number")
        if v.is_integer():
            return int(v)  # exact value of the binary double; -0.0 -> 0
        return v
    if isinstance(v, str):
        if len(v) > MAX_STRING_CODE_POINTS:
            raise Rejected("string_length", f"string of {len(v)} code points exceeds {MAX_STRING_CODE_POINTS}")
        _check_assigned(v, "string")
        return nfc(v)
    if isinstance(v, list):
        if len(v) > MAX_ARRAY_ITEMS:
            raise Rejected("array_items", f"array of {len(v)} items exceeds {MAX_ARRAY_ITEMS}")
        return [normalize(x, depth + 1) for x in v]
    if isinstance(v, dict):
        if len(v) > MAX_OBJECT_ENTRIES:
            raise Rejected("object_entries", f"object of {len(v)} members exceeds {MAX_OBJECT_ENTRIES}")
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise TypeError("non-string key")
            _check_assigned(k, "key")
            nk = nfc(k)
            if not nk:
                raise Rejected("key_empty", "empty key")
            if len(nk) > MAX_KEY_CODE_POINTS:
                raise Rejected("key_length", f"key of {len(nk)} code points after NFC exceeds {MAX_KEY_CODE_POINTS}")
            if nk in out:
                raise Rejected("duplicate_key_nfc", f"keys equal after NFC: {nk!r}")
            out[nk] = normalize(x, depth + 1)
        return out
    raise TypeError(f"unsupported value {type(v).__name__}")


# ---------------------------------------------------------------------------
# Serialization

_ESCAPE_RE = re.compile(r'["\\\x00-\x1f]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
for _c in range(0x20):
    _ESCAPES.setdefault(chr(_c), f"\\u{_c:04x}")


def _string(s: str) -> str:
    return '"' + _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], s) + '"'


def _emit(v, out: list) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("non-finite float reached the serializer")
        out.append(repr(v))
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, list):
        out.append("[")
        for n, x in enumerate(v):
            if n:
                out.append(",")
            _emit(x, out)
        out.append("]")
    elif isinstance(v, dict):
        out.append("{")
        for n, k in enumerate(sorted(v)):  # Python str order = code point order
            if n:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _emit(v[k], out)
        out.append("}")
    else:
        raise TypeError(f"unsupported value {type(v).__name__}")


def serialize(v) -> bytes:
    out: list = []
    _emit(v, out)
    return "".join(out).encode("utf-8")


def canonicalize(data: bytes, fold: bool = True) -> bytes:
    """Canonical bytes of the JSON text ``data``; raises Rejected."""
    v = decode(data, fold)
    if fold:
        v = normalize(v)
    return serialize(v)


def fingerprint(domain: str, data: bytes, fold: bool = True, bare: bool = False) -> str:
    h = hashlib.sha256(domain.encode("ascii") + b"\x00" + canonicalize(data, fold)).hexdigest()
    return h if bare else "sha256:" + h


# ---------------------------------------------------------------------------
# The number-line sequence (docs/contracts.md#number-lines-and-vectors)


def number_bits(spec: dict | None = None):
    """Yield the 64-bit patterns of the number-line sequence (endless)."""
    if spec is None:
        with open(NUMBERS_PATH, "rb") as f:
            spec = json.load(f)
    chain = spec["chain"]
    if (
        chain["algorithm"] != "sha256"
        or chain["doubles_per_block"] != 4
        or chain["byte_order"] != "little"
        or sorted(chain["skip"]) != ["non_finite", "zero"]
    ):
        raise RuntimeError("unsupported numbers.json chain description")
    for b in spec["static_bits"]:
        yield int(b, 16)
    base = int(spec["serial_base"], 16)
    for i in range(spec["serial_count"]):
        yield base + i
    block = bytes.fromhex(chain["seed_hex"])
    while True:
        block = hashlib.sha256(block).digest()
        for k in range(0, 32, 8):
            x = struct.unpack("<d", block[k : k + 8])[0]
            if x == 0.0 or not math.isfinite(x):
                continue
            yield int.from_bytes(block[k : k + 8], "little")


def number_text(x: float, fold: bool) -> str:
    if fold and x.is_integer():
        return str(int(x))
    return repr(x)


def number_lines_digest(count: int, fold: bool, spec: dict | None = None) -> tuple[str, int]:
    """(sha256 hex, byte count) of the first ``count`` lines '<hex bits>,<text>\\n'."""
    h = hashlib.sha256()
    total = 0
    buf: list[str] = []
    unpack = struct.Struct("<d").unpack
    pack = struct.Struct("<Q").pack
    gen = number_bits(spec)
    for n in range(count):
        bits = next(gen)
        x = unpack(pack(bits))[0]
        buf.append(f"{bits:x},{number_text(x, fold)}\n")
        if len(buf) >= 4096:
            chunk = "".join(buf).encode("ascii")
            h.update(chunk)
            total += len(chunk)
            buf.clear()
    chunk = "".join(buf).encode("ascii")
    h.update(chunk)
    total += len(chunk)
    return h.hexdigest(), total


# ---------------------------------------------------------------------------
# Command line


class _UsageError(Exception):
    pass


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # exit 2, like argparse, but via one path
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="rayflow_canon.py", allow_abbrev=False, description="canonical JSON v1 reference")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_ArgumentParser)
    c = sub.add_parser("canon", allow_abbrev=False, help="canonical bytes of stdin")
    c.add_argument("--no-fold", action="store_true")
    f = sub.add_parser("fingerprint", allow_abbrev=False, help="domain-separated SHA-256 of the canonical bytes")
    f.add_argument("--domain", required=True)
    f.add_argument("--no-fold", action="store_true")
    f.add_argument("--bare", action="store_true")
    n = sub.add_parser("numbers", allow_abbrev=False, help="digest of the conformance number lines")
    n.add_argument("--count", required=True)
    n.add_argument("--no-fold", action="store_true")
    sub.add_parser("batch", allow_abbrev=False, help="JSON lines in, JSON lines out")
    return p


def _batch(stdin, stdout) -> None:
    for raw in stdin:
        if not raw.strip():
            continue
        req = json.loads(raw)
        mode = req.get("mode")
        if mode not in ("fold", "no-fold"):
            raise ValueError(f"batch: bad mode {mode!r}")
        data = bytes.fromhex(req["input_hex"])
        try:
            ans = {"canonical_hex": canonicalize(data, mode == "fold").hex()}
        except Rejected as e:
            ans = {"rejection": e.rule}
        stdout.write(json.dumps(ans, separators=(",", ":")).encode("ascii") + b"\n")
        stdout.flush()


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.cmd == "fingerprint":
            if not args.domain or not args.domain.isascii():
                raise _UsageError("--domain must be non-empty ASCII")
        if args.cmd == "numbers":
            if not re.fullmatch(r"[0-9]+", args.count):
                raise _UsageError("--count must be a non-negative decimal integer")
    except _UsageError as e:
        sys.stderr.write(f"usage error: {e}\n")
        return 2
    try:
        if args.cmd == "numbers":
            digest, size = number_lines_digest(int(args.count), not args.no_fold)
            sys.stdout.write(f"{digest} {size}\n")
            sys.stdout.flush()
            return 0
        if args.cmd == "batch":
            _batch(sys.stdin.buffer, sys.stdout.buffer)
            return 0
        data = sys.stdin.buffer.read()
        fold = not args.no_fold
        try:
            if args.cmd == "canon":
                result = canonicalize(data, fold)
            else:
                result = (fingerprint(args.domain, data, fold, args.bare) + "\n").encode("ascii")
        except Rejected as e:
            detail = e.detail.replace("\n", " ")
            sys.stderr.write(f"rejected: {e.rule}: {detail}\n")
            return 3
        sys.stdout.buffer.write(result)
        sys.stdout.buffer.flush()
        return 0
    except Exception as e:  # I/O or internal error
        sys.stderr.write(f"error: {type(e).__name__}: {e}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
