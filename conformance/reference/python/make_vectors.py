#!/usr/bin/env python3
"""Write conformance/vectors/canonical.json.

Every vector is declared here with its input and, for most of them, an expected
result written by hand from the contract (``expect``: the canonical text, or
``expect_cps`` for Unicode cases, or ``reject``). The reference implementation
computes every output; this script refuses to write the file if the reference
disagrees with a hand-written expectation, if a contract fingerprint does not
match, or if a Unicode 15.0.0 combining-mark vector disagrees with the NFC result
x/text gave gendelta. Run from anywhere:

    python3 conformance/reference/python/make_vectors.py [--check]

``--check`` compares with the file on disk instead of writing it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import rayflow_canon as rc  # noqa: E402

OUT = HERE.parent.parent / "vectors" / "canonical.json"

PLAN = "rayflow.workflow-plan-v1"
DEFINITION = "rayflow.workflow-definition-v1"
TRUST = "rayflow.workflow-plan-trust-v1"
TOPOLOGY_PAGE = "rayflow:workflow-progress:topology-page:v1"

# The fixed fingerprint vectors of the reference system, under its django-ray domains
# (reproduced by the tests) and under rayflow's plan domain
# (docs/contracts.md#number-lines-and-vectors).
CONTRACT_DJANGO_RAY = {
    "v1": ("django-ray.workflow-plan-v1", "sha256:0bbe2a4302b0895c609182d1f504c3e60d266cc5641650967f19149fedc75b15"),
    "v2": ("django-ray.workflow-plan-v1", "sha256:67d7bd12b88266ca10304bf96901328cee853bd871f111a5429f7d619ee55a34"),
    "v3": ("django-ray.workflow-plan-v1", "sha256:d7cf980b21e6cd83016cc2198e7f125c8cc2c15b82d601730584f179cba6d893"),
    "v4": ("django-ray.workflow-plan-v1", "sha256:9f4e916bd6311aab02552d2b2e7b8043f715f32377761e725f6ac7a08a592a85"),
    "v6": ("django-ray.workflow-definition-v1", "sha256:8f4671da85f81ff51198cfa0725ec39261712577db92aa61373ea45fd0b43272"),
    "v7": ("django-ray.workflow-plan-trust-v1", "sha256:8c1b9b71d79123b29f8b99b44a93f7f5384b7bf19b125fb90d735b0d4bf410ae"),
}
CONTRACT_RAYFLOW = {
    "v1": "sha256:f865c1540454abea0fd2cee073418f6d45f6f2ee43ae8ab7e7e9d88682c7d64f",
    "v4": "sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0",
}
CONTRACT_V1_INPUT = '{"b":1,"a":[1.0,-0.0,0.5,1e-05,1e20,1e23,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424]}'
CONTRACT_V1_CANON = '{"a":[1,0,0.5,1e-05,100000000000000000000,99999999999999991611392,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424],"b":1}'
CONTRACT_V2_INPUT = '{"😀":1,"\\uFFFF":2,"a":3,"é":4,"Z":5,"aa":6,"a\\u0000":7}'
CONTRACT_V2_HEX = "7b225a223a352c2261223a332c22615c7530303030223a372c226161223a362c22c3a9223a342c22efbfbf223a322c22f09f9880223a317d"
CONTRACT_V3_INPUT = '{"e\\u0301":"A\\u030a","x":"/\\"\\\\\\b\\f\\n\\r\\t\\u001f\\u007f\\u2028é😀"}'
CONTRACT_V3_HEX = "7b2278223a222f5c225c5c5c625c665c6e5c725c745c75303031667fe280a8c3a9f09f9880222c22c3a9223a22c385227d"
CONTRACT_V4_DJANGO_RAY_INPUT = '{"plan_format":"django-ray.workflow-plan","plan_format_version":1}'
CONTRACT_V4_INPUT = '{"plan_format":"rayflow.workflow-plan","plan_format_version":1}'
CONTRACT_V6_INPUT = '{"build_revision":null,"callables":[],"container_image_digest":null}'

VECTORS: list[dict] = []


def add(name, mode, inp=None, *, hexin=None, expect=None, expect_cps=None, reject=None, fingerprints=()):
    """Declare one vector. inp: JSON text (str); hexin: raw bytes instead."""
    assert mode in ("fold", "no-fold")
    assert (inp is None) != (hexin is None)
    VECTORS.append(
        {
            "name": name,
            "mode": mode,
            "input": inp,
            "input_hex": hexin,
            "expect": expect,
            "expect_cps": expect_cps,
            "reject": reject,
            "fingerprints": list(fingerprints),
        }
    )


def both(name, inp=None, *, hexin=None, fold=None, nofold=None, reject=None, nofold_reject=None):
    """The same input in both modes; fold/nofold are the expected texts."""
    add(name + "/fold", "fold", inp, hexin=hexin, expect=fold, reject=reject)
    add(name + "/no-fold", "no-fold", inp, hexin=hexin, expect=nofold, reject=nofold_reject or reject)


def J(s: str) -> str:
    """A JSON string literal with \\u escapes for every non-ASCII and control char."""
    return json.dumps(s, ensure_ascii=True)


# ---------------------------------------------------------------------------
# the fixed vectors, rayflow domains (docs/contracts.md#number-lines-and-vectors)

add("contract/v1_plan/fold", "fold", CONTRACT_V1_INPUT, expect=CONTRACT_V1_CANON, fingerprints=[PLAN])
add(
    "contract/v1_plan/no-fold",
    "no-fold",
    CONTRACT_V1_INPUT,
    expect='{"a":[1.0,-0.0,0.5,1e-05,1e+20,1e+23,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424],"b":1}',
)
add("contract/v2_key_order/fold", "fold", CONTRACT_V2_INPUT, fingerprints=[PLAN])
add(
    "contract/v2_key_order/no-fold",
    "no-fold",
    CONTRACT_V2_INPUT,
    expect='{"Z":5,"a":3,"a\\u0000":7,"aa":6,"é":4,"\uffff":2,"😀":1}',
)
add("contract/v3_nfc_escapes/fold", "fold", CONTRACT_V3_INPUT, fingerprints=[PLAN])
add(
    "contract/v3_nfc_escapes/no-fold",
    "no-fold",
    CONTRACT_V3_INPUT,
    expect='{"e\u0301":"A\u030a","x":"/\\"\\\\\\b\\f\\n\\r\\t\\u001f\x7f\u2028é😀"}',
)
add("contract/v4_plan_format/fold", "fold", CONTRACT_V4_INPUT, expect=CONTRACT_V4_INPUT, fingerprints=[PLAN])
add("contract/v5_duplicate_after_nfc/fold", "fold", '{"e\\u0301":1,"é":2}', reject="duplicate_key_nfc")
add("contract/v5_nan/fold", "fold", '{"a":NaN}', reject="non_finite")
add("contract/v5_non_string_key/fold", "fold", "{1:2}", reject="syntax")
add("contract/v5_empty_key/fold", "fold", '{"":1}', reject="key_empty")
add("contract/v5_depth_17/fold", "fold", "[" * 17 + "1" + "]" * 17, reject="depth")
add("contract/v6_definition/fold", "fold", CONTRACT_V6_INPUT, expect=CONTRACT_V6_INPUT, fingerprints=[DEFINITION])
add("contract/v7_trust_empty/fold", "fold", "{}", expect="{}", fingerprints=[TRUST])
add(
    "contract/v9_summary/no-fold",
    "no-fold",
    '{"progress_percent":100.0,"b":50.0}',
    expect='{"b":50.0,"progress_percent":100.0}',
    fingerprints=[TOPOLOGY_PAGE],
)
add("contract/v9_summary/fold", "fold", '{"progress_percent":100.0,"b":50.0}', expect='{"b":50,"progress_percent":100}')

# ---------------------------------------------------------------------------
# plan: the bounds of a dynamic_map node, without and with rayflow's item
# batching (maximum_items_per_task sorts after its prefix maximum_items; the
# integral cancel timeout folds to an integer)

add(
    "plan/map_bounds_unbatched/fold",
    "fold",
    '{"maximum_items":1000,"maximum_in_flight":64,"cancel_timeout_seconds":1.0}',
    expect='{"cancel_timeout_seconds":1,"maximum_in_flight":64,"maximum_items":1000}',
    fingerprints=[PLAN],
)
add(
    "plan/map_bounds_items_per_task/fold",
    "fold",
    '{"maximum_items_per_task":16,"maximum_items":1000,"maximum_in_flight":64,"cancel_timeout_seconds":1.0}',
    expect='{"cancel_timeout_seconds":1,"maximum_in_flight":64,"maximum_items":1000,"maximum_items_per_task":16}',
    fingerprints=[PLAN],
)
# automatic item batching (WithAutoBatching): item_batching "auto" beside the cap,
# sorting before the maximum_* keys; plans without it do not carry the key
add(
    "plan/map_bounds_auto_batching/fold",
    "fold",
    '{"maximum_items_per_task":256,"item_batching":"auto","maximum_items":1000,"maximum_in_flight":64,"cancel_timeout_seconds":1.0}',
    expect='{"cancel_timeout_seconds":1,"item_batching":"auto","maximum_in_flight":64,"maximum_items":1000,"maximum_items_per_task":256}',
    fingerprints=[PLAN],
)

# ---------------------------------------------------------------------------
# number: every literal form in both modes (fold text, no-fold text)

MAX_DOUBLE_INT = str(int(1.7976931348623157e308))
assert len(MAX_DOUBLE_INT) == 309
NUMBERS = [
    ("zero", "0", "0", "0"),
    ("minus_zero_integer", "-0", "0", "0"),
    ("zero_point_zero", "0.0", "0", "0.0"),
    ("minus_zero_point_zero", "-0.0", "0", "-0.0"),
    ("zero_exponent", "0e0", "0", "0.0"),
    ("minus_zero_exponent", "-0E-5", "0", "-0.0"),
    ("one_point_zero", "1.0", "1", "1.0"),
    ("hundred_point_zero", "100.0", "100", "100.0"),
    ("exp_upper_1E5", "1E5", "100000", "100000.0"),
    ("exp_1e2", "1e2", "100", "100.0"),
    ("exp_plus_1.5E+3", "1.5E+3", "1500", "1500.0"),
    ("exp_leading_zeros", "1e0005", "100000", "100000.0"),
    ("exp_1e15", "1e15", "1000000000000000", "1000000000000000.0"),
    ("exp_1e16", "1e16", "10000000000000000", "1e+16"),
    ("exp_1e20", "1e20", "100000000000000000000", "1e+20"),
    ("exp_1e21", "1e21", "1000000000000000000000", "1e+21"),
    ("exp_1e22", "1e22", "10000000000000000000000", "1e+22"),
    ("exp_1e23", "1e23", "99999999999999991611392", "1e+23"),
    ("fraction_1e15_plus_half", "1000000000000000.5", "1000000000000000.5", "1000000000000000.5"),
    ("fraction_just_below_1e16", "9999999999999998.0", "9999999999999998", "9999999999999998.0"),
    ("fraction_123456789.125", "123456789.125", "123456789.125", "123456789.125"),
    ("fraction_0.5", "0.5", "0.5", "0.5"),
    ("fraction_0.1", "0.1", "0.1", "0.1"),
    ("fraction_long_mantissa", "0.1000000000000000055511151231257827", "0.1", "0.1"),
    ("fraction_0.30000000000000004", "0.30000000000000004", "0.30000000000000004", "0.30000000000000004"),
    ("fraction_negative", "-2.5", "-2.5", "-2.5"),
    ("fraction_4.35", "4.35", "4.35", "4.35"),
    ("small_1e-4", "1e-4", "0.0001", "0.0001"),
    ("small_0.0001", "0.0001", "0.0001", "0.0001"),
    ("small_1e-5", "1e-5", "1e-05", "1e-05"),
    ("small_0.00001", "0.00001", "1e-05", "1e-05"),
    ("small_1e-7", "1e-7", "1e-07", "1e-07"),
    ("small_-1.5e-07", "-1.5e-07", "-1.5e-07", "-1.5e-07"),
    ("small_2.5E-5", "2.5E-5", "2.5e-05", "2.5e-05"),
    ("small_0.00012345", "0.00012345", "0.00012345", "0.00012345"),
    ("min_normal", "2.2250738585072014e-308", "2.2250738585072014e-308", "2.2250738585072014e-308"),
    ("min_subnormal", "5e-324", "5e-324", "5e-324"),
    ("min_subnormal_rounded_up", "2.4703282292062328e-324", "5e-324", "5e-324"),
    ("just_below_half_min_subnormal", "2.4703282292062327e-324", "0", "0.0"),
    ("underflow_1e-400", "1e-400", "0", "0.0"),
    ("underflow_-1e-400", "-1e-400", "0", "-0.0"),
    ("underflow_huge_negative_exponent", "1e-99999999999999999999", "0", "0.0"),
    ("max_double", "1.7976931348623157e308", MAX_DOUBLE_INT, "1.7976931348623157e+308"),
    ("max_double_rounded_down", "1.7976931348623158e308", MAX_DOUBLE_INT, "1.7976931348623157e+308"),
    ("minus_max_double", "-1.7976931348623157E+308", "-" + MAX_DOUBLE_INT, "-1.7976931348623157e+308"),
    ("float_2_53_plus_1", "9007199254740993.0", "9007199254740992", "9007199254740992.0"),
    ("float_2_64", "18446744073709551616.0", "18446744073709551616", "1.8446744073709552e+19"),
    ("float_many_digits", "12345678901234567890.0", "12345678901234567168", "1.2345678901234567e+19"),
    ("float_1e300_fraction_form", "1" + "0" * 300 + ".5", str(int(float("1e300"))), "1e+300"),
    ("integer_2_53_plus_1", "9007199254740993", "9007199254740993", "9007199254740993"),
    ("integer_2_64", "18446744073709551616", "18446744073709551616", "18446744073709551616"),
    ("integer_2_70", "1180591620717411303424", "1180591620717411303424", "1180591620717411303424"),
    ("integer_huge_negative", "-" + "9876543210" * 8, "-" + "9876543210" * 8, "-" + "9876543210" * 8),
    ("integer_400_digits", "1" + "0" * 399, "1" + "0" * 399, "1" + "0" * 399),
    ("integer_negative_one", "-1", "-1", "-1"),
]
for name, lit, fold_text, nofold_text in NUMBERS:
    both(f"number/{name}", f"[{lit}]", fold=f"[{fold_text}]", nofold=f"[{nofold_text}]")
both("number/root_scalar", "1.5e3", fold="1500", nofold="1500.0")
both("number/object_value", '{"n":-0.0,"m":2.0,"f":0.25}', fold='{"f":0.25,"m":2,"n":0}', nofold='{"f":0.25,"m":2.0,"n":-0.0}')

# ---------------------------------------------------------------------------
# escape: string escaping and unescaping (identical in both modes)

ALL_C0_IN = '"' + "".join(f"\\u{c:04X}" for c in range(0x20)) + '"'
ALL_C0_OUT = '"' + "".join({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c, f"\\u{c:04x}") for c in range(0x20)) + '"'
ESCAPES = [
    ("all_c0_controls", ALL_C0_IN, ALL_C0_OUT),
    ("short_forms", '"\\b\\f\\n\\r\\t"', '"\\b\\f\\n\\r\\t"'),
    ("short_forms_from_u", '"\\u0008\\u000C\\u000a\\u000D\\u0009"', '"\\b\\f\\n\\r\\t"'),
    ("quote_backslash", '"\\"\\\\"', '"\\"\\\\"'),
    ("quote_backslash_from_u", '"\\u0022\\u005C"', '"\\"\\\\"'),
    ("solidus_raw", '"a/b"', '"a/b"'),
    ("solidus_escaped_input", '"a\\/b"', '"a/b"'),
    ("del_escaped_input", '"\\u007f"', '"\x7f"'),
    ("del_raw", '"\x7f"', '"\x7f"'),
    ("c1_control_raw", '"\\u0085\\u009f"', '"\u0085\u009f"'),
    ("line_separators_escaped_input", '"\\u2028\\u2029"', '"\u2028\u2029"'),
    ("line_separators_raw", '"\u2028\u2029"', '"\u2028\u2029"'),
    ("html_characters_raw", '"<>&\'"', '"<>&\'"'),
    ("ascii_via_u_escape", '"\\u0041\\u0062"', '"Ab"'),
    ("latin1_via_u_escape", '"\\u00e9\\u00C9"', '"éÉ"'),
    ("bmp_via_u_escape", '"\\u4e2d\\uFFFD"', '"中\ufffd"'),
    ("astral_via_surrogate_pair", '"\\ud83d\\ude00"', '"😀"'),
    ("astral_via_surrogate_pair_upper", '"\\uD83D\\uDE00"', '"😀"'),
    ("astral_raw", '"😀𝄞"', '"😀𝄞"'),
    ("max_code_point_pair", '"\\udbff\\udffd"', '"\U0010fffd"'),
    ("nul_in_key", '{"\\u0000":1}', '{"\\u0000":1}'),
    ("control_in_key", '{"\\u001F\\n":1}', '{"\\u001f\\n":1}'),
    ("bom_inside_string", '"\ufeffa"', '"\ufeffa"'),
    ("empty_string", '""', '""'),
]
for name, inp, out in ESCAPES:
    both(f"escape/{name}", inp, fold=out, nofold=out)

# ---------------------------------------------------------------------------
# structure: literals, containers, whitespace

STRUCTURE = [
    ("root_true", "true", "true"),
    ("root_false", "false", "false"),
    ("root_null", "null", "null"),
    ("root_string", '"x"', '"x"'),
    ("literals_in_array", "[true,false,null]", "[true,false,null]"),
    ("empty_array", "[]", "[]"),
    ("empty_object", "{}", "{}"),
    ("nested_empty_array", "[[]]", "[[]]"),
    ("empty_object_in_array", "[{}]", "[{}]"),
    ("empty_containers_as_values", '{"b":[],"a":{}}', '{"a":{},"b":[]}'),
    ("mixed_empty_nesting", "[[],{},[[]],[{}],{\"a\":[{}]}]", '[[],{},[[]],[{}],{"a":[{}]}]'),
    ("array_order_kept", '[3,1,2,"b","a"]', '[3,1,2,"b","a"]'),
    ("nested_keys_sorted", '{"z":{"y":1,"x":2},"a":[{"d":1,"c":2}]}', '{"a":[{"c":2,"d":1}],"z":{"x":2,"y":1}}'),
    ("same_key_in_sibling_objects", '[{"a":1},{"a":2}]', '[{"a":1},{"a":2}]'),
    ("whitespace_all_four", ' \t\n\r[ 1 ,\t{ "a" :\n null } ]\r\n\t ', '[1,{"a":null}]'),
    ("whitespace_around_scalar", "\n\n 7 \n", "7"),
    ("whitespace_in_empty_containers", "[ ] ", "[]"),
    ("whitespace_in_empty_object", "{\r\n}", "{}"),
]
for name, inp, out in STRUCTURE:
    both(f"structure/{name}", inp, fold=out, nofold=out)

# ---------------------------------------------------------------------------
# key_order: code point order (= UTF-8 byte order), not UTF-16 order

KEY_ORDER = [
    ("ffff_before_astral", '{"😀":1,"\\uffff":2}', '{"\uffff":2,"😀":1}'),
    ("private_use_before_astral", '{"😀":1,"\\ue000":2}', '{"\ue000":2,"😀":1}'),
    ("bmp_ranges", '{"\\uffff":1,"😀":2,"\\ue000":3,"\\ud7fb":4,"\\u00ff":5}', '{"ÿ":5,"\ud7fb":4,"\ue000":3,"\uffff":1,"😀":2}'),
    ("ascii", '{"b":1,"a":2,"B":3,"_":4,"0":5,"~":6," ":7,"\\u007f":8}', '{" ":7,"0":5,"B":3,"_":4,"a":2,"b":1,"~":6,"\x7f":8}'),
    ("prefixes", '{"ab":1,"a":2,"a\\u0000":3,"aa":4,"a ":5}', '{"a":2,"a\\u0000":3,"a ":5,"aa":4,"ab":1}'),
    ("two_byte_vs_three_byte", '{"\\u0800":1,"\\u07ff":2,"\\u0080":3}', '{"\u0080":3,"\u07ff":2,"\u0800":1}'),
    ("astral_planes", '{"\\udbff\\udffd":1,"\\ud800\\udc00":2,"\\ud83d\\ude00":3}', '{"\U00010000":2,"😀":3,"\U0010fffd":1}'),
]
for name, inp, out in KEY_ORDER:
    both(f"key_order/{name}", inp, fold=out, nofold=out)

# ---------------------------------------------------------------------------
# nfc: Unicode 15.0.0 NFC of keys and values (fold), untouched in no-fold

NFC = [
    # name, input string (Python), expected NFC (Python)
    ("value_e_acute", "e\u0301", "\u00e9"),
    ("value_a_ring", "A\u030a", "\u00c5"),
    ("value_already_nfc", "\u00e9\u00c5", "\u00e9\u00c5"),
    ("singleton_angstrom", "\u212b", "\u00c5"),
    ("singleton_ohm", "\u2126", "\u03a9"),
    ("singleton_combining_grave_tone", "a\u0340", "\u00e0"),
    ("exclusion_devanagari_qa", "\u0958", "\u0915\u093c"),
    ("exclusion_forking", "\u2adc", "\u2add\u0338"),
    ("non_starter_decomposition_0344", "\u0344", "\u0308\u0301"),
    ("non_starter_decomposition_0f73", "\u0f73", "\u0f71\u0f72"),
    ("reorder_then_compose", "a\u0302\u0323", "\u1ead"),
    ("compose_then_reorder", "a\u0323\u0302", "\u1ead"),
    ("reorder_without_composition", "x\u0301\u0323", "x\u0323\u0301"),
    ("dot_above_dot_below", "\u1e0b\u0323", "\u1e0d\u0307"),
    ("blocked_same_class", "a\u0301\u0301", "\u00e1\u0301"),
    ("two_level_composition", "C\u0327\u0301", "\u1e08"),
    ("compatibility_untouched", "\ufb01\u2460\uff21\u00bd", "\ufb01\u2460\uff21\u00bd"),
    ("hangul_lv", "\u1100\u1161", "\uac00"),
    ("hangul_lvt", "\u1100\u1161\u11a8", "\uac01"),
    ("hangul_syllable_plus_t", "\uac00\u11a8", "\uac01"),
    ("hangul_lvt_syllable_plus_t", "\uac01\u11a8", "\uac01\u11a8"),
    ("hangul_syllable_kept", "\ud55c\uad6d\uc5b4", "\ud55c\uad6d\uc5b4"),
    ("hangul_compatibility_jamo_untouched", "\u3131\u314f", "\u3131\u314f"),
    ("hangul_lv_then_mark", "\u1100\u1161\u0300", "\uac00\u0300"),
    ("starters_compose_oriya", "\u0b47\u0b3e", "\u0b4b"),
    ("leading_non_starter", "\u0301e", "\u0301e"),
]
for name, s, want in NFC:
    inp = "[" + J(s) + "]"
    add(f"nfc/{name}/fold", "fold", inp, expect='["' + want + '"]')
for name in ("value_e_acute", "singleton_angstrom", "hangul_lvt", "reorder_without_composition", "non_starter_decomposition_0344"):
    s = dict((n, s) for n, s, _ in NFC)[name]
    add(f"nfc/{name}/no-fold", "no-fold", "[" + J(s) + "]", expect='["' + s + '"]')
add("nfc/key_e_acute/fold", "fold", '{"e\\u0301":1}', expect='{"é":1}')
add("nfc/key_e_acute/no-fold", "no-fold", '{"e\\u0301":1}', expect='{"e\u0301":1}')
add("nfc/key_reorder_after_nfc/fold", "fold", '{"e\\u0301":1,"f":2,"z":3}', expect='{"f":2,"z":3,"é":1}')
add("nfc/key_reorder_after_nfc/no-fold", "no-fold", '{"e\\u0301":1,"f":2,"z":3}', expect='{"e\u0301":1,"f":2,"z":3}')
add("nfc/key_hangul/fold", "fold", '{"\\u1100\\u1161":1,"\\uac01":2}', expect='{"가":1,"각":2}')
add("nfc/nested_key_and_value/fold", "fold", '{"a":{"A\\u030a":["o\\u0308"]}}', expect='{"a":{"Å":["ö"]}}')
add("nfc/duplicate_key_nfc_angstrom/fold", "fold", '{"\\u212b":1,"\\u00c5":2}', reject="duplicate_key_nfc")
add("nfc/duplicate_key_nfc_angstrom/no-fold", "no-fold", '{"\\u212b":1,"\\u00c5":2}', expect='{"\u00c5":2,"\u212b":1}')
add("nfc/duplicate_key_nfc_hangul/fold", "fold", '{"\\uac00":1,"\\u1100\\u1161":2}', reject="duplicate_key_nfc")
add("nfc/duplicate_key_nfc_hangul/no-fold", "no-fold", '{"\\uac00":1,"\\u1100\\u1161":2}', expect='{"\u1100\u1161":2,"가":1}')
add("nfc/duplicate_key_nfc_order/fold", "fold", '{"a\\u0323\\u0302":1,"a\\u0302\\u0323":2}', reject="duplicate_key_nfc")
add("nfc/duplicate_key_nfc_nested/fold", "fold", '[{"x":{"\\u0041\\u030a":1,"\\u00c5":2}}]', reject="duplicate_key_nfc")
# Plain UAX #15 NFC (what Python's unicodedata does): no U+034F is inserted into
# long runs of non-starters. golang.org/x/text inserts one after 30 (Stream-Safe
# Text Format); a Go implementation must not.
add("nfc/long_nonstarter_run_31/fold", "fold", "[" + J("a" + "\u0300" * 31) + "]", expect='["\u00e0' + "\u0300" * 30 + '"]')
add(
    "nfc/long_nonstarter_run_reordered/fold",
    "fold",
    "[" + J("x" + "\u0301" * 31 + "\u0323") + "]",
    expect='["x\u0323' + "\u0301" * 31 + '"]',
)
add("nfc/long_nonstarter_run_after_hangul/fold", "fold", "[" + J("\uac00" + "\u0300" * 30) + "]", expect='["\uac00' + "\u0300" * 30 + '"]')

# ---------------------------------------------------------------------------
# unicode15: code points assigned in 15.0.0 (unknown to Python 3.11's 14.0.0 tables)

NEW_MARKS = [0x10EFD, 0x10EFE, 0x10EFF, 0x11F41, 0x11F42, 0x1E08F, 0x1E4EC, 0x1E4ED, 0x1E4EE, 0x1E4EF]


def _go_samples():
    with open(rc.DELTA_PATH, "rb") as f:
        return [("".join(map(chr, i)), "".join(map(chr, o))) for i, o in json.load(f)["nfc_samples"]]


def _mark_vector(m: int) -> tuple[str, str]:
    """A short x/text sample holding mark m whose 15.0.0 NFC differs from 14.0.0's."""
    for s, want in _go_samples():
        if chr(m) in s and len(s) <= 4 and unicodedata.normalize("NFC", s) != want:
            return s, want
    raise AssertionError(f"no distinguishing sample for U+{m:04X}")


