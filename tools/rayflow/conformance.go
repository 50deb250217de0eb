package main

import (
	"context"
	"regexp"
	"runtime"

	"github.com/rayflow/rayflow/conformance"
)

func init() {
	register("conformance", "run the conformance vectors against rayflow or another implementation", cmdConformance)
}

func cmdConformance(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "conformance", "conformance run [--impl 'CMD'] [--numbers N] [--run REGEXP]\n\n"+
		"Runs conformance/vectors against this binary's own code, or against CMD, a\n"+
		"command line speaking the protocol of conformance/README.md (the runner\n"+
		"appends 'canon', 'fingerprint --domain D', 'numbers --count N', '--no-fold').",
		`rayflow conformance run
rayflow conformance run --impl 'python3 conformance/reference/python/rayflow_canon.py'
rayflow conformance run --impl ./bin/rayflow --numbers 1000000
`)
	impl := fs.String("impl", "", "command line of the implementation under test (default: in process)")
	numbers := fs.Int("numbers", 100_000, "largest block of number lines to check (1000, 10000, 100000 or 1000000)")
	match := fs.String("run", "", "only vectors whose name matches this regular expression (skips numbers)")
	parallel := fs.Int("parallel", 2*runtime.NumCPU(), "vectors checked at once")
	positional, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	if len(positional) != 1 || positional[0] != "run" {
		fs.Usage()
		return exitUsage
	}
	if *numbers < 0 || *parallel < 1 {
		errorLine(e, "--numbers must not be negative and --parallel must be positive")
		return exitUsage
	}
	opts := conformance.Options{MaxNumberLines: *numbers, Parallel: *parallel}
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			errorLine(e, "--run: %v", err)
			return exitUsage
		}
		opts.Match = re.MatchString
	}
	var im conformance.Impl = conformance.Native{}
	if *impl != "" {
		im = conformance.Command{Line: *impl}
	}
	rep, err := conformance.Run(ctx, im, opts)
	if err != nil {
		errorLine(e, "%v", err)
		return exitError
	}
	rep.Write(e.stdout)
	if !rep.OK() {
		return exitError
	}
	return exitOK
}
