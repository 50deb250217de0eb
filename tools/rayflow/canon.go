package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rayflow/rayflow/conformance"
	"github.com/rayflow/rayflow/sdk/canonical"
)

// maxInputDefault bounds what canon and fingerprint read.
const maxInputDefault = 64 << 20

func init() {
	register("canon", "canonical JSON v1 of JSON text on stdin", cmdCanon)
	register("fingerprint", "domain-separated sha256 of the canonical form of stdin", cmdFingerprint)
	register("numbers", "hash of the conformance number lines (docs/contracts.md#number-lines-and-vectors)", cmdNumbers)
	register("batch", "canonicalize JSON lines of hex inputs (differential testing)", cmdBatch)
}

func codecFor(noFold bool) canonical.Codec {
	if noFold {
		return canonical.NoFold
	}
	return canonical.V1
}

// readInput reads the input named by args: stdin when there is none or
// it is "-", else the file. More than one argument, or a negative limit,
// is a usage error; an input over limit bytes is an error.
func readInput(e env, args []string, limit int64) ([]byte, int) {
	if limit < 0 {
		errorLine(e, "--max-input %d: must not be negative", limit)
		return nil, exitUsage
	}
	if len(args) > 1 {
		errorLine(e, "one input at most (a FILE, or - or nothing for stdin), got %q", args)
		return nil, exitUsage
	}
	r, name := e.stdin, "stdin"
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			errorLine(e, "%v", err)
			return nil, exitError
		}
		defer f.Close()
		r, name = f, args[0]
	}
	b, err := readAtMost(r, limit)
	switch {
	case errors.Is(err, errTooLarge):
		errorLine(e, "%s is larger than --max-input %d bytes", name, limit)
		return nil, exitError
	case err != nil:
		errorLine(e, "reading %s: %v", name, err)
		return nil, exitError
	}
	return b, -1
}

var errTooLarge = errors.New("input over the limit")

