// Package rtsrc is the run-time support shared by the Go code that tools/cuegen
// generates from the CUE schemas in schema/.
//
// It provides a strict JSON parser (byte cap checked by the caller before
// parsing; duplicate keys, invalid UTF-8, lone surrogates and the non-JSON
// constants NaN/Infinity are rejected), JSON-pointer paths, and a bounded,
// ordered error collector with stable codes.
//
// It is not a general JSON library and does not normalize anything: canonical
// JSON (NFC, float folding) lives in sdk/canonical. The generator copies this
// package verbatim to gen/rt; edit it here, then run go generate.
package rtsrc
