package canonical

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func nest(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func members(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i/26))
		b.WriteByte(byte('a' + i%26))
		b.WriteString(`":0`)
	}
	b.WriteByte('}')
	return b.String()
}

func items(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

func quote(s string) string { return `"` + s + `"` }

// maxDoubleInt is the exact value of the largest finite double, 309 digits.
const maxDoubleInt = "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368"

type textCase struct {
	name  string
	codec Codec
	in    string
	want  string // canonical output, when accepted
	rule  Rule   // rejection, when rejected
}

func textCases() []textCase {
	a2048 := strings.Repeat("a", 2048)
	// U+0344 expands to two code points under NFC; "e\u0301" composes to one.
	expand2048 := strings.Repeat("\u0344", 2048)
	compose := strings.Repeat("e\u0301", 1024) + "a" // 2049 code points, 1025 after NFC
	keyCompose := strings.Repeat("a", 2047) + "e\u0301"
	return []textCase{
		// The fixed vectors (docs/contracts.md#number-lines-and-vectors).
		{name: "contract-1", codec: V1,
			in:   `{"b":1,"a":[1.0,-0.0,0.5,1e-05,1e20,1e23,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424]}`,
			want: `{"a":[1,0,0.5,1e-05,100000000000000000000,99999999999999991611392,123456789.125,0.0001,-1.5e-07,true,null,1180591620717411303424],"b":1}`},
		{name: "contract-3", codec: V1, in: `{"e\u0301":"A\u030a","x":"/\"\\\b\f\n\r\t\u001f` + "\x7f\u2028é😀" + `"}`,
			want: `{"x":"/\"\\\b\f\n\r\t\u001f` + "\x7f\u2028é😀" + `","é":"Å"}`},
		{name: "contract-9", codec: NoFold, in: `{"progress_percent":100.0,"b":50.0}`, want: `{"b":50.0,"progress_percent":100.0}`},
		// Numbers.
		{name: "int-minus-zero", codec: V1, in: `-0`, want: `0`},
		{name: "float-minus-zero-nofold", codec: NoFold, in: `-0.0`, want: `-0.0`},
		{name: "exponent-integral", codec: V1, in: `1E5`, want: `100000`},
		{name: "exponent-integral-nofold", codec: NoFold, in: `1E5`, want: `100000.0`},
		{name: "1e16-nofold", codec: NoFold, in: `1e16`, want: `1e+16`},
		{name: "1e16-fold", codec: V1, in: `1e16`, want: `10000000000000000`},
		{name: "fixed-16-digits", codec: V1, in: `1000000000000000.5`, want: `1000000000000000.5`},
		{name: "below-1e-4", codec: V1, in: `0.00009`, want: `9e-05`},
		{name: "subnormal-min", codec: V1, in: `5e-324`, want: `5e-324`},
		{name: "underflow-to-zero", codec: NoFold, in: `-1e-400`, want: `-0.0`},
		{name: "max-double-folded", codec: V1, in: `1.7976931348623157e308`, want: maxDoubleInt},
		{name: "max-double-nofold", codec: NoFold, in: `1.7976931348623157e308`, want: `1.7976931348623157e+308`},
		{name: "big-exponent-form", codec: NoFold, in: `123456789012345678901.5`, want: `1.2345678901234568e+20`},
		{name: "huge-negative-int", codec: V1, in: "-" + strings.Repeat("9", 40), want: "-" + strings.Repeat("9", 40)},
		{name: "int-digits-at-cap", codec: V1, in: strings.Repeat("7", 4300), want: strings.Repeat("7", 4300)},
		{name: "int-digits-over-cap", codec: V1, in: strings.Repeat("7", 4301), rule: RuleIntegerDigits},
		{name: "int-digits-over-cap-nofold", codec: NoFold, in: "-" + strings.Repeat("7", 4301), rule: RuleIntegerDigits},
		{name: "overflow", codec: V1, in: `[1e400]`, rule: RuleNonFinite},
		{name: "nan", codec: NoFold, in: `NaN`, rule: RuleNonFinite},
		{name: "infinity", codec: V1, in: `[Infinity]`, rule: RuleNonFinite},
		{name: "minus-infinity", codec: V1, in: `{"a":-Infinity}`, rule: RuleNonFinite},
		// Strings and escapes.
		{name: "escapes-out", codec: V1, in: `"\u0000\u001f\u0041\/"`, want: `"\u0000\u001fA/"`},
		{name: "surrogate-pair", codec: V1, in: `"\ud83d\ude00"`, want: `"😀"`},
		{name: "lone-high", codec: V1, in: `"\ud83d"`, rule: RuleLoneSurrogate},
		{name: "lone-high-then-char", codec: NoFold, in: `"\ud83dx"`, rule: RuleLoneSurrogate},
		{name: "lone-low", codec: V1, in: `"\ude00"`, rule: RuleLoneSurrogate},
		{name: "high-high", codec: V1, in: `"\ud83d\ud83d"`, rule: RuleLoneSurrogate},
		{name: "raw-control", codec: NoFold, in: "\"a\tb\"", rule: RuleControlCharacter},
		{name: "raw-del-ok", codec: V1, in: "\"\x7f\"", want: "\"\x7f\""},
		{name: "bad-escape", codec: V1, in: `"\x"`, rule: RuleSyntax},
		{name: "short-u-escape", codec: V1, in: `"\u12"`, rule: RuleSyntax},
		{name: "nfc-value", codec: V1, in: `"e\u0301"`, want: `"é"`},
		{name: "no-nfc-nofold", codec: NoFold, in: `"e\u0301"`, want: "\"e\u0301\""},
		{name: "hangul-composes", codec: V1, in: `"\u1100\u1161"`, want: `"가"`},
		{name: "noncharacter-ok", codec: V1, in: `"\ufdd0\uffff\udbff\udfff"`, want: "\"\ufdd0\uffff\U0010FFFF\""},
		{name: "private-use-ok", codec: V1, in: `"\ue000"`, want: "\"\ue000\""},
		{name: "reserved-rejected", codec: V1, in: `"\u0378"`, rule: RuleUnassignedCodePoint},
		{name: "reserved-key-rejected", codec: V1, in: `{"\u0378":1}`, rule: RuleUnassignedCodePoint},
		{name: "reserved-nofold-ok", codec: NoFold, in: `"\u0378"`, want: "\"\u0378\""},
		{name: "unicode15-kawi-ok", codec: V1, in: `"\ud807\udf00"`, want: "\"\U00011F00\""},
		// Canonical reordering by a ccc that is new in Unicode 15.0.0
		// (U+1E08F has ccc 230, U+0316 has ccc 220).
		{name: "unicode15-reorder", codec: V1, in: `"a\ud838\udc8f\u0316"`, want: "\"a\u0316\U0001E08F\""},
		// Keys.
		{name: "key-order-code-point", codec: V1, in: `{"😀":1,"\uffff":2}`, want: "{\"\uffff\":2,\"😀\":1}"},
		{name: "key-nfc-reorders", codec: V1, in: `{"e\u0301":1,"f":2}`, want: `{"f":2,"é":1}`},
		{name: "dup-key", codec: NoFold, in: `{"a":1,"b":2,"a":3}`, rule: RuleDuplicateKey},
		{name: "dup-key-escaped", codec: V1, in: `{"a":1,"\u0061":3}`, rule: RuleDuplicateKey},
		{name: "dup-key-nfc", codec: V1, in: `{"e\u0301":1,"é":2}`, rule: RuleDuplicateKeyNFC},
		{name: "dup-key-nfc-nofold-ok", codec: NoFold, in: `{"e\u0301":1,"é":2}`, want: "{\"e\u0301\":1,\"é\":2}"},
		{name: "empty-key", codec: V1, in: `{"":1}`, rule: RuleKeyEmpty},
		{name: "empty-key-nofold-ok", codec: NoFold, in: `{"":1}`, want: `{"":1}`},
		// Caps, exactly at the cap and one over.
		{name: "depth-16-scalar", codec: V1, in: nest("[", "]", 16, "1"), want: nest("[", "]", 16, "1")},
		{name: "depth-17-scalar", codec: V1, in: nest("[", "]", 17, "1"), rule: RuleDepth},
		{name: "depth-16-empty-container", codec: V1, in: nest("[", "]", 17, ""), want: nest("[", "]", 17, "")},
		{name: "depth-17-empty-container", codec: V1, in: nest("[", "]", 18, ""), rule: RuleDepth},
		{name: "depth-17-objects", codec: V1, in: nest(`{"a":`, "}", 17, "1"), rule: RuleDepth},
		{name: "depth-64-nofold", codec: NoFold, in: nest("[", "]", 64, "1"), want: nest("[", "]", 64, "1")},
		{name: "depth-65-nofold", codec: NoFold, in: nest("[", "]", 65, "1"), rule: RuleDepth},
		{name: "entries-256", codec: V1, in: members(256)},
		{name: "entries-257", codec: V1, in: members(257), rule: RuleObjectEntries},
		{name: "entries-257-nofold-ok", codec: NoFold, in: members(257)},
		{name: "entries-257-uncapped-ok", codec: V1Uncapped, in: members(257)},
		{name: "items-1024", codec: V1, in: items(1024), want: items(1024)},
		{name: "items-1025", codec: V1, in: items(1025), rule: RuleArrayItems},
		{name: "items-1025-nofold-ok", codec: NoFold, in: items(1025), want: items(1025)},
		{name: "string-2048", codec: V1, in: quote(a2048), want: quote(a2048)},
		{name: "string-2049", codec: V1, in: quote(a2048 + "b"), rule: RuleStringLength},
		{name: "string-2049-uncapped-ok", codec: V1Uncapped, in: quote(a2048 + "b"), want: quote(a2048 + "b")},
		{name: "string-2048-nfc-expands", codec: V1, in: quote(expand2048), want: quote(strings.Repeat("\u0308\u0301", 2048))},
		{name: "string-2049-nfc-shortens", codec: V1, in: quote(compose), rule: RuleStringLength},
		{name: "key-2048", codec: V1, in: `{"` + a2048 + `":1}`, want: `{"` + a2048 + `":1}`},
		{name: "key-2049", codec: V1, in: `{"` + a2048 + `b":1}`, rule: RuleKeyLength},
		{name: "key-2049-nfc-shortens-ok", codec: V1, in: `{"` + keyCompose + `":1}`, want: `{"` + strings.Repeat("a", 2047) + `é":1}`},
		{name: "key-nfc-expands-over", codec: V1, in: `{"` + strings.Repeat("\u0344", 1025) + `":1}`, rule: RuleKeyLength},
		// Syntax.
		{name: "empty", codec: V1, in: ``, rule: RuleSyntax},
		{name: "whitespace-only", codec: V1, in: " \n", rule: RuleSyntax},
		{name: "whitespace-around", codec: V1, in: " \t\r\n[ 1 , 2 ]\n", want: `[1,2]`},
		{name: "trailing-comma", codec: V1, in: `[1,]`, rule: RuleSyntax},
		{name: "single-quotes", codec: V1, in: `{'a':1}`, rule: RuleSyntax},
		{name: "leading-zero", codec: V1, in: `01`, rule: RuleSyntax},
		{name: "plus", codec: V1, in: `+1`, rule: RuleSyntax},
		{name: "dot-first", codec: V1, in: `.5`, rule: RuleSyntax},
		{name: "dot-last", codec: V1, in: `1.`, rule: RuleSyntax},
		{name: "exp-no-digits", codec: V1, in: `1e`, rule: RuleSyntax},
		{name: "trailing-data", codec: V1, in: `{} {}`, rule: RuleSyntax},
		{name: "unterminated", codec: V1, in: `"abc`, rule: RuleSyntax},
		{name: "bare-word", codec: V1, in: `nul`, rule: RuleSyntax},
		{name: "non-string-key", codec: V1, in: `{1:2}`, rule: RuleSyntax},
		{name: "bom", codec: V1, in: "\ufeff{}", rule: RuleSyntax},
		{name: "formfeed-space", codec: V1, in: "\f1", rule: RuleSyntax},
		{name: "invalid-utf8", codec: V1, in: "\"\xff\"", rule: RuleInvalidUTF8},
		{name: "overlong", codec: NoFold, in: "\"\xc0\x80\"", rule: RuleInvalidUTF8},
		{name: "encoded-surrogate", codec: V1, in: "\"\xed\xa0\x80\"", rule: RuleInvalidUTF8},
		{name: "truncated-utf8", codec: V1, in: "\"\xe2\x82\"", rule: RuleInvalidUTF8},
		{name: "nested-empties", codec: V1, in: `{"a":{},"b":[],"c":[{}]}`, want: `{"a":{},"b":[],"c":[{}]}`},
	}
}

func TestTransform(t *testing.T) {
	t.Parallel()
	for _, tc := range textCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.codec.Transform([]byte(tc.in))
			if tc.rule != "" {
				var ce *Error
				if !errors.As(err, &ce) || ce.Rule != tc.rule {
					t.Fatalf("want rejection %s, got %q, %v", tc.rule, got, err)
				}
				if !errors.Is(err, ErrRejected) || !errors.Is(err, tc.rule) {
					t.Fatalf("errors.Is does not match %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected rejection: %v", err)
			}
			if tc.want != "" && string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", trim(got), trim([]byte(tc.want)))
			}
			// Idempotence: canon(canon(x)) == canon(x).
			again, err := tc.codec.Transform(got)
			if errors.Is(err, RuleStringLength) && tc.codec == V1 {
				// The one contract exception: NFC may expand a string that
				// was within the cap before normalization past it.
				again, err = got, nil
			}
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %v\n%s\n%s", err, trim(got), trim(again))
			}
			// Decode then Marshal reaches the same bytes.
			v, err := tc.codec.Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			m, err := tc.codec.Marshal(v)
			if err != nil || string(m) != string(got) {
				t.Fatalf("Marshal(Decode(x)) = %s, %v; want %s", trim(m), err, trim(got))
			}
		})
	}
}

