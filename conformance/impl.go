package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/rayflow/rayflow/sdk/canonical"
)

// Result is an implementation's answer to one input: its output, or the
// rule it rejected the input under.
type Result struct {
	Output    []byte
	Rejection string
}

// Impl is an implementation under test.
type Impl interface {
	Name() string
	// Canon returns the canonical bytes of input under mode.
	Canon(ctx context.Context, input []byte, mode Mode) (Result, error)
	// Fingerprint returns "sha256:<hex>" of domain, NUL and the canonical bytes.
	Fingerprint(ctx context.Context, input []byte, domain string, mode Mode) (Result, error)
	// Numbers returns the SHA-256 hex and byte count of the first count
	// number lines (docs/contracts.md#number-lines-and-vectors) under mode.
	Numbers(ctx context.Context, count int, mode Mode) (string, int64, error)
}

// Codec maps a protocol mode to its codec.
func Codec(m Mode) canonical.Codec {
	if m == ModeNoFold {
		return canonical.NoFold
	}
	return canonical.V1
}

// Native runs the vectors against this module's sdk/canonical in process.
type Native struct{}

// Name implements Impl.
func (Native) Name() string { return "rayflow (in process)" }

// Canon implements Impl.
func (Native) Canon(_ context.Context, input []byte, mode Mode) (Result, error) {
	out, err := Codec(mode).Transform(input)
	return nativeResult(out, err)
}

// Fingerprint implements Impl.
func (Native) Fingerprint(_ context.Context, input []byte, domain string, mode Mode) (Result, error) {
	d := canonical.Domain(domain)
	if err := d.Validate(); err != nil {
		return Result{}, err
	}
	out, err := Codec(mode).Transform(input)
	if err != nil {
		return nativeResult(nil, err)
	}
	return Result{Output: []byte(d.Sum(out).String())}, nil
}

// Numbers implements Impl.
func (Native) Numbers(_ context.Context, count int, mode Mode) (string, int64, error) {
	f, err := LoadNumbers()
	if err != nil {
		return "", 0, err
	}
	return f.HashLines(count, Codec(mode))
}

func nativeResult(out []byte, err error) (Result, error) {
	var ce *canonical.Error
	if errors.As(err, &ce) {
		return Result{Rejection: string(ce.Rule)}, nil
	}
	return Result{Output: out}, err
}

// Command runs an external implementation: a shell command line to which
// the protocol's arguments are appended (see README.md).
type Command struct {
	Line string
}

// Name implements Impl.
func (c Command) Name() string { return c.Line }

var rejectionLine = regexp.MustCompile(`^rejected: ([a-z0-9_]+)(: .*)?\n?$`)

func (c Command) run(ctx context.Context, stdin []byte, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", c.Line + ` "$@"`, "sh"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return Result{Output: stdout.Bytes()}, nil
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		m := rejectionLine.FindStringSubmatch(stderr.String())
		if m == nil {
			return Result{}, fmt.Errorf("%s %s: exit status 3 without one 'rejected: <rule>: <detail>' line on stderr: %q", c.Line, strings.Join(args, " "), stderr.String())
		}
		return Result{Rejection: m[1]}, nil
	default:
		return Result{}, fmt.Errorf("%s %s: %w: %s", c.Line, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
}

func modeArgs(mode Mode, args ...string) []string {
	if mode == ModeNoFold {
		return append(args, "--no-fold")
	}
	return args
}

// Canon implements Impl.
func (c Command) Canon(ctx context.Context, input []byte, mode Mode) (Result, error) {
	return c.run(ctx, input, modeArgs(mode, "canon")...)
}

// Fingerprint implements Impl.
func (c Command) Fingerprint(ctx context.Context, input []byte, domain string, mode Mode) (Result, error) {
	r, err := c.run(ctx, input, modeArgs(mode, "fingerprint", "--domain", domain)...)
	r.Output = bytes.TrimSuffix(r.Output, []byte("\n"))
	return r, err
}

// Numbers implements Impl.
func (c Command) Numbers(ctx context.Context, count int, mode Mode) (string, int64, error) {
	r, err := c.run(ctx, nil, modeArgs(mode, "numbers", "--count", strconv.Itoa(count))...)
	if err != nil {
		return "", 0, err
	}
	if r.Rejection != "" {
		return "", 0, fmt.Errorf("%s numbers: unexpected rejection %s", c.Line, r.Rejection)
	}
	sum, size, ok := strings.Cut(strings.TrimSpace(string(r.Output)), " ")
	n, perr := strconv.ParseInt(size, 10, 64)
	if !ok || perr != nil {
		return "", 0, fmt.Errorf("%s numbers: want '<sha256> <bytes>', got %q", c.Line, r.Output)
	}
	return sum, n, nil
}
