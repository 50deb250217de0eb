// Package redact replaces sensitive text in operator-facing values (output
// previews, progress messages and metrics) before they leave a leaf.
//
// Matching is a case-insensitive search anywhere in the text, on the text
// as written and again after terminal-control normalization (ANSI CSI, OSC
// and DCS sequences, C0/C1 controls and zero-width format characters
// removed), so formatting cannot hide a token. A matching string is
// replaced entirely by Marker and a matching mapping key redacts its value.
// Bounded work: values nested deeper than MaxDepth, roots over their item or
// character budget, and texts over MaxTextRunes are replaced wholesale.
//
// It is defense in depth, not an authorization or encryption boundary:
// never put credentials in previews in the first place.
package redact