func trim(b []byte) string {
	if len(b) > 200 {
		return string(b[:100]) + "…" + string(b[len(b)-100:])
	}
	return string(b)
}

func TestContractHexVectors(t *testing.T) {
	t.Parallel()
	got, err := Transform([]byte(`{"😀":1,"\uFFFF":2,"a":3,"é":4,"Z":5,"aa":6,"a\u0000":7}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = "7b225a223a352c2261223a332c22615c7530303030223a372c226161223a362c22c3a9223a342c22efbfbf223a322c22f09f9880223a317d"
	if hex.EncodeToString(got) != want {
		t.Fatalf("got %x", got)
	}
	if s := DomainPlan.Sum(got).String(); s != "sha256:67d7bd12b88266ca10304bf96901328cee853bd871f111a5429f7d619ee55a34" {
		// The contract's vector 2 fingerprint uses the django-ray domain.
		t.Logf("rayflow-domain fingerprint of vector 2: %s", s)
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Transform([]byte(`{"a":[1,{"b":NaN}]}`))
	const want = "canonical: non_finite at /a/1/b (byte 13): NaN and Infinity are not allowed"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	_, err = Transform([]byte(`{"a/b~":NaN}`))
	if ce := (*Error)(nil); !errors.As(err, &ce) || ce.Path != "/a~1b~0" {
		t.Fatalf("JSON pointer escaping: %v", err)
	}
}
