package canonical

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// value applies the string-value rules of the codec to s: valid UTF-8
// (checked here for Go values; decoded text is already valid), then, when
// normalizing, the length cap before NFC, the reserved-code-point check and
// NFC. ascii may be false when unknown.
func (c *Codec) value(s string, ascii bool) (string, error) {
	if !ascii {
		ascii = isASCII(s)
	}
	if !ascii && !utf8.ValidString(s) {
		return "", &Error{Rule: RuleInvalidUTF8, Offset: -1, Detail: "string is not well-formed UTF-8"}
	}
	if !c.normalize {
		return s, nil
	}
	if c.capped {
		if n := runeCount(s, ascii); n > MaxStringCodePoints {
			return "", &Error{Rule: RuleStringLength, Offset: -1, Detail: "string has " + strconv.Itoa(n) + " code points, more than " + strconv.Itoa(MaxStringCodePoints)}
		}
	}
	if ascii {
		return s, nil
	}
	if r := firstReservedIn(s); r >= 0 {
		return "", reservedError(r)
	}
	return nfc(s), nil
}

// key applies the key rules: valid UTF-8, reserved code points, NFC, then
// non-empty and at most MaxStringCodePoints after NFC.
func (c *Codec) key(s string) (string, error) {
	ascii := isASCII(s)
	if !ascii && !utf8.ValidString(s) {
		return "", &Error{Rule: RuleInvalidUTF8, Offset: -1, Detail: "key is not well-formed UTF-8"}
	}
	if !c.normalize {
		return s, nil
	}
	if !ascii {
		if r := firstReservedIn(s); r >= 0 {
			return "", reservedError(r)
		}
		s = nfc(s)
	}
	if s == "" {
		return "", &Error{Rule: RuleKeyEmpty, Offset: -1, Detail: "keys must be non-empty"}
	}
	if c.capped {
		if n := runeCount(s, ascii); n > MaxStringCodePoints {
			return "", &Error{Rule: RuleKeyLength, Offset: -1, Detail: "key has " + strconv.Itoa(n) + " code points after NFC, more than " + strconv.Itoa(MaxStringCodePoints)}
		}
	}
	return s, nil
}

func reservedError(r rune) *Error {
	return &Error{Rule: RuleUnassignedCodePoint, Offset: -1, Detail: "U+" + codePoint(r) + " is unassigned in Unicode " + UnicodeVersion}
}

// isASCII reports whether s has only 7-bit bytes, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if v&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// codePoint renders r as Unicode's U+ notation digits (at least four, upper case).
func codePoint(r rune) string {
	if r <= 0xFFFF {
		return hex4(r)
	}
	return strings.ToUpper(strconv.FormatInt(int64(r), 16))
}
