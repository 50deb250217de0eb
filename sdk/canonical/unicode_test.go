package canonical

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestUnicodeVersionPinned fails when the toolchain's normalization tables
// move away from the pinned version (Go 1.27 switches x/text to 17.0.0).
// Accepted strings stay stable across versions because reserved code points
// are rejected, but the pin must be revisited deliberately, not silently.
func TestUnicodeVersionPinned(t *testing.T) {
	t.Parallel()
	if UnicodeVersion != "15.0.0" {
		t.Fatalf("reserved table is Unicode %s, canonical JSON v1 pins 15.0.0", UnicodeVersion)
	}
	if norm.Version != UnicodeVersion {
		t.Fatalf("x/text normalizes with Unicode %s, the reserved table is %s", norm.Version, UnicodeVersion)
	}
}

func TestReserved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    rune
		want bool
	}{
		{0x0041, false}, {0x0377, false}, {0x0378, true}, {0x0379, true}, {0x037A, false},
		{0xE000, false}, {0xF8FF, false}, // private use
		{0xFDD0, false}, {0xFDEF, false}, {0xFFFE, false}, {0xFFFF, false}, {0x10FFFF, false}, {0x1FFFE, false}, // noncharacters
		{0x11F00, false}, {0x1E08F, false}, {0x31350, false}, // new in 15.0.0
		{0x2FFFD, true}, {0xE0080, true}, {0x1E030, false},
		{0x1FAF9, true}, // assigned only in 15.1
		{0x0CF3, false}, // new in 15.0.0 (KANNADA SIGN COMBINING ANUSVARA ABOVE RIGHT)
	} {
		if got := isReserved(tc.r); got != tc.want {
			t.Errorf("isReserved(U+%04X) = %v, want %v", tc.r, got, tc.want)
		}
	}
	// The table is sorted and disjoint, and U+0378 is the first entry.
	if reserved[0].lo != firstReserved {
		t.Fatalf("first reserved is U+%04X, firstReserved says U+%04X", reserved[0].lo, firstReserved)
	}
	for i := 1; i < len(reserved); i++ {
		if reserved[i].lo <= reserved[i-1].hi+1 || reserved[i].lo > reserved[i].hi {
			t.Fatalf("span %d out of order or adjacent", i)
		}
	}
}

func TestNFCWithoutStreamSafeJoiner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"31 acute", "e" + strings.Repeat("\u0301", 31), "é" + strings.Repeat("\u0301", 30)},
		{"40 mixed marks reorder", "a" + strings.Repeat("\u0301\u0316", 20), "\u00e1" + strings.Repeat("\u0316", 20) + strings.Repeat("\u0301", 19)},
		{"U+0344 expands", strings.Repeat("\u0344", 40), strings.Repeat("\u0308\u0301", 40)},
		{"cgj already present", "a\u034F" + strings.Repeat("\u0301", 40), "a\u034F" + strings.Repeat("\u0301", 40)},
		{"hangul with marks", "\u1100\u1161\u11A8" + strings.Repeat("\u0301", 31), "각" + strings.Repeat("\u0301", 31)},
	} {
		if got := nfc(tc.in); got != tc.want {
			t.Errorf("%s: nfc = %+q, want %+q", tc.name, got, tc.want)
		}
		// Below the stream-safe threshold both algorithms agree.
		short := string([]rune(tc.in)[:min(utf8.RuneCountInString(tc.in), 10)])
		if a, b := nfcUnbounded(short), norm.NFC.String(short); a != b {
			t.Errorf("%s: nfcUnbounded(%+q) = %+q, x/text says %+q", tc.name, short, a, b)
		}
	}
}
