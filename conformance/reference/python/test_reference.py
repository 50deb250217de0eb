"""Tests of the canonical JSON v1 reference (run from the repository root):

    python3 -m unittest discover -s conformance/reference/python
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
import subprocess
import sys
import unicodedata
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_vectors  # noqa: E402
import rayflow_canon as rc  # noqa: E402

CLI = [sys.executable, str(HERE / "rayflow_canon.py")]
VECTORS_PATH = HERE.parent.parent / "vectors" / "canonical.json"
NUMBERS_PATH = HERE.parent.parent / "vectors" / "numbers.json"
DELTA = json.loads((HERE / "unicode15_delta.json").read_text("utf-8"))

NEW_15_MARKS = {
    0x10EFD: 220,
    0x10EFE: 220,
    0x10EFF: 220,
    0x11F41: 9,
    0x11F42: 9,
    0x1E08F: 230,
    0x1E4EC: 232,
    0x1E4ED: 232,
    0x1E4EE: 220,
    0x1E4EF: 230,
}


def canon(text, fold=True) -> bytes:
    return rc.canonicalize(text.encode("utf-8") if isinstance(text, str) else text, fold)


def fp(domain: str, canonical: bytes) -> str:
    return "sha256:" + hashlib.sha256(domain.encode("ascii") + b"\x00" + canonical).hexdigest()


def run_cli(args, stdin=b""):
    return subprocess.run(CLI + args, input=stdin, capture_output=True, timeout=60)


def expand(ranges):
    for r in ranges:
        yield from ((cp, *r[2:]) if len(r) > 2 else cp for cp in range(r[0], r[1] + 1))


# ---------------------------------------------------------------------------


class ContractVectors(unittest.TestCase):
    """The fixed fingerprint vectors (docs/contracts.md#number-lines-and-vectors), both domains, checked against the literal values."""

    def test_v1_canonical_and_fingerprints(self):
        c = canon(make_vectors.CONTRACT_V1_INPUT)
        self.assertEqual(
            c,
            b'{"a":[1,0,0.5,1e-05,100000000000000000000,99999999999999991611392,123456789.125,0.0001,'
            b'-1.5e-07,true,null,1180591620717411303424],"b":1}',
        )
        self.assertEqual(len(c), 136)
        self.assertEqual(
            fp("django-ray.workflow-plan-v1", c),
            "sha256:0bbe2a4302b0895c609182d1f504c3e60d266cc5641650967f19149fedc75b15",
        )
        self.assertEqual(
            rc.fingerprint("rayflow.workflow-plan-v1", make_vectors.CONTRACT_V1_INPUT.encode()),
            "sha256:f865c1540454abea0fd2cee073418f6d45f6f2ee43ae8ab7e7e9d88682c7d64f",
        )

    def test_v1_python_expression_form(self):
        # The contract writes 2**70; the same value as Python would build it.
        v = {"b": 1, "a": [1.0, -0.0, 0.5, 1e-05, 1e20, 1e23, 123456789.125, 0.0001, -1.5e-07, True, None, 2**70]}
        self.assertEqual(rc.serialize(rc.normalize(v)), canon(make_vectors.CONTRACT_V1_INPUT))

    def test_v2_key_order(self):
        c = canon('{"😀":1,"\\uFFFF":2,"a":3,"é":4,"Z":5,"aa":6,"a\\u0000":7}')
        self.assertEqual(
            c.hex(),
            "7b225a223a352c2261223a332c22615c7530303030223a372c226161223a362c22c3a9223a342c22efbfbf223a322c22f09f9880223a317d",
        )
        self.assertEqual(
            fp("django-ray.workflow-plan-v1", c),
            "sha256:67d7bd12b88266ca10304bf96901328cee853bd871f111a5429f7d619ee55a34",
        )

    def test_v3_nfc_and_escapes(self):
        # Python literal of the contract: {"e\u0301":"A\u030a","x":"/\"\\\b\f\n\r\t\x1f\x7f\u2028é😀"}
        v = {"e\u0301": "A\u030a", "x": '/"\\\b\f\n\r\t\x1f\x7f\u2028é😀'}
        c = rc.serialize(rc.normalize(v))
        self.assertEqual(c, canon(json.dumps(v)))
        self.assertEqual(
            c.hex(),
            "7b2278223a222f5c225c5c5c625c665c6e5c725c745c75303031667fe280a8c3a9f09f9880222c22c3a9223a22c385227d",
        )
        self.assertEqual(
            fp("django-ray.workflow-plan-v1", c),
            "sha256:d7cf980b21e6cd83016cc2198e7f125c8cc2c15b82d601730584f179cba6d893",
        )

    def test_v4_plan_format(self):
        self.assertEqual(
            fp("django-ray.workflow-plan-v1", canon('{"plan_format":"django-ray.workflow-plan","plan_format_version":1}')),
            "sha256:9f4e916bd6311aab02552d2b2e7b8043f715f32377761e725f6ac7a08a592a85",
        )
        self.assertEqual(
            rc.fingerprint("rayflow.workflow-plan-v1", b'{"plan_format":"rayflow.workflow-plan","plan_format_version":1}'),
            "sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0",
        )

    def test_v5_rejections(self):
        cases = [
            ('{"e\\u0301":1,"é":2}', "duplicate_key_nfc"),
            ('{"a":NaN}', "non_finite"),
            ("{1:2}", "syntax"),
            ('{"":1}', "key_empty"),
            ("[" * 17 + "0" + "]" * 17, "depth"),
        ]
        for text, rule in cases:
            with self.subTest(text=text[:30]):
                with self.assertRaises(rc.Rejected) as cm:
                    canon(text)
                self.assertEqual(cm.exception.rule, rule)
        # the normalizer itself, on Python values
        with self.assertRaises(rc.Rejected):
            rc.normalize({"a": math.nan})
        deep = 0
        for _ in range(17):
            deep = [deep]
        with self.assertRaises(rc.Rejected) as cm:
            rc.normalize(deep)
        self.assertEqual(cm.exception.rule, "depth")
        rc.normalize(deep[0])

    def test_v6_v7_digests(self):
        c6 = canon('{"build_revision":null,"callables":[],"container_image_digest":null}')
        self.assertEqual(
            fp("django-ray.workflow-definition-v1", c6),
            "sha256:8f4671da85f81ff51198cfa0725ec39261712577db92aa61373ea45fd0b43272",
        )
        self.assertEqual(
            fp("django-ray.workflow-plan-trust-v1", canon("{}")),
            "sha256:8c1b9b71d79123b29f8b99b44a93f7f5384b7bf19b125fb90d735b0d4bf410ae",
        )

    def test_v8_node_key(self):
        self.assertEqual(
            hashlib.sha256("0.1.m0".encode()).hexdigest(),
            "66bc1790e35ff5f7eb24fc519ca77d37ec6afbe81d660ad9b3ff190acd0c273b",
        )

    def test_v9_summary_no_fold(self):
        self.assertEqual(canon('{"progress_percent":100.0,"b":50.0}', fold=False), b'{"b":50.0,"progress_percent":100.0}')


# ---------------------------------------------------------------------------


class Numbers(unittest.TestCase):
    def test_appendix_a_table(self):
        spec = json.loads(NUMBERS_PATH.read_text("utf-8"))
        for row in spec["expected"]:
            if row["lines"] > 100_000:
                continue
            for fold, key in ((False, "no_fold"), (True, "fold")):
                with self.subTest(lines=row["lines"], codec=key):
                    digest, size = rc.number_lines_digest(row["lines"], fold, spec)
                    self.assertEqual((digest, size), (row[key]["sha256"], row[key]["bytes"]))

    def test_sequence_start(self):
        gen = rc.number_bits()
        first = [next(gen) for _ in range(4)]
        self.assertEqual(first, [0, 0x8000000000000000, 1, 0x8000000000000001])

    def test_text_rules(self):
        cases = [
            (100.0, "100", "100.0"),
            (-0.0, "0", "-0.0"),
            (1e23, "99999999999999991611392", "1e+23"),
            (1e-05, "1e-05", "1e-05"),
            (0.0001, "0.0001", "0.0001"),
            (1.2345678901234568e20, "123456789012345683968", "1.2345678901234568e+20"),
            (1000000000000000.5, "1000000000000000.5", "1000000000000000.5"),
            (5e-324, "5e-324", "5e-324"),
        ]
        for x, fold, nofold in cases:
            self.assertEqual(rc.number_text(x, True), fold)
            self.assertEqual(rc.number_text(x, False), nofold)


# ---------------------------------------------------------------------------


class VectorFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = json.loads(VECTORS_PATH.read_text("utf-8"))

    def test_format(self):
        doc = self.doc
        self.assertEqual(doc["format"], "rayflow.conformance.canonical")
        self.assertEqual(doc["format_version"], 1)
        names = [v["name"] for v in doc["vectors"]]
        self.assertEqual(len(names), len(set(names)))
        self.assertGreaterEqual(len(names), 180)
        for v in doc["vectors"]:
            keys = set(v)
            self.assertIn(v["mode"], ("fold", "no-fold"))
            self.assertEqual(len(keys & {"input", "input_hex"}), 1, v["name"])
            self.assertEqual(len(keys & {"canonical_hex", "rejection"}), 1, v["name"])
            self.assertLessEqual(keys, {"name", "mode", "input", "input_hex", "canonical_hex", "fingerprints", "rejection"})
            if "rejection" in v:
                self.assertIn(v["rejection"], rc.RULES)
                self.assertNotIn("fingerprints", v)
            for dom, f in v.get("fingerprints", {}).items():
                self.assertRegex(f, r"^sha256:[0-9a-f]{64}$")
                self.assertTrue(dom.isascii())

    def test_every_rule_is_covered(self):
        seen = {(v.get("rejection"), v["mode"]) for v in self.doc["vectors"]}
        fold_only = {"object_entries", "array_items", "string_length", "key_empty", "key_length", "duplicate_key_nfc", "unassigned_code_point"}
        for rule in rc.RULES:
            self.assertIn((rule, "fold"), seen, rule)
            if rule not in fold_only:
                self.assertIn((rule, "no-fold"), seen, rule)

    def test_every_vector_through_the_module(self):
        for v in self.doc["vectors"]:
            with self.subTest(v["name"]):
                data = v["input"].encode("utf-8") if "input" in v else bytes.fromhex(v["input_hex"])
                fold = v["mode"] == "fold"
                if "rejection" in v:
                    with self.assertRaises(rc.Rejected) as cm:
                        rc.canonicalize(data, fold)
                    self.assertEqual(cm.exception.rule, v["rejection"])
                    continue
                self.assertEqual(rc.canonicalize(data, fold).hex(), v["canonical_hex"])
                for dom, want in v.get("fingerprints", {}).items():
                    self.assertEqual(rc.fingerprint(dom, data, fold), want)
                    self.assertEqual(fp(dom, bytes.fromhex(v["canonical_hex"])), want)

    def test_every_vector_through_the_cli_batch(self):
        lines = []
        for v in self.doc["vectors"]:
            data = v["input"].encode("utf-8") if "input" in v else bytes.fromhex(v["input_hex"])
            lines.append(json.dumps({"mode": v["mode"], "input_hex": data.hex()}))
        r = run_cli(["batch"], ("\n".join(lines) + "\n").encode())
        self.assertEqual(r.returncode, 0, r.stderr)
        answers = [json.loads(x) for x in r.stdout.decode().splitlines()]
        self.assertEqual(len(answers), len(self.doc["vectors"]))
        for v, a in zip(self.doc["vectors"], answers):
            want = {"rejection": v["rejection"]} if "rejection" in v else {"canonical_hex": v["canonical_hex"]}
            self.assertEqual(a, want, v["name"])

    def test_file_matches_generator(self):
        # make_vectors asserts every hand-written expectation while building
        self.assertEqual(make_vectors.render(make_vectors.build()), VECTORS_PATH.read_bytes())


# ---------------------------------------------------------------------------


class CommandLine(unittest.TestCase):
    def test_canon(self):
        r = run_cli(["canon"], b'{"b":1.0,"a":"e\\u0301"}')
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, '{"a":"é","b":1}'.encode(), b""))
        r = run_cli(["canon", "--no-fold"], b'{"b":1.0,"a":"e\\u0301"}')
        self.assertEqual((r.returncode, r.stdout), (0, '{"a":"e\u0301","b":1.0}'.encode()))

    def test_fingerprint(self):
        r = run_cli(["fingerprint", "--domain", "rayflow.workflow-plan-v1"], make_vectors.CONTRACT_V1_INPUT.encode())
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, b"sha256:f865c1540454abea0fd2cee073418f6d45f6f2ee43ae8ab7e7e9d88682c7d64f\n")
        r = run_cli(["fingerprint", "--bare", "--domain=rayflow.workflow-plan-v1"], make_vectors.CONTRACT_V1_INPUT.encode())
        self.assertEqual(r.stdout, b"f865c1540454abea0fd2cee073418f6d45f6f2ee43ae8ab7e7e9d88682c7d64f\n")
        r = run_cli(["fingerprint", "--domain", "x", "--no-fold"], b"[1.0]")
        self.assertEqual(r.stdout.decode(), "sha256:" + hashlib.sha256(b"x\x00[1.0]").hexdigest() + "\n")

    def test_rejection(self):
        for args in (["canon"], ["canon", "--no-fold"], ["fingerprint", "--domain", "d"]):
            r = run_cli(args, b'{"a":1,"a":2}')
            self.assertEqual(r.returncode, 3)
            self.assertEqual(r.stdout, b"")
            self.assertRegex(r.stderr.decode(), r"^rejected: duplicate_key: [^\n]+\n$")
        r = run_cli(["canon"], b"\xff")
        self.assertTrue(r.stderr.startswith(b"rejected: invalid_utf8: "))

    def test_numbers(self):
        r = run_cli(["numbers", "--count", "1000"])
        self.assertEqual(r.stdout, b"a79b081acec090819d84459e57d6744dd033556f6b02dca025651d068a37ee0c 38541\n")
        r = run_cli(["numbers", "--count", "1000", "--no-fold"])
        self.assertEqual(r.stdout, b"18f16d88c8958562fce732cceeb9618c5542d09ffe9f13a31f794ec2fec9322e 37974\n")
        r = run_cli(["numbers", "--count", "0"])
        self.assertEqual(r.stdout, hashlib.sha256(b"").hexdigest().encode() + b" 0\n")

    def test_usage_errors(self):
        for args in (
            [],
            ["frobnicate"],
            ["canon", "--fold"],
            ["canon", "--no"],
            ["canon", "extra"],
            ["fingerprint"],
            ["fingerprint", "--domain"],
            ["fingerprint", "--domain", "é"],
            ["numbers"],
            ["numbers", "--count", "-1"],
            ["numbers", "--count", "ten"],
        ):
            with self.subTest(args=args):
                r = run_cli(args, b"{}")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stdout, b"")

    def test_batch(self):
        lines = [
            {"mode": "fold", "input_hex": b"[1.0]".hex()},
            {"mode": "no-fold", "input_hex": b"[1.0]".hex()},
            {"mode": "fold", "input_hex": b'{"":1}'.hex()},
            {"mode": "no-fold", "input_hex": b"\xc0\x80".hex()},
        ]
        r = run_cli(["batch"], "".join(json.dumps(x) + "\n" for x in lines).encode())
        self.assertEqual(r.returncode, 0)
        self.assertEqual(
            r.stdout.decode().splitlines(),
            [
                '{"canonical_hex":"5b315d"}',
                '{"canonical_hex":"5b312e305d"}',
                '{"rejection":"key_empty"}',
                '{"rejection":"invalid_utf8"}',
            ],
        )