for m in NEW_MARKS:
    s, want = _mark_vector(m)
    add(f"unicode15/mark_{m:04X}/fold", "fold", "[" + J(s) + "]", expect_cps=[ord(c) for c in '["' + want + '"]'])
    add(f"unicode15/mark_{m:04X}/no-fold", "no-fold", "[" + J(s) + "]", expect='["' + s + '"]')
add("unicode15/mark_in_key/fold", "fold", "{" + J("a\U00010efd\u0301") + ":1}", expect='{"\u00e1\U00010efd":1}')
for name, cp in [
    ("shaking_face_1FAE8", 0x1FAE8),
    ("wireless_1F6DC", 0x1F6DC),
    ("cjk_ext_h_31350", 0x31350),
    ("kawi_11F00", 0x11F00),
    ("nag_mundari_1E4D0", 0x1E4D0),
]:
    add(f"unicode15/new_{name}/fold", "fold", "[" + J(chr(cp)) + "]", expect='["' + chr(cp) + '"]')
add("unicode15/new_in_key/fold", "fold", "{" + J("\U0001fae8") + ":1}", expect='{"\U0001fae8":1}')

# accepted: noncharacters and private use are not reserved
for name, cp in [
    ("nonchar_FDD0", 0xFDD0),
    ("nonchar_FDEF", 0xFDEF),
    ("nonchar_FFFE", 0xFFFE),
    ("nonchar_FFFF", 0xFFFF),
    ("nonchar_1FFFE", 0x1FFFE),
    ("nonchar_10FFFF", 0x10FFFF),
    ("private_use_E000", 0xE000),
    ("private_use_F8FF", 0xF8FF),
    ("private_use_F0000", 0xF0000),
    ("private_use_10FFFD", 0x10FFFD),
    ("tag_E0001", 0xE0001),
]:
    add(f"assigned/{name}/fold", "fold", "[" + J(chr(cp)) + "]", expect='["' + chr(cp) + '"]')
