package conformance

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// Options bound a run.
type Options struct {
	// MaxNumberLines is the largest block of number lines checked (0:
	// 100,000; docs/contracts.md#number-lines-and-vectors).
	MaxNumberLines int
	// Match, when set, selects vectors by name.
	Match func(name string) bool
	// Parallel is how many vectors run at once (0: 1). Commands that start
	// an interpreter per call gain the most.
	Parallel int
}

// Failure is one vector an implementation got wrong.
type Failure struct {
	Vector string
	Reason string
}

// Report is the outcome of a run.
type Report struct {
	Impl     string
	Checks   int
	Failures []Failure
}

// OK reports whether every check passed.
func (r *Report) OK() bool { return len(r.Failures) == 0 }

// Write prints the report, one line per failure and a summary.
func (r *Report) Write(w io.Writer) {
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL %s: %s\n", f.Vector, f.Reason)
	}
	status := "ok"
	if !r.OK() {
		status = "FAILED"
	}
	fmt.Fprintf(w, "%s: %d checks, %d failures: %s\n", r.Impl, r.Checks, len(r.Failures), status)
}

// Run checks impl against every embedded vector. An error means the run
// itself could not proceed (unreadable vectors, a command that cannot start).
func Run(ctx context.Context, impl Impl, opts Options) (*Report, error) {
	if opts.MaxNumberLines == 0 {
		opts.MaxNumberLines = 100_000
	}
	cf, err := LoadCanonical()
	if err != nil {
		return nil, err
	}
	nf, err := LoadNumbers()
	if err != nil {
		return nil, err
	}
	rep := &Report{Impl: impl.Name()}
	fail := func(name, format string, args ...any) {
		rep.Failures = append(rep.Failures, Failure{Vector: name, Reason: fmt.Sprintf(format, args...)})
	}
	var selected []Vector
	for _, v := range cf.Vectors {
		if opts.Match == nil || opts.Match(v.Name) {
			selected = append(selected, v)
		}
	}
	// Each vector's outcome is computed concurrently and reported in file order.
	outcomes := make([]vectorOutcome, len(selected))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(opts.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				outcomes[i] = checkVector(ctx, impl, selected[i])
			}
		}()
	}
	for i := range selected {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, o := range outcomes {
		rep.Checks += o.checks
		rep.Failures = append(rep.Failures, o.failures...)
	}
	if opts.Match == nil {
		for _, e := range nf.Expected {
			if e.Lines > opts.MaxNumberLines {
				continue
			}
			for _, m := range []struct {
				mode Mode
				want NumbersHash
			}{{ModeNoFold, e.NoFold}, {ModeFold, e.Fold}} {
				rep.Checks++
				name := fmt.Sprintf("numbers/%s/%d", m.mode, e.Lines)
				sum, n, err := impl.Numbers(ctx, e.Lines, m.mode)
				switch {
				case err != nil:
					fail(name, "%v", err)
				case sum != m.want.SHA256 || n != m.want.Bytes:
					fail(name, "got sha256 %s (%d bytes), want %s (%d bytes)", sum, n, m.want.SHA256, m.want.Bytes)
				}
			}
		}
	}
	return rep, nil
}

func compare(v Vector, got Result, render func(Result) string, want string) string {
	if v.Reject != "" {
		if got.Rejection == v.Reject {
			return ""
		}
		return fmt.Sprintf("want rejection %s, got %s", v.Reject, describe(got, render(got)))
	}
	if got.Rejection != "" {
		return fmt.Sprintf("want %s, got rejection %s", want, got.Rejection)
	}
	if g := render(got); g != want {
		return fmt.Sprintf("want %s, got %s", want, g)
	}
	return ""
}

func describe(r Result, rendered string) string {
	if r.Rejection != "" {
		return "rejection " + r.Rejection
	}
	return "output " + rendered
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type vectorOutcome struct {
	checks   int
	failures []Failure
}

func checkVector(ctx context.Context, impl Impl, v Vector) vectorOutcome {
	var o vectorOutcome
	fail := func(format string, args ...any) {
		o.failures = append(o.failures, Failure{Vector: v.Name, Reason: fmt.Sprintf(format, args...)})
	}
	input, _ := v.Bytes() // checked by LoadCanonical
	o.checks++
	got, err := impl.Canon(ctx, input, v.Mode)
	if err != nil {
		fail("canon: %v", err)
		return o
	}
	if reason := compare(v, got, func(r Result) string { return hex.EncodeToString(r.Output) }, deref(v.Canon)); reason != "" {
		fail("canon: %s", reason)
	}
	for _, domain := range slices.Sorted(maps.Keys(v.Prints)) {
		o.checks++
		got, err := impl.Fingerprint(ctx, input, domain, v.Mode)
		if err != nil {
			fail("fingerprint %s: %v", domain, err)
			continue
		}
		if reason := compare(v, got, func(r Result) string { return string(r.Output) }, v.Prints[domain]); reason != "" {
			fail("fingerprint %s: %s", domain, reason)
		}
	}
	if v.Reject != "" {
		// A rejected input must be rejected by fingerprint too.
		o.checks++
		got, err := impl.Fingerprint(ctx, input, "rayflow.workflow-plan-v1", v.Mode)
		if err != nil {
			fail("fingerprint: %v", err)
		} else if got.Rejection != v.Reject {
			fail("fingerprint: want rejection %s, got %s", v.Reject, describe(got, string(got.Output)))
		}
	}
	return o
}
