package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayflow/rayflow/durable"
)

func init() {
	register("tasks", "enqueue, list, show, wait for, cancel, retry and repair durable tasks (PostgreSQL)", cmdTasks)
}

const tasksSynopsis = `tasks enqueue|list|show|wait|cancel|retry|repair [flags] [ARG]

  enqueue FLOW --input JSON|- [--priority N] [--queue Q] [--timeout D] [--max-attempts N]
          [--allow-unserved] [--unique-key K [--unique-global] [--unique-for D]]
          [--run-at RFC3339 | --run-in D] [--concurrency-key K]
                                         prints the task id; FLOW is built in or published
                                         by a live worker (rayflow flows list); with a
                                         unique key another task holds, prints that task's
                                         id and says so on stderr (nothing is enqueued);
                                         --run-at or --run-in: not claimed before then;
                                         --concurrency-key: the queue's per-key limit and
                                         round-robin apply (rayflow queues)
  list [--state S] [--queue Q] [--limit N] [--cursor C]
                                         newest first; prints the next page's cursor on stderr;
                                         a KEY column when a listed task has a concurrency key
  show ID [--json]                       state, attempt, generation, run id, fingerprint,
                                         attempts, result or error
  wait ID [--timeout D]                  exit 0 and the result JSON on SUCCEEDED, 1 otherwise
  cancel ID                              prints the outcome (ACCEPTED, ALREADY_REQUESTED, ...)
  retry ID [--rebuild]                   prints the outcome (ACCEPTED, NOT_RETRYABLE, ...);
                                         --rebuild re-pins the task to the build that claims it
  repair ID                              a new task for a FAILED, CANCELLED or LOST one, under this
                                         build, reusing its recorded map items; prints its id

The connection comes from --database-url or RAYFLOW_DATABASE_URL.`

// tasksExamples run in this order as written (TestHelpExamplesRun):
// the second task is a minute's sleep, cancelled.
const tasksExamples = `id=$(rayflow tasks enqueue fanout --input 200)
rayflow tasks wait $id --timeout 5m
rayflow tasks show $id --json
id=$(echo 60000 | rayflow tasks enqueue sleep --input - --priority 10)
rayflow tasks list --state RUNNING
rayflow tasks cancel $id
`