add("assigned/nonchar_in_key/fold", "fold", '{"\\ufdd0":1,"\\uffff":2}', expect='{"\ufdd0":1,"\uffff":2}')
add("assigned/private_use_in_key/fold", "fold", '{"\\ue000":1}', expect='{"\ue000":1}')

# rejected in fold: reserved in 15.0.0; accepted in no-fold
for name, cp in [
    ("U+0378", 0x378),
    ("U+1FFFD", 0x1FFFD),
    ("U+2FFFD", 0x2FFFD),
    ("U+E0000", 0xE0000),
    ("U+1FAE9_assigned_in_15.1", 0x1FAE9),
    ("U+2EBF0_assigned_in_15.1", 0x2EBF0),
    ("U+1CC00_assigned_in_16.0", 0x1CC00),
    ("U+10D40_assigned_in_16.0", 0x10D40),
]:
    add(f"reserved/{name}/fold", "fold", "[" + J("a" + chr(cp)) + "]", reject="unassigned_code_point")
    if cp in (0x378, 0x1CC00):
        add(f"reserved/{name}/no-fold", "no-fold", "[" + J("a" + chr(cp)) + "]", expect='["a' + chr(cp) + '"]')
add("reserved/in_key/fold", "fold", '{"\\u0378":1}', reject="unassigned_code_point")
add("reserved/in_key/no-fold", "no-fold", '{"\\u0378":1}', expect='{"\u0378":1}')
add("reserved/raw_utf8/fold", "fold", '["\u0378"]', reject="unassigned_code_point")