# ---------------------------------------------------------------------------


class UnicodeTables(unittest.TestCase):
    """The Unicode 15.0.0 data from gendelta against Python's 14.0.0 unicodedata."""

    def test_versions(self):
        self.assertEqual(DELTA["unicode_version"], "15.0.0")
        self.assertEqual(DELTA["norm_version"], "15.0.0")
        self.assertEqual(unicodedata.unidata_version, "14.0.0")

    def test_assignment_delta(self):
        assigned15 = set(expand(DELTA["assigned"]))
        assigned14 = {cp for cp in range(0x110000) if unicodedata.category(chr(cp)) != "Cn"}
        self.assertLessEqual(assigned14, assigned15)
        new = assigned15 - assigned14
        self.assertEqual(len(new), 4489)  # Unicode 15.0.0 added 4,489 characters
        self.assertLessEqual(new, set(expand(DELTA["added"])))
        for cp in (0x1FAE8, 0x31350, 0x11F00, 0x1E4D0, 0x10EFD, 0x1F6DC):
            self.assertIn(cp, new)
        for cp in range(0x110000):
            self.assertEqual(rc.is_assigned15(cp), cp in assigned15)

    def test_noncharacters(self):
        got = set(expand(DELTA["noncharacters"]))
        self.assertEqual(got, {cp for cp in range(0x110000) if rc.is_noncharacter(cp)})
        self.assertEqual(len(got), 66)

    def test_reserved_regex_matches_function(self):
        text = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
        by_regex = {ord(m.group(0)) for m in rc._RESERVED_RE.finditer(text)}
        by_func = {cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and rc.is_reserved(cp)}
        self.assertEqual(by_regex, by_func)
        for cp in (0x378, 0x1FFFD, 0xE0000, 0x2EBF0, 0x1CC00):
            self.assertIn(cp, by_func)
        for cp in (0xFDD0, 0xFFFE, 0x10FFFF, 0xE000, 0x10FFFD, 0x1FAE8, 0x41):
            self.assertNotIn(cp, by_func)

    def test_combining_classes(self):
        go = dict(expand(DELTA["ccc"]))
        overrides = {}
        for cp in range(0x110000):
            want = go.get(cp, 0)
            self.assertEqual(rc.ccc(cp), want, hex(cp))
            if unicodedata.category(chr(cp)) != "Cn":
                self.assertEqual(unicodedata.combining(chr(cp)), want, hex(cp))
            elif want:
                overrides[cp] = want
        self.assertEqual(overrides, NEW_15_MARKS)

    def _full_decomposition(self, cp):
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            return [cp]
        out = []
        for p in d.split():
            out.extend(self._full_decomposition(int(p, 16)))
        return out

    def test_canonical_decompositions_identical(self):
        lines, composites = [], []
        for cp in range(0x110000):
            if 0xD800 <= cp <= 0xDFFF or 0xAC00 <= cp <= 0xD7A3:
                continue
            full = self._full_decomposition(cp)
            if full != [cp]:
                lines.append(f"{cp:04X}:" + " ".join(f"{x:04X}" for x in full) + "\n")
                if unicodedata.normalize("NFC", chr(cp)) == chr(cp):
                    composites.append(f"{cp:04X}\n")
                self.assertEqual(tuple(full), rc._decompose_cp(cp))
                self.assertLess(cp, rc._DECOMPOSITION_SCAN_END)
        want = DELTA["canonical_decompositions"]
        self.assertEqual(len(lines), want["count"])
        self.assertEqual(hashlib.sha256("".join(lines).encode()).hexdigest(), want["sha256"])
        want = DELTA["primary_composites"]
        self.assertEqual(len(composites), want["count"])
        self.assertEqual(hashlib.sha256("".join(composites).encode()).hexdigest(), want["sha256"])
        self.assertEqual(DELTA["added_decompositions"], {})

    def test_composition_pairs(self):
        pairs = rc.composition_pairs()
        self.assertEqual(len(pairs), DELTA["primary_composites"]["count"])
        for (a, b), c in pairs.items():
            self.assertEqual(unicodedata.normalize("NFC", chr(a) + chr(b)), chr(c))
            self.assertEqual(rc.ccc(a), 0)


