package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit statuses shared by every command: one status per kind of outcome,
// whatever the command.
const (
	exitOK       = 0
	exitError    = 1 // I/O or internal failure, malformed input file, a failed job or check
	exitUsage    = 2 // bad command line: unknown command or flag, bad flag value, wrong arguments
	exitRejected = 3 // the input was rejected by a contract rule ("rejected: …" on stderr)
)

type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, e env, args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			c, ok := commands[args[1]]
			if !ok || len(args) > 2 {
				errorLine(e, "help takes one command name, got %q (run 'rayflow help')", args[1:])
				return exitUsage
			}
			return c.run(ctx, e, []string{"--help"})
		}
		usage(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		errorLine(e, "unknown command %q (run 'rayflow help')", args[0])
		return exitUsage
	}
	return c.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `rayflow: typed workflow plans on Ray, from Go.

Usage: rayflow <command> [flags]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run 'rayflow <command> --help' for a command's flags and examples.
Exit status (every command): 0 ok, 1 error, 2 usage, 3 input rejected by a
contract rule.
`)
}

// newFlags returns a flag set whose --help prints the synopsis, the flags
// and the examples.
func newFlags(e env, name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: rayflow %s\n\n", synopsis)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s", indent(examples))
		}
	}
	return fs
}

// parse parses args; it returns -1 to continue or an exit status.
func parse(fs *flag.FlagSet, e env, args []string) int {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return exitOK
		}
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	return -1
}

// parseWithSubcommands parses flags that may come before, between and
// after positional words ("conformance run --impl X", "plan --ray show F")
// and returns the words, or an exit status (≥ 0) to stop with.
func parseWithSubcommands(fs *flag.FlagSet, e env, args []string) ([]string, int) {
	var words []string
	for {
		if code := parse(fs, e, args); code >= 0 {
			return nil, code
		}
		if fs.NArg() == 0 {
			return words, -1
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// errorLine prints one error line on stderr with exactly one "rayflow: "
// prefix: errors of packages that name rayflow themselves are not
// prefixed twice, and a multi-line message is joined into one line.
func errorLine(e env, format string, args ...any) {
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	for {
		m := strings.TrimPrefix(msg, "rayflow: ")
		m = strings.ReplaceAll(m, ": rayflow: ", ": ")
		if m == msg {
			break
		}
		msg = m
	}
	fmt.Fprintln(e.stderr, "rayflow: "+msg)
}

// noArgs refuses positional arguments for a command that takes none.
func noArgs(fs *flag.FlagSet, e env) int {
	if fs.NArg() == 0 {
		return -1
	}
	errorLine(e, "%s takes no arguments, got %q", fs.Name(), fs.Args())
	return exitUsage
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