# ---------------------------------------------------------------------------
# depth: root is depth 0; fold allows 16, no-fold 64


def arrays(n: int, inner: str) -> str:
    return "[" * n + inner + "]" * n


def objects(n: int, inner: str) -> str:
    return '{"a":' * n + inner + "}" * n


for mode, limit in (("fold", 16), ("no-fold", 64)):
    add(f"depth/scalar_in_{limit}_arrays/{mode}", mode, arrays(limit, "1"), expect=arrays(limit, "1"))
    add(f"depth/scalar_in_{limit + 1}_arrays/{mode}", mode, arrays(limit + 1, "1"), reject="depth")
    add(f"depth/empty_array_at_{limit}/{mode}", mode, arrays(limit + 1, ""), expect=arrays(limit + 1, ""))
    add(f"depth/empty_array_at_{limit + 1}/{mode}", mode, arrays(limit + 2, ""), reject="depth")
    add(f"depth/scalar_in_{limit}_objects/{mode}", mode, objects(limit, "null"), expect=objects(limit, "null"))
    add(f"depth/scalar_in_{limit + 1}_objects/{mode}", mode, objects(limit + 1, "null"), reject="depth")
    add(f"depth/empty_object_at_{limit}/{mode}", mode, objects(limit, "{}"), expect=objects(limit, "{}"))
    add(f"depth/empty_object_at_{limit + 1}/{mode}", mode, objects(limit + 1, "{}"), reject="depth")