func cmdTasks(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "tasks", tasksSynopsis, tasksExamples)
	dbURL := databaseFlag(fs)
	input := fs.String("input", "", "enqueue: the input JSON, or - to read it from stdin (required unless the flow's input type can be null)")
	priority := fs.Int("priority", 0, "enqueue: priority -100..100, larger first")
	queue := fs.String("queue", "", `enqueue: queue (default "default"); list: only this queue`)
	timeout := fs.Duration("timeout", 0, "enqueue: per-attempt run timeout (whole seconds; 0 none); wait: how long to wait (0 forever)")
	maxAttempts := fs.Int("max-attempts", durable.DefaultMaxAttempts, "enqueue: attempts including the first (1-100)")
	rebuild := fs.Bool("rebuild", false, "retry: drop the task's plan pin, so that a worker of the current build claims it (steps done under the old plan are not reused)")
	allowUnserved := fs.Bool("allow-unserved", false, "enqueue: a flow this binary does not have even when no live worker serves it on the queue")
	uniqueKey := fs.String("unique-key", "", "enqueue: a unique key (1-200 bytes): while a task holds it, enqueue prints that task's id and creates none")
	uniqueGlobal := fs.Bool("unique-global", false, "enqueue: the unique key is unique across every flow, not only FLOW's")
	uniqueFor := fs.Duration("unique-for", 0, "enqueue: hold the unique key this long from the enqueue (whole seconds), whatever the task's state; 0: while the task is not terminal")
	runAt := fs.String("run-at", "", "enqueue: not claimed before this time (RFC 3339, e.g. 2026-12-24T18:00:00+01:00)")
	runIn := fs.Duration("run-in", 0, "enqueue: not claimed before this long from now (e.g. 10m)")
	concurrencyKey := fs.String("concurrency-key", "", "enqueue: a concurrency key (1-200 bytes, e.g. a tenant): the queue's per-key running limit and round-robin across keys apply (rayflow queues)")
	state := fs.String("state", "", "list: only tasks in this state")
	limit := fs.Int("limit", 50, "list: page size (1-1000)")
	cursor := fs.String("cursor", "", "list: the cursor of the next page")
	asJSON := fs.Bool("json", false, "show: print the task as JSON")
	expAttempt := fs.Int("expect-attempt", 0, "cancel/retry: refuse (STALE_ATTEMPT) unless the task is at this attempt")
	expGen := fs.Int64("expect-generation", 0, "cancel/retry: refuse (STALE_GENERATION) unless the task has this generation")
	expRun := fs.String("expect-run-id", "", "retry: refuse (STALE_WORKFLOW_IDENTITY) unless the last run id is this")
	words, code := parseWithSubcommands(fs, e, args)
	if code >= 0 {
		return code
	}
	verb, rest, code := verbArgs(fs, words, map[string]int{"enqueue": 1, "list": 0, "show": 1, "wait": 1, "cancel": 1, "retry": 1, "repair": 1})
	if code >= 0 {
		return code
	}
	given := givenFlags(fs)
	if code := checkTaskFlags(e, verb, given, *queue, *maxAttempts, *limit); code >= 0 {
		return code
	}
	unique := durable.Unique{Key: *uniqueKey, Global: *uniqueGlobal, For: *uniqueFor}
	if err := unique.Check(); verb == "enqueue" && err != nil {
		var oe *durable.OptionError
		flagName := "--unique-key"
		if errors.As(err, &oe) && oe.Option == "Unique.For" {
			flagName = "--unique-for"
		}
		errorLine(e, "%s: %v", flagName, err)
		return exitUsage
	}
	if verb == "enqueue" && given["concurrency-key"] {
		if err := durable.CheckConcurrencyKey(*concurrencyKey); err != nil {
			errorLine(e, "--concurrency-key: %v", err)
			return exitUsage
		}
	}
	var runAfter time.Time
	if verb == "enqueue" {
		var code int
		if runAfter, code = runAfterFlags(e, given, *runAt, *runIn, time.Now()); code >= 0 {
			return code
		}
	}
	if verb == "enqueue" && !given["input"] {
		if err := inputOptional(rest[0]); err != nil {
			errorLine(e, "%v", err)
			return exitUsage
		}
		*input = "null"
	}
	pool, code := openPool(ctx, e, *dbURL, 2)
	if code >= 0 {
		return code
	}
	defer pool.Close()
	c := durable.NewClient(pool, nil)
	exp := durable.Expect{Attempt: *expAttempt, Generation: *expGen, RunID: *expRun}
	switch verb {
	case "enqueue":
		return tasksEnqueue(ctx, e, c, rest[0], *input, durable.EnqueueOptions{Queue: *queue, Priority: *priority, Timeout: *timeout, MaxAttempts: *maxAttempts,
			AllowUnserved: *allowUnserved, Unique: unique, RunAfter: runAfter, ConcurrencyKey: *concurrencyKey})
	case "list":
		return tasksList(ctx, e, c, durable.ListOptions{State: durable.State(strings.ToUpper(*state)), Queue: *queue, Limit: *limit, Cursor: *cursor})
	case "show":
		return tasksShow(ctx, e, c, rest[0], *asJSON)
	case "wait":
		return tasksWait(ctx, e, c, rest[0], *timeout)
	case "repair":
		return tasksRepair(ctx, e, c, rest[0])
	case "cancel":
		out, err := c.Cancel(ctx, rest[0], exp)
		return outcome(e, string(out), err, out == durable.CancelAccepted || out == durable.CancelAlreadyRequested)
	default:
		retry := c.Retry
		if *rebuild {
			retry = c.RetryRebuild
		}
		out, err := retry(ctx, rest[0], exp)
		if errors.Is(err, durable.ErrUniqueHeld) {
			// An outcome line like the others, and the holder on stderr.
			fmt.Fprintln(e.stdout, uniqueKeyHeld)
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
			return exitError
		}
		return outcome(e, string(out), err, out == durable.RetryAccepted)
	}
}

