package durable

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress/pgstore"
)

// runningStates are a running attempt's states in its store.Fence (every
// write of an attempt matches all of its fence; a superseded attempt's
// writes change 0 rows).
var runningStates = []string{string(StateRunning), string(StateCancelling)}

// outcome ends an attempt: the attempt is archived with state; the task
// becomes state, or QUEUED as the next attempt when retry is set.
type outcome struct {
	state          State
	retry          bool
	backoffSeconds float64
	result         *string
	errType        string
	errMsg         string
	errTrace       string
	cancellation   string // "" keeps the task's cancellation status
	cancelErr      string
	// lastKnown says lastSummary is the progress summary the caller
	// expects the task row to hold (nil: none); the transition then
	// derives the terminal summary from it and checks it under the fence
	// in the same statement, instead of reading the row first.
	lastKnown   bool
	lastSummary []byte
	// final is the run's deferred final progress publication: when set,
	// the transition is sent in the same batch after it (one round trip,
	// one transaction), expecting its summary on the row. When that fails
	// for any reason the transition is retried without it.
	final *pgstore.FinalWrites
}

// transition ends the fenced attempt; it returns the rows changed (0 when
// the fence no longer matches).
//
// When the caller knows the row's summary (o.lastKnown: a worker without
// progress storage expects none) this is one statement; when the row
// holds another summary, or the fence is gone, it falls back to reading
// the summary under the fence first.
func transition(ctx context.Context, db DB, f store.Fence, o outcome) (int64, error) {
	if sb, ok := db.(batcher); ok && o.final != nil {
		if n, err := transitionWithFinal(ctx, sb, f, o); err == nil {
			return n, nil
		}
	}
	if o.lastKnown {
		var expect *string
		if o.lastSummary != nil {
			s := string(o.lastSummary)
			expect = &s
		}
		n, err := transitionExec(ctx, db, f, o, envelope(o.lastSummary, o.state), expect, true)
		if err != nil || n > 0 {
			return n, err
		}
	}
	return transitionExec(ctx, db, f, o, terminalSummary(ctx, db, f, o.state), nil, false)
}

// transitionWithFinal sends the run's final publication and the
// transition in one batch (one implicit transaction): both land or
// neither. The publication locks the task row; the transition checks the
// row still holds the summary before the final one and stores the terminal
// summary derived from the final one (the run's own when the states
// agree); it
// returns 1, or an error (the fence is gone, the task is CANCELLING, or a
// statement failed) after which nothing was written.
func transitionWithFinal(ctx context.Context, db batcher, f store.Fence, o outcome) (int64, error) {
	fin := o.final
	var expect *string
	if e := fin.Expect(); e != nil {
		s := string(e)
		expect = &s
	}
	var sum *string
	if fin.IsTerminal(summary.TerminalState(o.state)) {
		s := string(fin.Summary())
		sum = &s // the run's own terminal summary, kept byte for byte
	} else {
		sum = envelope(fin.Summary(), o.state)
	}
	b := fin.Batch()
	store.QueueTransitionFenced(b, f, storeOutcome(o, sum, expect, true))
	br := db.SendBatch(ctx, b)
	var err error
	for i := 0; err == nil && i < b.Len(); i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("durable: %s transition of task %d with its final progress: %w", o.state, f.PK, err)
	}
	fin.Committed()
	return 1, nil
}

// batcher sends pipelined batches (a pool, a connection, a transaction).
type batcher = store.Batcher

func storeOutcome(o outcome, sum, expect *string, check bool) store.Outcome {
	return store.Outcome{State: string(o.state), Retry: o.retry, BackoffSeconds: o.backoffSeconds, Result: o.result,
		ErrType: nullText(truncate(o.errType, 512)), ErrMessage: nullText(truncate(o.errMsg, MaxErrorMessageBytes)),
		ErrTraceback: nullText(truncate(o.errTrace, MaxErrorMessageBytes)), Cancellation: nullText(o.cancellation),
		CancelErr: nullText(truncate(o.cancelErr, 4096)), Summary: sum, Expect: expect, Check: check}
}

func transitionExec(ctx context.Context, db DB, f store.Fence, o outcome, sum, expect *string, check bool) (int64, error) {
	tag, err := store.Transition(ctx, db, f, storeOutcome(o, sum, expect, check))
	if err != nil {
		return 0, fmt.Errorf("durable: %s transition of task %d: %w", o.state, f.PK, err)
	}
	return tag.RowsAffected(), nil
}

// terminalSummary is the progress summary archived with a terminal
// transition (docs/contracts.md#publication): the run's own terminal summary, or one
// derived from its last accepted summary; nil when the run published
// none (or it cannot be read: the transition must still land).
func terminalSummary(ctx context.Context, db DB, f store.Fence, state State) *string {
	last, err := store.TaskSummary(ctx, db, f)
	if err != nil || last == nil {
		return nil
	}
	return envelope([]byte(*last), state)
}

// envelope is the terminal summary derived from last (nil for none, or
// when it cannot be derived: the transition must still land).
func envelope(last []byte, state State) *string {
	if last == nil {
		return nil
	}
	b, err := pgstore.TerminalEnvelope(last, summary.TerminalState(state), time.Now())
	if err != nil || b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…[truncated]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + mark
}

