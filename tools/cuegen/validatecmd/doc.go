// Package validatecmd implements `rayflow validate --schema DEF FILE…`: it
// validates JSON records with the generated strict decoders (no CUE at run
// time) and prints every error with its JSON-pointer path and stable code.
//
// It is a library for the rayflow CLI, not a command of its own.
package validatecmd