// uniqueKeyHeld is the outcome tasks retry prints for a task whose unique
// key another task holds (durable.ErrUniqueHeld), as the API's 409 says.
const uniqueKeyHeld = "UNIQUE_KEY_HELD"

// maxListLimit is the largest page durable.Client.List returns.
const maxListLimit = 1000

// checkTaskFlags refuses flag values outside the ranges the help states
// (before connecting), rather than letting the library rewrite them: a
// given --queue must be a queue name (an empty one is not "default"),
// --max-attempts is 1–100 and --limit 1–1000 (0 is not the default). It
// returns -1 to go on, or exitUsage.
func checkTaskFlags(e env, verb string, given map[string]bool, queue string, maxAttempts, limit int) int {
	if given["queue"] && (verb == "enqueue" || verb == "list") {
		if err := durable.CheckQueueName(queue); err != nil {
			errorLine(e, "--queue: %v", err)
			return exitUsage
		}
	}
	if verb == "enqueue" && (maxAttempts < 1 || maxAttempts > durable.MaxAttemptsLimit) {
		errorLine(e, "--max-attempts %d: must be between 1 and %d", maxAttempts, durable.MaxAttemptsLimit)
		return exitUsage
	}
	if verb == "list" && (limit < 1 || limit > maxListLimit) {
		errorLine(e, "--limit %d: must be between 1 and %d", limit, maxListLimit)
		return exitUsage
	}
	return -1
}

// runAfterFlags is the run-after time of --run-at or --run-in (zero
// when neither is given), or exitUsage for both, a --run-at that is not
// RFC 3339 or a negative --run-in.
func runAfterFlags(e env, given map[string]bool, runAt string, runIn time.Duration, now time.Time) (time.Time, int) {
	switch {
	case given["run-at"] && given["run-in"]:
		errorLine(e, "--run-at and --run-in: give one of them")
		return time.Time{}, exitUsage
	case given["run-at"]:
		t, err := time.Parse(time.RFC3339Nano, runAt)
		if err != nil {
			errorLine(e, "--run-at %q: not an RFC 3339 time such as 2026-12-24T18:00:00Z", runAt)
			return time.Time{}, exitUsage
		}
		return t, -1
	case given["run-in"]:
		if runIn < 0 {
			errorLine(e, "--run-in %v: must not be negative", runIn)
			return time.Time{}, exitUsage
		}
		return now.Add(runIn), -1
	}
	return time.Time{}, -1
}

// errInputRequired is a tasks enqueue without --input for a flow whose
// input type cannot be null.
var errInputRequired = errors.New("the flow's input is required")

// inputOptional reports whether the flow registered as flow may be
// enqueued without an input (as null): only when null is a value of its
// input type (a pointer, interface, map or slice). For an int or a
// struct, null would silently be the zero value (fanout would run 0
// items). An unknown flow is left to the enqueue, which refuses it.
func inputOptional(flow string) error {
	t, err := durable.DefaultRegistry.InputType(flow)
	if err != nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return nil
	}
	return fmt.Errorf("tasks enqueue %s: %w (%s): pass --input JSON, or --input - to read it from stdin", flow, errInputRequired, t)
}

func outcome(e env, out string, err error, ok bool) int {
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, out)
	if !ok {
		return exitError
	}
	return exitOK
}

func tasksEnqueue(ctx context.Context, e env, c *durable.Client, flow, input string, o durable.EnqueueOptions) int {
	raw := []byte(input)
	if input == "-" {
		var err error
		if raw, err = io.ReadAll(io.LimitReader(e.stdin, durable.MaxInputBytes+2)); err != nil {
			fmt.Fprintf(e.stderr, "rayflow: reading the input: %v\n", err)
			return exitError
		}
		raw = []byte(strings.TrimRight(string(raw), "\r\n"))
	}
	en, err := c.EnqueueJSONDetail(ctx, flow, raw, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		switch {
		case errors.Is(err, durable.ErrUnknownFlow), errors.Is(err, durable.ErrInvalidInput), errors.Is(err, durable.ErrInputTooLarge),
			errors.Is(err, durable.ErrUnserved):
			return exitRejected
		case errors.Is(err, durable.ErrInvalidOption):
			return exitUsage
		}
		return exitError
	}
	fmt.Fprintln(e.stdout, en.TaskID)
	if en.Duplicate {
		fmt.Fprintf(e.stderr, "rayflow: unique key %q is held: %s is the existing task (%s %s); nothing was enqueued\n",
			o.Unique.Key, en.TaskID, en.Flow, en.State)
	}
	return exitOK
}