add("depth/mixed_16/fold", "fold", '[{"k":' * 8 + "0" + "}]" * 8, expect='[{"k":' * 8 + "0" + "}]" * 8)
add("depth/mixed_17/fold", "fold", '[{"k":' * 8 + "[0]" + "}]" * 8, reject="depth")
add("depth/scalar_in_17_arrays_accepted/no-fold", "no-fold", arrays(17, "1"), expect=arrays(17, "1"))
add("depth/empty_array_at_17_accepted/no-fold", "no-fold", arrays(18, ""), expect=arrays(18, ""))

# ---------------------------------------------------------------------------
# caps: object_entries, array_items, string_length, key_length, key_empty


def obj_of(n: int) -> tuple[str, str]:
    keys = [f"k{i:03d}" for i in range(n)]
    inp = "{" + ",".join(f'"{k}":{i}' for i, k in reversed(list(enumerate(keys)))) + "}"
    out = "{" + ",".join(f'"{k}":{i}' for i, k in enumerate(keys)) + "}"
    return inp, out


inp, out = obj_of(256)
add("caps/object_256_members/fold", "fold", inp, expect=out)
inp, out = obj_of(257)
add("caps/object_257_members/fold", "fold", inp, reject="object_entries")
add("caps/object_257_members/no-fold", "no-fold", inp, expect=out)
add("caps/object_257_members_nested/fold", "fold", '{"x":' + inp + "}", reject="object_entries")