// heartbeatOnce refreshes the fenced attempt's heartbeat and returns the
// task's state; pgx.ErrNoRows when the fence no longer matches.
func heartbeatOnce(ctx context.Context, db DB, f store.Fence) (State, error) {
	s, err := store.Heartbeat(ctx, db, f)
	return State(s), err
}

// pinPlan records the first materialization's plan under the fence
// (when the claim could not: the flow was registered after it); 0 rows
// when the fence no longer matches or a pin exists.
func pinPlan(ctx context.Context, db DB, f store.Fence, fingerprint string, selection *string) (int64, error) {
	tag, err := store.PinPlan(ctx, db, f, fingerprint, selection)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// claimTasks claims up to n QUEUED tasks of queue for worker, each as a
// new attempt (new generation and run id), in claim order.
//
// The claim also pins the plan of a task that has none, from pins (the
// worker's own materialization of each registered flow): the first
// materialization pins without a statement of its own.
func claimTasks(ctx context.Context, db DB, queue string, n int, worker, runner, rayAddress string, pins []planPin) ([]claimed, error) {
	got, _, err := claimChecking(ctx, db, queue, n, worker, runner, rayAddress, pins, false, &claimMode{})
	return got, err
}

// claimMode is a claimer's view of its queue: whether its claims must be
// keyed (the queue has limits or keyed tasks: store.Claim) and the last
// key it served (where its next keyed claim's round starts).
type claimMode struct {
	keyed  bool
	cursor string
	// nextToken is, after a keyed claim of a queue with a start rate, the
	// time until its bucket holds a token again (0: it holds one, or the
	// queue has no rate).
	nextToken time.Duration
	// limited says that the last keyed claim met keys at their running
	// limit: a task of theirs that ends lets them start another.
	limited bool
}

// claimChecking is claimTasks; with checkOrphans it also reports whether
// some running task's worker session ended (in the same statement). It
// claims as mode says and updates mode from the claim's answer: a plain
// claim that finds the queue has limits or keyed tasks is followed at
// once by a keyed claim for the rest of n.
func claimChecking(ctx context.Context, db DB, queue string, n int, worker, runner, rayAddress string, pins []planPin,
	checkOrphans bool, mode *claimMode) ([]claimed, bool, error) {
	var ray *string
	if rayAddress != "" {
		ray = &rayAddress
	}
	flows, fps, sels := make([]string, len(pins)), make([]string, len(pins)), make([]string, len(pins))
	for i, p := range pins {
		flows[i], fps[i], sels[i] = p.flow, p.fingerprint, p.selection
	}
	type ordered struct {
		c        claimed
		priority int
		created  time.Time
	}
	var got []ordered
	orphans := false
	for round := 0; round < 2 && len(got) < n; round++ {
		keyed := mode.keyed
		rows, err := store.ClaimTasks(ctx, db, store.Claim{Queue: queue, N: n - len(got), Worker: worker, Runner: runner, RayAddress: ray,
			Flows: flows, Fingerprints: fps, Selections: sels, CheckOrphans: checkOrphans && round == 0, Keyed: keyed, Cursor: mode.cursor})
		if err != nil {
			return nil, false, err
		}
		for rows.Next() {
			var o ordered
			var input, key string
			var timeout int64
			var waited float64
			c := &o.c
			if err := rows.Scan(&c.pk, &c.id, &c.flow, &c.attempt, &c.maxAttempts, &c.gen, &c.runID, &input, &timeout,
				&c.pinnedFP, &c.pinnedAttempt, &o.priority, &o.created, &waited, &key); err != nil {
				rows.Close()
				return nil, false, err
			}
			switch c.pk {
			case 0: // the orphan marker
				orphans = true
				continue
			case -1, -2: // the queue's claims must be keyed, or need not be
				mode.keyed = c.pk == -1
				if keyed {
					mode.limited = c.attempt > 0
					mode.nextToken = time.Duration(waited * float64(time.Second))
					if key != "" {
						mode.cursor = key
					}
				}
				continue
			}
			c.input, c.timeout, c.waited = []byte(input), time.Duration(timeout)*time.Second, time.Duration(waited*float64(time.Second))
			got = append(got, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
		if keyed || !mode.keyed {
			break // a keyed claim took what it could; a plain one, of an unmanaged queue, too
		}
	}
	// RETURNING has no order: priority first, then age.
	sort.SliceStable(got, func(i, j int) bool {
		if got[i].priority != got[j].priority {
			return got[i].priority > got[j].priority
		}
		return got[i].created.Before(got[j].created)
	})
	out := make([]claimed, len(got))
	for i, g := range got {
		out[i] = g.c
	}
	return out, orphans, nil
}

// fence is the claimed attempt's fence.
func (c claimed) fence() store.Fence {
	return store.Fence{PK: c.pk, States: runningStates, Attempt: c.attempt, Gen: c.gen, RunID: &c.runID}
}

// planPin is a registered flow's plan as this worker materializes it.
type planPin struct {
	flow, fingerprint, selection string
	plan                         []byte
}

// storePlan records a plan's canonical JSON once per fingerprint.
func storePlan(ctx context.Context, db DB, fingerprint string, plan []byte) error {
	return store.StorePlan(ctx, db, fingerprint, string(plan))
}
