// Package canonical implements rayflow's canonical JSON v1 and the
// domain-separated SHA-256 digests built on it.
//
// Canonical JSON v1 is byte-identical with the seed system's plan encoding
// (Python's json.dumps with sorted keys, compact separators, raw UTF-8 and no
// NaN, after a normalization pass): keys and string values are NFC-normalized
// with Unicode 15.0.0, keys are ordered by code point, integral doubles are
// folded to their exact integer value, other doubles are written as Python's
// repr, and hard caps bound depth (16), object members (256), array items
// (1,024) and string length (2,048 code points). Code points reserved in
// Unicode 15.0.0 are rejected so that a toolchain with newer tables can never
// change an existing fingerprint.
//
// Three codecs share one encoder:
//
//   - V1: canonical JSON v1 as above (plans, definition revisions, RuntimeEnv
//     identity, every "sha256:" fingerprint).
//   - V1Uncapped: V1 without the count and string-length caps, for the digest
//     of an overflowed manifest.
//   - NoFold: the summary/progress codec: the same serialization with no
//     normalization at all (no NFC, no caps, no folding; 100.0 stays 100.0).
//
// Values come from JSON text (Transform, Decode) or from Go values (Marshal):
// generated record types, maps, slices and scalars are encoded directly,
// without a detour through encoding/json text. Every rejection is an *Error
// naming one Rule; errors.Is(err, ErrRejected) and errors.Is(err, RuleDepth)
// both work.
//
// Transform parses and writes in one pass: the caps are enforced while
// parsing and the canonical text is written as the input is read (only an
// object's members are reordered when it closes), so memory is about the
// size of the output, and an input far over a cap is rejected after
// allocating what the caps allow, whatever its size (except that an object
// over the member cap costs ~40 bytes per member: duplicate_key is a parse
// error, which wins, so its keys are still checked). Rule precedence is
// still the seed's parse-then-normalize order (conformance/README.md): once
// a normalization rule is broken, the rest of the input is only checked for
// parse errors, which win. Decode builds the value it returns.
//
// The package does not validate record schemas (see gen/) and does not
// decide what is secret; it only makes bytes deterministic.
package canonical