arr = lambda n: "[" + ",".join("0" for _ in range(n)) + "]"  # noqa: E731
add("caps/array_1024_items/fold", "fold", arr(1024), expect=arr(1024))
add("caps/array_1025_items/fold", "fold", arr(1025), reject="array_items")
add("caps/array_1025_items/no-fold", "no-fold", arr(1025), expect=arr(1025))
add("caps/array_1025_items_nested/fold", "fold", '{"a":' + arr(1025) + "}", reject="array_items")

s2048 = "a" * 2048
add("caps/string_2048/fold", "fold", f'["{s2048}"]', expect=f'["{s2048}"]')
add("caps/string_2049/fold", "fold", f'["{s2048}a"]', reject="string_length")
add("caps/string_2049/no-fold", "no-fold", f'["{s2048}a"]', expect=f'["{s2048}a"]')
add("caps/string_2049_nfc_would_shorten/fold", "fold", '["' + "a" * 2047 + 'e\\u0301"]', reject="string_length")
add("caps/string_2048_nfc_expands/fold", "fold", '["' + "a" * 2047 + '\\u0f73"]', expect='["' + "a" * 2047 + '\u0f71\u0f72"]')
add("caps/string_1025_astral/fold", "fold", '["' + "😀" * 1025 + '"]', expect='["' + "😀" * 1025 + '"]')
add("caps/root_string_2049/fold", "fold", f'"{s2048}b"', reject="string_length")

k2048 = "k" * 2048
add("caps/key_2048/fold", "fold", f'{{"{k2048}":1}}', expect=f'{{"{k2048}":1}}')
add("caps/key_2049/fold", "fold", f'{{"{k2048}k":1}}', reject="key_length")
add("caps/key_2049/no-fold", "no-fold", f'{{"{k2048}k":1}}', expect=f'{{"{k2048}k":1}}')
add("caps/key_2049_nfc_shortens_to_2048/fold", "fold", '{"' + "k" * 2047 + 'e\\u0301":1}', expect='{"' + "k" * 2047 + 'é":1}')
add("caps/key_2048_nfc_expands_to_2049/fold", "fold", '{"' + "k" * 2047 + '\\u0f73":1}', reject="key_length")
add("caps/key_empty/no-fold", "no-fold", '{"":1}', expect='{"":1}')
add("caps/key_empty_nested/fold", "fold", '[{"a":{"":null}}]', reject="key_empty")
add("caps/key_empty_string_value_ok/fold", "fold", '{"a":""}', expect='{"a":""}')

# ---------------------------------------------------------------------------
# integer_digits: at most 4,300 digits in an integer literal (both modes)

d4300 = "1234567890" * 430
add("integer_digits/4300/fold", "fold", d4300, expect=d4300)
add("integer_digits/minus_4300/fold", "fold", "[-" + d4300 + "]", expect="[-" + d4300 + "]")
add("integer_digits/4301/fold", "fold", "[" + d4300 + "1]", reject="integer_digits")
add("integer_digits/4301/no-fold", "no-fold", "[" + d4300 + "1]", reject="integer_digits")
add("integer_digits/minus_4301/fold", "fold", "-9" + d4300, reject="integer_digits")
add("integer_digits/minus_4301/no-fold", "no-fold", "-9" + d4300, reject="integer_digits")
add("integer_digits/fraction_is_a_double/fold", "fold", "[" + "1" * 300 + ".5]", expect="[" + str(int(float("1" * 300 + ".5"))) + "]")

