package canonical

// Caps of canonical JSON v1 (docs/contracts.md#canonical-json-v1).
const (
	MaxDepth            = 16   // a value at depth > MaxDepth is rejected; the root is at depth 0
	MaxObjectEntries    = 256  // members per object
	MaxArrayItems       = 1024 // items per array
	MaxStringCodePoints = 2048 // string values before NFC, keys after NFC
)

// MaxIntegerDigits is the longest integer literal accepted from JSON text:
// Python's default int/str conversion limit, so the seed system could have
// produced and re-read every integer rayflow accepts.
const MaxIntegerDigits = 4300

// NoFoldMaxDepth bounds nesting in the NoFold codec. The seed codec had no
// explicit bound (only Python's recursion limit); every record schema is far
// shallower, so this only protects the decoder.
const NoFoldMaxDepth = 64

// Codec is one canonical encoding. The zero value is not usable; use V1,
// V1Uncapped or NoFold.
type Codec struct {
	name      string
	normalize bool // NFC, reserved-code-point check, key rules
	capped    bool // entry, item and string-length caps
	fold      bool // integral doubles become exact integers
	maxDepth  int
	ascii     bool // escape non-ASCII as \uXXXX (size measurement only)
	spaced    bool // ", " and ": " separators (size measurement only)
}

var (
	// V1 is canonical JSON v1: normalization, caps and float folding.
	V1 = Codec{name: "v1", normalize: true, capped: true, fold: true, maxDepth: MaxDepth}
	// V1Uncapped is V1 without count and string-length caps (overflow source digests).
	V1Uncapped = Codec{name: "v1-uncapped", normalize: true, fold: true, maxDepth: MaxDepth}
	// NoFold is the summary/progress codec: sorted compact raw UTF-8, no
	// normalization, no caps and no folding.
	NoFold = Codec{name: "no-fold", maxDepth: NoFoldMaxDepth}

	asciiCompact = Codec{name: "ascii-compact", maxDepth: NoFoldMaxDepth, ascii: true}
	asciiSpaced  = Codec{name: "ascii-spaced", maxDepth: NoFoldMaxDepth, ascii: true, spaced: true}
)

// String returns the codec's name ("v1", "v1-uncapped", "no-fold").
func (c Codec) String() string { return c.name }