class NFC(unittest.TestCase):
    def test_every_code_point_against_unicodedata(self):
        for cp in range(0x110000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            c = chr(cp)
            if unicodedata.category(c) == "Cn":
                if cp in NEW_15_MARKS or not rc.is_assigned15(cp):
                    continue
                self.assertEqual(rc.nfc(c), c)  # new in 15.0: no decomposition
                continue
            self.assertEqual(rc.nfc(c), unicodedata.normalize("NFC", c), hex(cp))

    def test_trivial_prefix(self):
        pairs_second = {b for (_, b) in rc.composition_pairs()}
        for cp in range(0x300):
            self.assertEqual(rc.ccc(cp), 0)
            self.assertNotIn(cp, pairs_second)
            self.assertEqual(unicodedata.normalize("NFC", chr(cp)), chr(cp))

    def test_random_strings_against_unicodedata(self):
        rng = random.Random(20260722)
        marks = [cp for cp in range(0x300, 0x20000) if unicodedata.combining(chr(cp))]
        pairs = rc.composition_pairs()
        pool = sorted(
            set(marks)
            | {a for a, _ in pairs}
            | {b for _, b in pairs}
            | set(pairs.values())
            | {cp for cp in range(0xC0, 0x250)}
            | set(range(0x1100, 0x1113))
            | set(range(0x1161, 0x1176))
            | set(range(0x11A7, 0x11C3))
            | {0xAC00, 0xAC01, 0xAC1C, 0xD7A3, 0x212B, 0x2126, 0x0344, 0x0F73, 0x0958, 0x0B47, 0x0B3E, 0x0B57}
            | set(range(0x41, 0x7B))
        )
        for _ in range(20000):
            s = "".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 10)))
            self.assertEqual(rc.nfc(s), unicodedata.normalize("NFC", s), [hex(ord(c)) for c in s])
        for n in (29, 30, 31, 64, 300):  # long runs of non-starters: plain UAX #15
            s = "a" + "".join(chr(rng.choice(marks)) for _ in range(n)) + "\u0301"
            self.assertEqual(rc.nfc(s), unicodedata.normalize("NFC", s))
            self.assertNotIn("\u034f", rc.nfc(s))

    def test_x_text_samples(self):
        self.assertGreater(len(DELTA["nfc_samples"]), 100)
        for inp, out in DELTA["nfc_samples"]:
            s = "".join(map(chr, inp))
            self.assertEqual(rc.nfc(s), "".join(map(chr, out)), inp)

    def test_new_marks_differ_from_14(self):
        # a + M + U+0301 / U+0323: with 15.0.0 classes the accent reorders or composes
        for m, cls in NEW_15_MARKS.items():
            t = "\u0323" if cls == 230 else "\u0301"
            s = "a" + chr(m) + t
            self.assertNotEqual(rc.nfc(s), unicodedata.normalize("NFC", s), hex(m))
        self.assertEqual(rc.nfc("a\U00010efd\u0301"), "\u00e1\U00010efd")
        self.assertEqual(rc.nfc("x\u0301\U00011f41"), "x\U00011f41\u0301")
        self.assertEqual(rc.nfc("x\U0001e4ec\u0301"), "x\u0301\U0001e4ec")
        self.assertEqual(rc.nfc("a\U0001e08f\u0323"), "\u1ea1\U0001e08f")