# ---------------------------------------------------------------------------
# rejections valid in both modes

SYNTAX = [
    ("empty_input", ""),
    ("whitespace_only", " \n"),
    ("trailing_comma_array", "[1,]"),
    ("trailing_comma_object", '{"a":1,}'),
    ("leading_comma", "[,1]"),
    ("lone_comma_object", "{,}"),
    ("single_quotes_string", "'a'"),
    ("single_quotes_key", "{'a':1}"),
    ("leading_zero", "01"),
    ("leading_zero_negative", "[-01]"),
    ("plus_sign", "+1"),
    ("leading_dot", ".5"),
    ("trailing_dot", "1."),
    ("dot_exponent", "1.e5"),
    ("exponent_without_digits", "1e"),
    ("exponent_sign_without_digits", "1e+"),
    ("minus_alone", "-"),
    ("double_minus", "--1"),
    ("hex_number", "0x10"),
    ("trailing_value", "1 2"),
    ("trailing_garbage", "{}x"),
    ("two_objects", "{}{}"),
    ("extra_close", "[]]"),
    ("unterminated_string", '"abc'),
    ("unterminated_array", "[1"),
    ("unterminated_object", '{"a":1'),
    ("key_without_value", '{"a"}'),
    ("missing_colon", '{"a" 1}'),
    ("missing_comma", "[1 2]"),
    ("bare_word", "abc"),
    ("capitalized_true", "True"),
    ("truncated_null", "nul"),
    ("overlong_null", "nulll"),
    ("lowercase_nan", "nan"),
    ("negative_nan", "-NaN"),
    ("lowercase_infinity", "infinity"),
    ("plus_infinity", "+Infinity"),
    ("non_string_key", "{1:2}"),
    ("comment", "/* c */ 1"),
    ("invalid_escape_x", '"\\x41"'),
    ("invalid_escape_quote", '"\\\'"'),
    ("short_u_escape", '"\\u12"'),
    ("non_hex_u_escape", '"\\u12G4"'),
    ("upper_u_escape", '"\\U0041"'),
    ("nbsp_whitespace", "\u00a01"),
    ("vertical_tab_whitespace", "\x0b1"),
    ("form_feed_whitespace", "\x0c1"),
    ("line_separator_whitespace", "\u20281"),
    ("nul_after_value", "1\x00"),
    ("unquoted_key", "{a:1}"),
]
for name, inp in SYNTAX:
    add(f"syntax/{name}/fold", "fold", inp, reject="syntax")
for name in ("empty_input", "trailing_comma_array", "leading_zero", "plus_sign", "trailing_value", "unterminated_string", "bare_word", "negative_nan", "non_string_key", "invalid_escape_x", "nbsp_whitespace"):
    add(f"syntax/{name}/no-fold", "no-fold", dict(SYNTAX)[name], reject="syntax")
both("syntax/byte_order_mark", hexin=b"\xef\xbb\xbf{}", reject="syntax")
add("syntax/byte_order_mark_before_string/fold", "fold", hexin=b'\xef\xbb\xbf"a"', reject="syntax")

INVALID_UTF8 = [
    ("overlong_nul_C0_80", b'"\xc0\x80"'),
    ("overlong_C1_BF", b'"\xc1\xbf"'),
    ("overlong_3_byte", b'"\xe0\x80\xaf"'),
    ("overlong_4_byte", b'"\xf0\x80\x80\x80"'),
    ("encoded_surrogate_ED_A0_80", b'"\xed\xa0\x80"'),
    ("encoded_surrogate_ED_BF_BF", b'"\xed\xbf\xbf"'),
    ("encoded_surrogate_pair", b'"\xed\xa0\xbd\xed\xb8\x80"'),
    ("truncated_2_of_3", b'"\xe2\x82"'),
    ("truncated_3_of_4", b'"\xf0\x9f\x98"'),
    ("truncated_at_end_of_string", b'["\xc3"]'),
    ("lone_continuation", b'"\x80"'),
    ("byte_FF", b'"\xff"'),
    ("byte_FE", b'"\xfe"'),
    ("above_10FFFF", b'"\xf4\x90\x80\x80"'),
    ("lead_F5", b'"\xf5\x80\x80\x80"'),
    ("five_byte_form", b'"\xf8\x88\x80\x80\x80"'),
    ("latin1_e_acute", b'"caf\xe9"'),
    ("in_key", b'{"\xff":1}'),
]
for name, data in INVALID_UTF8:
    add(f"invalid_utf8/{name}/fold", "fold", hexin=data, reject="invalid_utf8")
for name in ("overlong_nul_C0_80", "encoded_surrogate_ED_A0_80", "truncated_2_of_3", "byte_FF", "above_10FFFF", "in_key"):
    add(f"invalid_utf8/{name}/no-fold", "no-fold", hexin=dict(INVALID_UTF8)[name], reject="invalid_utf8")

LONE = [
    ("high", '"\\ud800"'),
    ("low", '"\\udc00"'),
    ("high_max", '"\\udbff"'),
    ("low_max", '"\\udfff"'),
    ("high_then_char", '"\\ud800x"'),
    ("high_then_escape", '"\\ud800\\u0041"'),
    ("high_then_newline_escape", '"\\ud800\\n"'),
    ("high_high", '"\\ud800\\ud800"'),
    ("reversed_pair", '"\\ude00\\ud83d"'),
    ("high_then_pair", '"\\ud800\\ud83d\\ude00"'),
    ("high_at_end", '"a\\ud83d"'),
    ("in_key", '{"\\ud800":1}'),
]
for name, inp in LONE:
    add(f"lone_surrogate/{name}/fold", "fold", inp, reject="lone_surrogate")
for name in ("high", "low", "reversed_pair", "in_key"):
    add(f"lone_surrogate/{name}/no-fold", "no-fold", dict(LONE)[name], reject="lone_surrogate")