// readAtMost reads r to its end, or fails with errTooLarge once it has
// more than limit bytes (any limit up to math.MaxInt64).
// A regular file (or stdin redirected from one) is read into a buffer of
// its size, so the input costs its size once.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	b := make([]byte, 0, 512)
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() < limit {
			b = make([]byte, 0, st.Size()+1)
		}
	}
	lr := &io.LimitedReader{R: r, N: limit}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if lr.N > 0 {
		return b, nil
	}
	var probe [1]byte
	for {
		n, err := r.Read(probe[:])
		if n > 0 {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// canonicalInput reads the input and canonicalizes it, or returns the exit
// status of the failure (after printing the protocol's rejection line).
func canonicalInput(e env, args []string, limit int64, noFold bool) ([]byte, int) {
	in, code := readInput(e, args, limit)
	if code >= 0 {
		return nil, code
	}
	out, err := codecFor(noFold).Transform(in)
	if err != nil {
		return nil, rejected(e, err)
	}
	return out, -1
}

// rejected prints the protocol's one rejection line.
func rejected(e env, err error) int {
	var ce *canonical.Error
	if errors.As(err, &ce) {
		detail := ce.Detail
		if ce.Path != "" {
			detail = "at " + ce.Path + ": " + detail
		}
		fmt.Fprintf(e.stderr, "rejected: %s: %s\n", string(ce.Rule), strings.ReplaceAll(detail, "\n", " "))
		return exitRejected
	}
	errorLine(e, "%v", err)
	return exitError
}

func cmdCanon(_ context.Context, e env, args []string) int {
	fs := newFlags(e, "canon", "canon [--no-fold] [--max-input BYTES] [FILE|-]\n\n"+
		"Prints the canonical form of the JSON text in FILE (default: stdin).", `echo '{"b":1.0,"a":"e\u0301"}' | rayflow canon
    {"a":"é","b":1}
rayflow canon plan.json
echo '{"progress_percent":100.0}' | rayflow canon --no-fold
    {"progress_percent":100.0}
echo '{"a":NaN}' | rayflow canon    # exit 3
    rejected: non_finite: at /a: NaN and Infinity are not allowed
`)
	noFold := fs.Bool("no-fold", false, "use the summary/progress codec: no NFC, caps or float folding")
	maxInput := fs.Int64("max-input", maxInputDefault, "largest accepted input in bytes")
	files, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	out, code := canonicalInput(e, files, *maxInput, *noFold)
	if code >= 0 {
		return code
	}
	if _, err := e.stdout.Write(out); err != nil {
		return exitError
	}
	return exitOK
}

func cmdFingerprint(_ context.Context, e env, args []string) int {
	domains := make([]string, len(canonical.Domains))
	for i, d := range canonical.Domains {
		domains[i] = "  " + string(d)
	}
	fs := newFlags(e, "fingerprint", "fingerprint [--domain NAME] [--no-fold] [--bare] [--max-input BYTES] [FILE|-]\n\n"+
		"Prints sha256:<hex> of the ASCII domain NAME, one NUL byte and the canonical bytes.\nrayflow domains:\n"+
		strings.Join(domains, "\n")+"\n", `echo '{"plan_format":"rayflow.workflow-plan","plan_format_version":1}' | rayflow fingerprint
    sha256:0f4ed160732e241bc2262a1ae601c45846e9e8e2ee1d6f894ef448265d1042a0
rayflow fingerprint --domain rayflow.workflow-definition-v1 definition.json
rayflow fingerprint --domain rayflow:workflow-progress:topology-page:v1 --no-fold --bare < page.json
`)
	domain := fs.String("domain", string(canonical.DomainPlan), "digest domain (printable ASCII)")
	noFold := fs.Bool("no-fold", false, "canonicalize with the summary/progress codec")
	bare := fs.Bool("bare", false, "print the 64 hex digits without the sha256: prefix")
	maxInput := fs.Int64("max-input", maxInputDefault, "largest accepted input in bytes")
	files, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	d := canonical.Domain(*domain)
	if err := d.Validate(); err != nil {
		errorLine(e, "--domain: %v", err)
		return exitUsage
	}
	out, code := canonicalInput(e, files, *maxInput, *noFold)
	if code >= 0 {
		return code
	}
	sum := d.Sum(out)
	if *bare {
		fmt.Fprintln(e.stdout, sum.Hex())
	} else {
		fmt.Fprintln(e.stdout, sum)
	}
	return exitOK
}

func cmdNumbers(_ context.Context, e env, args []string) int {
	fs := newFlags(e, "numbers", "numbers --count N [--no-fold]\n\n"+
		"Prints '<sha256 hex> <bytes>' of the first N lines '<hex bits>,<number text>\\n'\nof the conformance number sequence (conformance/vectors/numbers.json).",
		"rayflow numbers --count 1000\n    a79b081acec090819d84459e57d6744dd033556f6b02dca025651d068a37ee0c 38541\n")
	count := fs.Int("count", 1000, "number of lines")
	noFold := fs.Bool("no-fold", false, "number text without float folding")
	if code := parse(fs, e, args); code >= 0 {
		return code
	}
	if code := noArgs(fs, e); code >= 0 {
		return code
	}
	if *count < 0 {
		errorLine(e, "--count must not be negative")
		return exitUsage
	}
	f, err := conformance.LoadNumbers()
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	sum, n, err := f.HashLines(*count, codecFor(*noFold))
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	fmt.Fprintf(e.stdout, "%s %d\n", sum, n)
	return exitOK
}

type batchRequest struct {
	Mode     conformance.Mode `json:"mode"`
	InputHex string           `json:"input_hex"`
}

type batchAnswer struct {
	Canonical *string `json:"canonical_hex,omitempty"`
	Rejection string  `json:"rejection,omitempty"`
}

func cmdBatch(_ context.Context, e env, args []string) int {
	fs := newFlags(e, "batch", "batch < requests.jsonl\n\n"+
		`Reads JSON lines {"mode":"fold"|"no-fold","input_hex":"…"} and answers each with
{"canonical_hex":"…"} or {"rejection":"<rule>"} (conformance/README.md).`,
		`printf '{"mode":"fold","input_hex":"5b312e305d"}\n' | rayflow batch
    {"canonical_hex":"5b315d"}
`)
	if code := parse(fs, e, args); code >= 0 {
		return code
	}
	if code := noArgs(fs, e); code >= 0 {
		return code
	}
	sc := bufio.NewScanner(e.stdin)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	out := bufio.NewWriter(e.stdout)
	enc := json.NewEncoder(out)
	for line := 1; sc.Scan(); line++ {
		var req batchRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			out.Flush()
			errorLine(e, "batch line %d: %v", line, err)
			return exitError
		}
		in, err := hex.DecodeString(req.InputHex)
		if err != nil || (req.Mode != conformance.ModeFold && req.Mode != conformance.ModeNoFold) {
			out.Flush()
			errorLine(e, "batch line %d: want a mode of fold|no-fold and hex input", line)
			return exitError
		}
		var ans batchAnswer
		canon, err := conformance.Codec(req.Mode).Transform(in)
		var ce *canonical.Error
		switch {
		case errors.As(err, &ce):
			ans.Rejection = string(ce.Rule)
		case err != nil:
			out.Flush()
			errorLine(e, "batch line %d: %v", line, err)
			return exitError
		default:
			h := hex.EncodeToString(canon)
			ans.Canonical = &h
		}
		if err := enc.Encode(ans); err != nil {
			return exitError
		}
	}
	if err := sc.Err(); err != nil {
		out.Flush()
		errorLine(e, "reading stdin: %v", err)
		return exitError
	}
	if err := out.Flush(); err != nil {
		return exitError
	}
	return exitOK
}
