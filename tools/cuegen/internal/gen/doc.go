// Package gen turns CUE schemas written in rayflow's strict profile into Go:
// structs with JSON tags, enum constants with Valid(), strict decoders and
// validators that need no CUE at run time.
//
// The generator reads the CUE syntax tree, not the evaluated value, so that
// every constraint is either translated or refused with its source position:
// nothing is dropped silently. CUE's evaluator still checks the same files
// (cue vet, and the differential tests in schema/) so the two readings are
// compared on every fixture.
//
// The strict profile:
//   - records are definitions (#Name: {...}), closed, one Go package per file
//     (file attribute @rayflow(gopkg=NAME));
//   - scalars carry a base type and explicit bounds: int & >=A & <=B,
//     number & >=A & <=B, string with =~, !~, strings.MinRunes/MaxRunes and
//     byte caps written as the field attribute @rayflow(maxBytes=N); the
//     same attribute on a struct or map field caps the member's encoded
//     bytes in the input (checked by the decoder);
//   - enums are disjunctions of string literals; null | T makes a field
//     nullable (pointer); x?: T makes it optional (pointer, omitted);
//     x: null is a field whose only value is null (Go rt.Null, whose zero
//     value encodes as null);
//   - lists are [...T] or non-empty [T, ...T], with list.MinItems,
//     list.MaxItems, list.UniqueItems (scalars only);
//   - maps are {[K]: V} with struct.MinFields/MaxFields;
//   - unions are disjunctions of struct definitions discriminated by a field
//     with a distinct string literal in every variant;
//   - cross-field rules are hidden fields or comprehensions marked
//     @rayflow(rule=ID); the generated code calls a hand-written Go function
//     per rule, so a missing implementation fails to compile; a definition
//     may name itself (#X: S={...}) so that its rules reach embedded fields
//     as S.field; an embedded definition's rules run on every embedding
//     struct (one Go function, which takes an interface);
//   - no defaults: every value is written explicitly in the data.
//
// Not a goal: general CUE. Anything else is refused with a readable message.
package gen
