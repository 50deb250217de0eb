//go:build unix

package local_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/itemledger"
	"github.com/rayflow/rayflow/internal/itemledger/itemledgertest"
	"github.com/rayflow/rayflow/sdk"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkResumeOverhead is a resumable map's ledger overhead: a no-op
// 10,000-item map (window 64) through sdk.Run without WithResume and, in
// the same iteration, with WithResume and a fresh in-memory item ledger
// (every item looked up, run and recorded: a first attempt, the worst
// case). It reports each one's wall and CPU ns per item, the wall ratio
// resume/plain and the ledger statements per window chunk.
func BenchmarkResumeOverhead(b *testing.B) {
	const items, window = 10_000, 64
	in := make([]int, items)
	for i := range in {
		in[i] = i
	}
	lim := sdk.Limits{MaxConcurrency: window, MaxItems: items}
	plain := sdk.Map(sdk.Step(NoopLeaf)).WithLimits(lim)
	resumable := sdk.Map(sdk.Step(NoopLeaf)).WithLimits(lim).WithResume()
	var wallPlain, wallResume, cpuPlain, cpuResume time.Duration
	statements := 0
	for b.Loop() {
		c0, t0 := cpuTime(b), time.Now()
		out, err := sdk.Run(context.Background(), plain, in)
		wallPlain += time.Since(t0)
		cpuPlain += cpuTime(b) - c0
		if err != nil || len(out) != items {
			b.Fatalf("plain: %d results, %v", len(out), err)
		}
		mem := &itemledgertest.Memory{}
		ctx := itemledger.WithLedger(context.Background(), mem)
		c0, t0 = cpuTime(b), time.Now()
		out, err = sdk.Run(ctx, resumable, in)
		wallResume += time.Since(t0)
		cpuResume += cpuTime(b) - c0
		if err != nil || len(out) != items || mem.Entries() != items {
			b.Fatalf("resume: %d results, %d entries, %v", len(out), mem.Entries(), err)
		}
		l, r := mem.Calls()
		statements += l + r
	}
	n := float64(b.N) * items
	b.ReportMetric(float64(wallPlain.Nanoseconds())/n, "plain-ns/item")
	b.ReportMetric(float64(wallResume.Nanoseconds())/n, "resume-ns/item")
	b.ReportMetric(float64(cpuPlain.Nanoseconds())/n, "plain-cpu-ns/item")
	b.ReportMetric(float64(cpuResume.Nanoseconds())/n, "resume-cpu-ns/item")
	b.ReportMetric(float64(wallResume)/float64(wallPlain), "ratio")
	b.ReportMetric(float64(statements)/(float64(b.N)*items/window), "statements/chunk")
}