// tasksRepair creates the repair task of id and prints its id; a task
// that cannot be repaired (its state) or does not exist is refused with
// exit status 1 and the reason on stderr.
func tasksRepair(ctx context.Context, e env, c *durable.Client, id string) int {
	repair, err := c.Repair(ctx, id)
	if err != nil {
		errorLine(e, "tasks repair: %v", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, repair)
	return exitOK
}

func tasksList(ctx context.Context, e env, c *durable.Client, o durable.ListOptions) int {
	p, err := c.List(ctx, o)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		if errors.Is(err, durable.ErrInvalidOption) || errors.Is(err, durable.ErrBadCursor) {
			return exitUsage
		}
		return exitError
	}
	writeTaskList(e.stdout, p.Tasks)
	if p.Next != "" {
		fmt.Fprintf(e.stderr, "next page: --cursor %s\n", p.Next)
	}
	return exitOK
}

// writeTaskList prints a page of tasks as a table. The KEY column (the
// concurrency key, "-" for none) is there only when a listed task has
// a key, so that a list without keys is printed as it always was.
func writeTaskList(w io.Writer, tasks []*durable.Task) {
	keys := slices.ContainsFunc(tasks, func(t *durable.Task) bool { return t.ConcurrencyKey != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "TASK ID\tSTATE\tFLOW\tQUEUE\tPRIORITY\tATTEMPT\tCREATED"
	if keys {
		header += "\tKEY"
	}
	fmt.Fprintln(tw, header)
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%s", t.ID, t.State, t.Flow, t.Queue, t.Priority, t.Attempt, t.MaxAttempts,
			t.CreatedAt.UTC().Format(time.RFC3339))
		if keys {
			fmt.Fprintf(tw, "\t%s", orDash(t.ConcurrencyKey))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func tasksShow(ctx context.Context, e env, c *durable.Client, id string, asJSON bool) int {
	t, err := c.Get(ctx, id)
	if err != nil {
		fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		return exitError
	}
	if asJSON {
		b, _ := json.MarshalIndent(t, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	line := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", k, v) }
	line("task", t.ID)
	if t.RepairOf != "" {
		line("repair of", t.RepairOf)
	}
	line("flow", t.Flow)
	if t.UniqueKey != "" {
		line("unique key", uniqueLine(t))
	}
	line("state", t.State)
	line("queue / priority", fmt.Sprintf("%s / %d", t.Queue, t.Priority))
	if t.ConcurrencyKey != "" {
		line("concurrency key", strconv.Quote(t.ConcurrencyKey))
	}
	line("attempt", fmt.Sprintf("%d of %d", t.Attempt, t.MaxAttempts))
	line("generation", t.Generation)
	line("run id", orDash(t.RunID))
	line("plan fingerprint", orDash(t.PlanFingerprint))
	if t.PinnedAttempt > 0 {
		line("pinned at attempt", t.PinnedAttempt)
	}
	if t.State == durable.StateQueued && t.PlanFingerprint != "" {
		if w := waitingFor(ctx, c, t); w != "" {
			line("waiting", w)
		}
	}
	if t.State == durable.StateQueued && t.RunAfter.After(time.Now()) {
		line("run after", t.RunAfter.UTC().Format(time.RFC3339Nano))
	}
	line("worker", orDash(t.ClaimedBy))
	if t.Runner != "" {
		line("runner", strings.TrimSpace(t.Runner+" "+t.RayAddress))
	}
	line("created", t.CreatedAt.UTC().Format(time.RFC3339Nano))
	if t.StartedAt != nil {
		line("started", t.StartedAt.UTC().Format(time.RFC3339Nano))
	}
	if t.FinishedAt != nil {
		line("finished", t.FinishedAt.UTC().Format(time.RFC3339Nano))
	}
	if t.CancellationStatus != "" {
		line("cancellation", strings.TrimSpace(t.CancellationStatus+" "+t.CancellationError))
	}
	if t.ErrorMessage != "" {
		line("error", t.ErrorType+": "+t.ErrorMessage)
	}
	if t.Result != nil {
		line("result", string(t.Result))
	}
	tw.Flush()
	if len(t.Attempts) > 0 {
		fmt.Fprintln(e.stdout, "attempts:")
		tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tSTATE\tGENERATION\tRUN ID\tWORKER\tFINISHED\tERROR")
		for _, a := range t.Attempts {
			msg := a.ErrorMessage
			if len(msg) > 80 {
				msg = msg[:77] + "..."
			}
			fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%s\t%s\n", a.Attempt, a.State, a.Generation, orDash(a.RunID), orDash(a.ClaimedBy),
				a.FinishedAt.UTC().Format(time.RFC3339), msg)
		}
		tw.Flush()
	}
	return exitOK
}

// uniqueLine says a task's unique key, its scope and how long it holds
// it: `"k" (flow), while not terminal` or `"k" (global), until T`.
func uniqueLine(t *durable.Task) string {
	scope := "flow"
	if t.UniqueGlobal {
		scope = "global"
	}
	hold := "while not terminal"
	switch {
	case t.UniqueReleased:
		hold = "released (its period ended)"
	case t.UniqueUntil != nil:
		hold = "until " + t.UniqueUntil.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%q (%s), %s", t.UniqueKey, scope, hold)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tasksWait(ctx context.Context, e env, c *durable.Client, id string, timeout time.Duration) int {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	t, err := c.Wait(ctx, id)
	if err != nil {
		switch {
		case t != nil && t.State == durable.StateQueued && t.Attempt > 1 && t.RunAfter.After(time.Now()):
			// a retry waiting out its backoff, not a stuck queue
			fmt.Fprintf(e.stderr, "rayflow: task %s is still QUEUED: attempt %d of %d (after %s %s) starts at %s: %v\n", id, t.Attempt,
				t.MaxAttempts, t.ErrorType, truncateText(t.ErrorMessage, 200), t.RunAfter.UTC().Format(time.RFC3339), err)
		case t != nil:
			fmt.Fprintf(e.stderr, "rayflow: task %s is still %s: %v\n", id, t.State, err)
		default:
			fmt.Fprintf(e.stderr, "rayflow: %v\n", err)
		}
		return exitError
	}
	if t.State != durable.StateSucceeded {
		fmt.Fprintf(e.stderr, "rayflow: task %s ended %s at attempt %d: %s %s\n", id, t.State, t.Attempt, t.ErrorType, t.ErrorMessage)
		return exitError
	}
	fmt.Fprintln(e.stdout, string(t.Result))
	return exitOK
}

// truncateText shortens s to at most n bytes of valid UTF-8, marking a cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// waitingFor says why a queued retry is not claimed (build-aware
// claiming): no live worker on its queue publishes its pinned plan. It
// names the plans they do publish; "" when one publishes the pinned plan
// (or the published flows cannot be read).
func waitingFor(ctx context.Context, c *durable.Client, t *durable.Task) string {
	flows, err := c.Flows(ctx, t.Flow)
	if err != nil {
		return ""
	}
	var others []string
	for _, f := range flows {
		if f.Queue != t.Queue {
			continue
		}
		if f.Fingerprint == t.PlanFingerprint {
			return ""
		}
		others = append(others, f.Fingerprint+" ("+strings.Join(f.Workers, ",")+")")
	}
	if len(others) == 0 {
		return "for a worker that reproduces the pinned plan; no live worker serves " + t.Flow + " on " + t.Queue
	}
	return "for a worker that reproduces the pinned plan; live workers of " + t.Queue + " run " + strings.Join(others, ", ") +
		" (past its queue deadline it fails; rayflow tasks retry --rebuild then re-pins it)"
}
