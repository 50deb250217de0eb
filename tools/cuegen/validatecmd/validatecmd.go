// Package validatecmd implements `rayflow validate --schema DEF FILE…`: it
// validates JSON records with the generated strict decoders (no CUE at run
// time) and prints every error with its JSON-pointer path and stable code.
//
// It is a library for the rayflow CLI, not a command of its own.
package validatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rayflow/rayflow/gen/registry"
	"github.com/rayflow/rayflow/gen/rt"
)

// Exit codes.
const (
	ExitOK      = 0 // every record is valid
	ExitInvalid = 1 // at least one record is invalid
	ExitUsage   = 2 // bad arguments or unreadable file
)

// Run parses args (without the program and subcommand names) and validates
// each file. Output lines are "FILE: ok" or "FILE: PATH: CODE: message",
// where PATH is a JSON pointer ("/" for the record itself). "-" reads stdin
// is not supported: records are files.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := fs.String("schema", "", "definition name, e.g. Summary, Plan, LifecycleSnapshot (see -list)")
	listDefs := fs.Bool("list", false, "list the definition names and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rayflow validate --schema DEF FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if *listDefs {
		for _, n := range registry.Names() {
			fmt.Fprintln(stdout, n)
		}
		return ExitOK
	}
	if *def == "" || fs.NArg() == 0 {
		fs.Usage()
		return ExitUsage
	}
	s, ok := registry.Lookup(*def)
	if !ok {
		fmt.Fprintf(stderr, "validate: unknown schema %q; known: %s\n", *def, strings.Join(registry.Names(), ", "))
		return ExitUsage
	}
	code := ExitOK
	for _, name := range fs.Args() {
		if err := ctx.Err(); err != nil {
			fmt.Fprintln(stderr, "validate:", err)
			return ExitUsage
		}
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(stderr, "validate:", err)
			return ExitUsage
		}
		_, err = s.Decode(data)
		if err == nil {
			fmt.Fprintf(stdout, "%s: ok\n", name)
			continue
		}
		code = ExitInvalid
		var ve *rt.ValidationError
		if !errors.As(err, &ve) {
			fmt.Fprintf(stdout, "%s: %v\n", name, err)
			continue
		}
		for _, e := range ve.Errors {
			fmt.Fprintf(stdout, "%s: %s\n", name, e)
		}
	}
	return code
}
