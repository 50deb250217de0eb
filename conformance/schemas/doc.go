// Package schemas is the schema part of the conformance suite: every fixture
// under schema/testdata/{valid,invalid}/<Def>/ must get its directory's
// verdict, and the errors listed in its .want file (one "CODE PATH" per
// line), both from the generated validators (gen/registry) and from the
// `rayflow validate` command.
package schemas
