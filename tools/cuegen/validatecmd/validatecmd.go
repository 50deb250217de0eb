package validatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/rayflow/rayflow/gen/registry"
	"github.com/rayflow/rayflow/gen/rt"
)

// Exit codes, the rayflow CLI's: 1 is an error, 2 a bad command line, 3
// an input rejected by a contract rule.
const (
	ExitOK      = 0 // every record is valid
	ExitError   = 1 // a file could not be read
	ExitUsage   = 2 // bad arguments
	ExitInvalid = 3 // at least one record is invalid
)

// usage prints the synopsis, flags and examples of the command.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: rayflow validate --schema DEF FILE...
       rayflow validate --list

Validate JSON records against a rayflow schema definition with the generated
strict decoders (no CUE at run time). Each file holds one record. Prints
"FILE: ok" or one line "FILE: PATH: CODE: message" per error (PATH is a JSON
pointer, "/" for the record itself).

Exit status: 0 every record is valid, 1 a file could not be read, 2 usage
error, 3 a record is invalid.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Examples:
  rayflow validate --schema Plan plan.json
  rayflow validate --schema Summary task-*.summary.json
  rayflow validate --list
`)
}

// readLimit is how many bytes of a record of s are read at most: its byte
// cap, or the largest cap of any record for a definition without one.
func readLimit(s registry.Schema) int {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return registry.MaxRecordBytes
}

// readFile reads the record in the file name (a regular file, a device or
// a pipe such as /dev/stdin) for s, never more than readLimit(s)+1 bytes.
// A longer record is a *rt.ValidationError with one TOO_LARGE error at the
// root; any other error is the file's.
func readFile(name string, s registry.Schema) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readRecord(f, readLimit(s))
	var ve *rt.ValidationError
	if errors.As(err, &ve) {
		// A regular file's size is known: report it, as the decoder does.
		if fi, serr := f.Stat(); serr == nil && fi.Mode().IsRegular() && fi.Size() > int64(readLimit(s)) {
			var e rt.Errors
			rt.TooLarge(&e, int(min(fi.Size(), math.MaxInt)), readLimit(s))
			return nil, e.Err()
		}
	}
	return data, err
}

// readRecord reads r to its end if it holds at most limit bytes; after
// limit+1 bytes it stops and returns a *rt.ValidationError with one
// TOO_LARGE error at the root (the length of an endless or unsized stream
// is not known, so the message gives the cap only).
func readRecord(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		var e rt.Errors
		e.Add(rt.Root, rt.CodeTooLarge, "record is more than the %d-byte cap (reading stopped at %d bytes)", limit, limit+1)
		return nil, e.Err()
	}
	return data, nil
}

// Run parses args (without the program and subcommand names) and validates
// each file. Output lines are "FILE: ok" or "FILE: PATH: CODE: message",
// where PATH is a JSON pointer ("/" for the record itself). Records are read
// from files (no stdin), each only up to its definition's byte cap plus one
// byte (the largest cap of any record for a definition without one): a
// longer file is TOO_LARGE without being read further.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := fs.String("schema", "", "definition name, e.g. Summary, Plan, LifecycleSnapshot (see -list)")
	listDefs := fs.Bool("list", false, "list the definition names and exit")
	fs.Usage = func() { usage(stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return ExitOK
		}
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
		fmt.Fprintf(stderr, "rayflow: validate: unknown schema %q; known: %s\n", *def, strings.Join(registry.Names(), ", "))
		return ExitUsage
	}
	code := ExitOK
	for _, name := range fs.Args() {
		if err := ctx.Err(); err != nil {
			fmt.Fprintln(stderr, "rayflow: validate:", err)
			return ExitError
		}
		data, err := readFile(name, s)
		if err != nil && !errors.As(err, new(*rt.ValidationError)) {
			fmt.Fprintln(stderr, "rayflow: validate:", err)
			return ExitError
		}
		if err == nil {
			_, err = s.Decode(data)
		}
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
