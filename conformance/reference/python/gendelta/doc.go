// Command gendelta writes unicode15_delta.json, the Unicode 15.0.0 data that the
// Python reference implementation of canonical JSON v1 needs on top of Python 3.11's
// unicodedata (Unicode 14.0.0).
//
// It reads Go's standard unicode package and golang.org/x/text/unicode/norm, and
// refuses to run unless both are Unicode 15.0.0. Run it from the repository root:
//
//	go run ./conformance/reference/python/gendelta
//
// The output holds, for Unicode 15.0.0: the assigned code points (General_Category
// other than Cn) as ranges, the noncharacters, every non-zero canonical combining
// class, the code points assigned after 13.0.0 (a superset of the 14.0 to 15.0
// delta, so the Python side can check its 14.0.0 tables against ours where they
// overlap), their canonical decompositions, digests of all canonical
// decompositions and of all primary composites, and NFC results for sample
// strings built from the new marks.
package main