CONTROL = [
    ("nul", '"a\x00"'),
    ("soh", '"\x01"'),
    ("tab", '"a\tb"'),
    ("newline", '"a\nb"'),
    ("carriage_return", '"\r"'),
    ("unit_separator", '"\x1f"'),
    ("in_key", '{"a\x0b":1}'),
]
for name, inp in CONTROL:
    add(f"control_character/{name}/fold", "fold", inp, reject="control_character")
for name in ("nul", "newline", "in_key"):
    add(f"control_character/{name}/no-fold", "no-fold", dict(CONTROL)[name], reject="control_character")

DUP = [
    ("same", '{"a":1,"a":2}'),
    ("same_value", '{"a":1,"a":1}'),
    ("escaped_equal", '{"a":1,"\\u0061":2}'),
    ("escaped_non_ascii", '{"é":1,"\\u00e9":2}'),
    ("surrogate_pair_vs_raw", '{"😀":1,"\\ud83d\\ude00":2}'),
    ("with_nul", '{"a\\u0000":1,"a\\u0000":2}'),
    ("nested", '{"x":[{"b":1,"c":0,"b":2}]}'),
]
for name, inp in DUP:
    both(f"duplicate_key/{name}", inp, reject="duplicate_key")
add("duplicate_key/empty_key_twice/no-fold", "no-fold", '{"":1,"":2}', reject="duplicate_key")
add("duplicate_key/nfc_distinct_keys_accepted/no-fold", "no-fold", '{"é":1,"e\\u0301":2}', expect='{"e\u0301":2,"é":1}')

NONFINITE = [
    ("nan", "NaN"),
    ("infinity", "Infinity"),
    ("minus_infinity", "-Infinity"),
    ("nan_in_array", "[1,NaN]"),
    ("infinity_in_object", '{"a":Infinity}'),
    ("overflow_1e400", "[1e400]"),
    ("overflow_minus_1e400", "[-1e400]"),
    ("overflow_1e309", "1e309"),
    ("overflow_just_above_max", "1.7976931348623159e308"),
    ("overflow_huge_exponent", "1e99999999999999999999"),
    ("overflow_long_fraction_literal", "1" + "0" * 309 + ".0"),
]
for name, inp in NONFINITE:
    both(f"non_finite/{name}", inp, reject="non_finite")


# ---------------------------------------------------------------------------
# build


def _compute(v: dict) -> dict:
    data = v["input"].encode("utf-8") if v["input"] is not None else v["input_hex"]
    fold = v["mode"] == "fold"
    out = {"name": v["name"], "mode": v["mode"]}
    if v["input"] is not None:
        out["input"] = v["input"]
    else:
        out["input_hex"] = data.hex()
    try:
        canon = rc.canonicalize(data, fold)
    except rc.Rejected as e:
        if v["reject"] != e.rule:
            raise AssertionError(f"{v['name']}: rejected {e.rule} ({e.detail}), want {v['reject'] or 'acceptance'}")
        out["rejection"] = e.rule
        return out
    if v["reject"]:
        raise AssertionError(f"{v['name']}: accepted, want {v['reject']}")
    if v["expect"] is not None and canon != v["expect"].encode("utf-8"):
        raise AssertionError(f"{v['name']}: got {canon!r}, hand-written {v['expect'].encode()!r}")
    if v["expect_cps"] is not None and canon.decode("utf-8") != "".join(map(chr, v["expect_cps"])):
        raise AssertionError(f"{v['name']}: got {canon!r}, want code points {v['expect_cps']}")
    out["canonical_hex"] = canon.hex()
    if v["fingerprints"]:
        out["fingerprints"] = {d: rc.fingerprint(d, data, fold) for d in v["fingerprints"]}
    return out


def _check_contract(vectors: list[dict]) -> None:
    by = {v["name"]: v for v in vectors}
    assert bytes.fromhex(by["contract/v1_plan/fold"]["canonical_hex"]) == CONTRACT_V1_CANON.encode() and len(CONTRACT_V1_CANON) == 136
    assert by["contract/v1_plan/fold"]["fingerprints"][PLAN] == CONTRACT_RAYFLOW["v1"]
    assert by["contract/v4_plan_format/fold"]["fingerprints"][PLAN] == CONTRACT_RAYFLOW["v4"]
    assert by["contract/v2_key_order/fold"]["canonical_hex"] == CONTRACT_V2_HEX
    assert by["contract/v3_nfc_escapes/fold"]["canonical_hex"] == CONTRACT_V3_HEX
    # the django-ray fingerprints of section 1.6, from the same canonical bytes
    for key, name, inp in [
        ("v1", "contract/v1_plan/fold", None),
        ("v2", "contract/v2_key_order/fold", None),
        ("v3", "contract/v3_nfc_escapes/fold", None),
        ("v4", None, CONTRACT_V4_DJANGO_RAY_INPUT),
        ("v6", "contract/v6_definition/fold", None),
        ("v7", "contract/v7_trust_empty/fold", None),
    ]:
        domain, want = CONTRACT_DJANGO_RAY[key]
        canon = bytes.fromhex(by[name]["canonical_hex"]) if name else rc.canonicalize(inp.encode())
        got = "sha256:" + hashlib.sha256(domain.encode() + b"\x00" + canon).hexdigest()
        assert got == want, (key, got, want)


def build() -> dict:
    names = [v["name"] for v in VECTORS]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, dup
    vectors = [_compute(v) for v in VECTORS]
    _check_contract(vectors)
    return {"format": "rayflow.conformance.canonical", "format_version": 1, "vectors": vectors}


def render(doc: dict) -> bytes:
    lines = ['{"format":"rayflow.conformance.canonical","format_version":1,"vectors":[']
    for i, v in enumerate(doc["vectors"]):
        sep = "," if i < len(doc["vectors"]) - 1 else ""
        lines.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")) + sep)
    lines.append("]}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def main(argv: list[str]) -> int:
    data = render(build())
    if argv[1:] == ["--check"]:
        if OUT.read_bytes() != data:
            print(f"{OUT} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_bytes(data)
    count = len(json.loads(data)["vectors"])
    print(f"wrote {OUT} ({len(data)} bytes, {count} vectors)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
