package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/rayflow/rayflow/durable"
)

func init() {
	register("queues", "set, clear and show a queue's fair admission limits and counts (PostgreSQL)", cmdQueues)
}

const queuesSynopsis = `queues set|clear|show [flags] QUEUE

  set QUEUE [--per-key-running N] [--starts-per-second R] [--burst B]
                                 replaces the queue's limits (a flag not given, or 0,
                                 is no limit) and prints them with the counts
  clear QUEUE                    removes the queue's limits and prints the counts
  show QUEUE [--json]            the limits, the start-rate tokens, queued and running
                                 tasks, and the concurrency keys queued, running and
                                 at their limit

--per-key-running bounds the running tasks of each concurrency key (rayflow tasks
enqueue --concurrency-key), exactly, however many workers claim; tasks without a
key are not bounded by it. --starts-per-second bounds the tasks the queue's workers
start per second together, a token bucket of --burst tokens (default: the rate
rounded up). The limits hold for the claims after the command returns.

The connection comes from --database-url or RAYFLOW_DATABASE_URL.`

// queuesExamples run in this order as written (TestHelpExamplesRun).
const queuesExamples = `rayflow queues set tenants --per-key-running 2 --starts-per-second 50 --burst 100
rayflow queues show tenants
    queue:              tenants
    per-key running:    2
    starts per second:  50 (burst 100)
    …
rayflow queues show tenants --json
rayflow queues clear tenants
`

func cmdQueues(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "queues", queuesSynopsis, queuesExamples)
	dbURL := databaseFlag(fs)
	perKey := fs.Int("per-key-running", 0, fmt.Sprintf("set: the running tasks of each concurrency key at most (1-%d; 0: no limit)", durable.MaxPerKeyRunning))
	rate := fs.Float64("starts-per-second", 0, fmt.Sprintf("set: the tasks the queue's workers start per second at most, together (up to %d; 0: no limit)", durable.MaxStartsPerSecond))
	burst := fs.Int("burst", 0, fmt.Sprintf("set: the start-rate bucket's size (1-%d; 0: the rate rounded up; only with --starts-per-second)", durable.MaxPerKeyRunning))
	asJSON := fs.Bool("json", false, "show: print the queue's status as JSON")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	verb, rest, code := verbArgs(fs, words, map[string]int{"set": 1, "clear": 1, "show": 1})
	if code >= 0 {
		return code
	}
	queue := rest[0]
	if err := durable.CheckQueueName(queue); err != nil {
		errorLine(e, "queues %s: QUEUE: %v", verb, err)
		return exitUsage
	}
	limits := durable.QueueLimits{PerKeyRunning: *perKey, StartsPerSecond: *rate, Burst: *burst}
	if verb == "set" {
		if code := checkQueueFlags(e, givenFlags(fs), limits); code >= 0 {
			return code
		}
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	c := durable.NewClient(pool, nil)
	switch verb {
	case "set", "clear":
		if verb == "clear" {
			limits = durable.QueueLimits{}
		}
		if err := c.SetQueueLimits(ctx, queue, limits); err != nil {
			errorLine(e, "queues %s: %v", verb, err)
			if errors.Is(err, durable.ErrInvalidOption) {
				return exitUsage
			}
			return exitError
		}
	}
	st, err := c.Queue(ctx, queue)
	if err != nil {
		errorLine(e, "queues %s: %v", verb, err)
		return exitError
	}
	if *asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	writeQueueStatus(e.stdout, st)
	return exitOK
}

// queueFlags names the flag of each durable.QueueLimits field.
var queueFlags = map[string]string{"PerKeyRunning": "per-key-running", "StartsPerSecond": "starts-per-second", "Burst": "burst"}

// checkQueueFlags refuses, before connecting, a queues set without a
// limit flag, and limit values outside the ranges the help states
// (exitUsage; -1 to go on). durable.Client.SetQueueLimits checks the
// same bounds again.
func checkQueueFlags(e env, given map[string]bool, l durable.QueueLimits) int {
	if !given["per-key-running"] && !given["starts-per-second"] && !given["burst"] {
		errorLine(e, "queues set: give --per-key-running, --starts-per-second or --burst (queues clear removes the limits)")
		return exitUsage
	}
	if err := checkQueueLimits(l); err != nil {
		var oe *durable.OptionError
		if errors.As(err, &oe) {
			errorLine(e, "--%s: %v", queueFlags[oe.Option], oe.Err)
		} else {
			errorLine(e, "%v", err)
		}
		return exitUsage
	}
	return -1
}

// checkQueueLimits is the check of durable.QueueLimits that
// SetQueueLimits makes, before a connection: an *durable.OptionError
// naming the field, wrapping durable.ErrInvalidOption.
func checkQueueLimits(l durable.QueueLimits) error {
	bad := func(field, format string, args ...any) error {
		return &durable.OptionError{Option: field, Err: fmt.Errorf("%w: "+format, append([]any{durable.ErrInvalidOption}, args...)...)}
	}
	switch {
	case l.PerKeyRunning < 0 || l.PerKeyRunning > durable.MaxPerKeyRunning:
		return bad("PerKeyRunning", "per-key running limit %d outside 1…%d (0: none)", l.PerKeyRunning, durable.MaxPerKeyRunning)
	case math.IsNaN(l.StartsPerSecond) || l.StartsPerSecond < 0 || l.StartsPerSecond > durable.MaxStartsPerSecond:
		return bad("StartsPerSecond", "starts per second %v outside (0, %d] (0: none)", l.StartsPerSecond, durable.MaxStartsPerSecond)
	case l.Burst < 0 || l.Burst > durable.MaxPerKeyRunning:
		return bad("Burst", "burst %d outside 1…%d", l.Burst, durable.MaxPerKeyRunning)
	case l.Burst != 0 && l.StartsPerSecond == 0:
		return bad("Burst", "a burst needs a start rate (--starts-per-second)")
	}
	return nil
}

// writeQueueStatus prints a queue's limits and counts, one "name: value"
// line each.
func writeQueueStatus(w io.Writer, st *durable.QueueStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", k, v) }
	line("queue", st.Queue)
	if st.Limits.PerKeyRunning > 0 {
		line("per-key running", st.Limits.PerKeyRunning)
	} else {
		line("per-key running", "no limit")
	}
	if st.Limits.StartsPerSecond > 0 {
		line("starts per second", fmt.Sprintf("%s (burst %d)", strconv.FormatFloat(st.Limits.StartsPerSecond, 'g', -1, 64), st.Limits.Burst))
		line("tokens", strconv.FormatFloat(st.Tokens, 'f', 2, 64))
	} else {
		line("starts per second", "no limit")
	}
	line("queued", st.Queued)
	line("running", st.Running)
	line("keys queued", st.KeysQueued)
	line("keys running", st.KeysRunning)
	line("keys at limit", st.KeysAtLimit)
	tw.Flush()
}
