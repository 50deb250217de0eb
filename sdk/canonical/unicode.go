package canonical

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

//go:generate go run ./internal/genreserved -o reserved15.go

type runeSpan struct{ lo, hi rune }

// firstReserved is the lowest reserved code point (U+0378); everything below
// it is assigned, which keeps the common scripts off the binary search.
const firstReserved = 0x0378

// isReserved reports whether r is reserved (unassigned, not a noncharacter)
// in UnicodeVersion. Surrogates never reach here: they are not valid UTF-8.
func isReserved(r rune) bool {
	if r < firstReserved {
		return false
	}
	lo, hi := 0, len(reserved)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch s := reserved[m]; {
		case r < s.lo:
			hi = m
		case r > s.hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// firstReservedIn returns the first reserved code point in s, or -1.
// s must be valid UTF-8.
func firstReservedIn(s string) rune {
	for _, r := range s {
		if isReserved(r) {
			return r
		}
	}
	return -1
}

// cgj is U+034F COMBINING GRAPHEME JOINER, which x/text inserts into runs
// of more than 30 non-starters (UAX #15 Stream-Safe Text Format).
const cgj = "\u034F"

// nfc returns the NFC form of s (valid UTF-8), exactly as Unicode's
// algorithm (and Python's unicodedata) defines it.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	out := norm.NFC.String(s)
	if strings.Count(out, cgj) != strings.Count(s, cgj) {
		// x/text made the text stream-safe; the contract's NFC does not.
		return nfcUnbounded(s)
	}
	return out
}

// nfcUnbounded is the textbook NFC (full canonical decomposition,
// canonical ordering, canonical composition) with no limit on runs of
// non-starters. It is only used for such runs, so clarity beats speed.
func nfcUnbounded(s string) string {
	var rs []rune
	for _, r := range s {
		rs = append(rs, []rune(norm.NFD.String(string(r)))...)
	}
	ccc := func(r rune) uint8 { return norm.NFD.PropertiesString(string(r)).CCC() }
	// Canonical ordering: stable sort of each run of non-starters by class.
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		i = j
	}
	// Canonical composition.
	out := rs[:0:0]
	starter := -1
	var last int // class of the last rune kept; -1 blocks everything after a non-starter first rune
	for i, r := range rs {
		c := int(ccc(r))
		if starter >= 0 && (last < c || last == 0 && len(out)-1 == starter) {
			if p, ok := composePair(out[starter], r); ok {
				out[starter] = p
				continue
			}
		}
		if c == 0 {
			starter = len(out)
		} else if i == 0 {
			c = 256
		}
		last = c
		out = append(out, r)
	}
	return string(out)
}

// composePair returns the primary composite of starter a and b, if any.
func composePair(a, b rune) (rune, bool) {
	r := []rune(norm.NFC.String(string([]rune{a, b})))
	if len(r) == 1 {
		return r[0], true
	}
	return 0, false
}

// runeCount counts code points; ASCII strings are the common case.
func runeCount(s string, ascii bool) int {
	if ascii {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}