# ---------------------------------------------------------------------------


def _random_value(rng, depth=0):
    strings = ["", "a", "é", "e\u0301", "Å", "A\u030a", "\u212b", "😀", "\uffff", "\ue000", "\x00\x1f\x7f", '"\\/', "\u2028",
               "\u1100\u1161", "\uac00", "x\u0301\u0323", "<&>", "\ufeff", "\U0010fffd"]
    k = rng.random()
    if depth >= 5 or k < 0.45:
        c = rng.randrange(8)
        if c == 0:
            return rng.choice([None, True, False])
        if c == 1:
            return rng.randint(-(10**30), 10**30)
        if c == 2:
            return rng.randint(-1000, 1000)
        if c in (3, 4):
            while True:
                x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
                if math.isfinite(x):
                    return x
        if c == 5:
            return rng.choice([0.0, -0.0, 1.0, 100.0, 1e16, 1e-5, 0.1, 1e23, 5e-324, 2.5, -7.0])
        return "".join(rng.choice(strings) for _ in range(rng.randint(0, 3)))
    if k < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {"".join(rng.choice(strings) for _ in range(rng.randint(0, 2))): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _seed_normalize(v, depth=0):
    """Normalization (docs/contracts.md#canonical-json-v1) written out literally for Python values (Unicode 14 NFC)."""
    if depth > 16:
        raise ValueError("depth")
    if isinstance(v, float):
        return int(v) if v == math.floor(v) else v
    if isinstance(v, str):
        if len(v) > 2048:
            raise ValueError("string")
        return unicodedata.normalize("NFC", v)
    if isinstance(v, list):
        return [_seed_normalize(x, depth + 1) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            nk = unicodedata.normalize("NFC", k)
            if not nk or len(nk) > 2048:
                raise ValueError("key")
            if nk in out:
                raise ValueError("dup")
            out[nk] = _seed_normalize(x, depth + 1)
        return out
    return v


def _dumps(v) -> bytes:
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


class Differential(unittest.TestCase):
    """Against Python's json module, the seed system's encoder."""

    def test_random_values(self):
        rng = random.Random(7)
        for _ in range(3000):
            v = _random_value(rng)
            text = json.dumps(v, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode("utf-8")
            self.assertEqual(rc.canonicalize(text, False), _dumps(v))
            try:
                want = _dumps(_seed_normalize(v))
            except ValueError:
                with self.assertRaises(rc.Rejected):
                    rc.canonicalize(text, True)
                continue
            self.assertEqual(rc.canonicalize(text, True), want)

    def test_decoder_agrees_with_json_loads_on_valid_text(self):
        for text in ['{"a":[1,2.5,-0.0,"x\\n"],"b":{}}', "[1e400]", '"\\ud83d\\ude00"', "  [ ]  ", "-0", "1E+2"]:
            try:
                ours = rc.decode(text.encode(), fold=False)
            except rc.Rejected as e:
                self.assertEqual(e.rule, "non_finite")
                continue
            theirs = json.loads(text)
            self.assertEqual(repr(ours), repr(theirs))

    def test_python_json_leniencies_are_rejected(self):
        cases = [
            (b"NaN", "non_finite"),
            (b"-Infinity", "non_finite"),
            (b"[1e400]", "non_finite"),
            (b"\xef\xbb\xbf[]", "syntax"),
            (b'"\\udc00"', "lone_surrogate"),
            (b'{"a":1,"a":2}', "duplicate_key"),
            (b"1" * 4301, "integer_digits"),
        ]
        for data, rule in cases:
            with self.subTest(data=data[:20]):
                for fold in (True, False):
                    with self.assertRaises(rc.Rejected) as cm:
                        rc.canonicalize(data, fold)
                    self.assertEqual(cm.exception.rule, rule)

    def test_number_literals(self):
        self.assertEqual(canon("-0"), b"0")
        self.assertEqual(canon("-0", False), b"0")
        self.assertEqual(canon("1e-400", False), b"0.0")
        self.assertEqual(canon("-1e-400", False), b"-0.0")
        self.assertEqual(canon("-1e-400"), b"0")
        self.assertEqual(canon("-" + "9" * 4300), b"-" + b"9" * 4300)


if __name__ == "__main__":
    unittest.main()
