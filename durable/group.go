package durable

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress/pgstore"
)

// Group commit of terminal transitions. A worker's attempts that end
// within groupWait of each other are recorded by one statement (one round
// trip, one transaction) instead of one each: PostgreSQL builds a
// statement's CHECK expressions, opens its indexes and plans its
// foreign-key checks once per statement and table, which is most of what
// a no-op task costs it. The fencing stays per task: the statement locks
// and changes only the rows whose own fence (task, RUNNING or CANCELLING,
// attempt, generation, run id, and the summary the attempt expects on the
// row) matches, and returns their ids; an attempt whose row did not match
// is then recorded alone by the per-task path (transition), exactly as if
// it had never been grouped — a stale neighbour changes nothing of the
// others, and its own writes (the archive, the final progress
// publication) are those of its row only, so nothing of it lands.
const (
	groupWait = time.Millisecond
	maxGroup  = 64
)

// groupReq is one attempt's terminal transition waiting for its group.
type groupReq struct {
	f           store.Fence
	o           outcome
	sum, expect *string
	finRev      *int64 // the final publication's revision (nil: none)
	done        chan groupResult
}

type groupResult struct {
	matched bool // the transition (and its final publication) committed
	err     error
}

type grouper struct {
	mu      sync.Mutex
	pending []*groupReq
	leader  bool
	sending int
	arrived chan struct{}
}

// groupable returns o's group request, or nil when o must be recorded by
// the per-task path: a fence other than a running attempt's, an outcome
// whose expected summary is unknown, a final publication that is not
// lock-only or a first one.
func groupable(f store.Fence, o outcome) *groupReq {
	if f.RunID == nil || !slices.Equal(f.States, runningStates) {
		return nil
	}
	r := &groupReq{f: f, o: o, done: make(chan groupResult, 1)}
	switch {
	case o.final != nil:
		fin := o.final
		if !fin.Groupable() {
			return nil
		}
		if e := fin.Expect(); e != nil {
			s := string(e)
			r.expect = &s
		}
		if fin.IsTerminal(summary.TerminalState(o.state)) {
			s := string(fin.Summary())
			r.sum = &s
		} else {
			r.sum = envelope(fin.Summary(), o.state)
		}
		rev := fin.Revision()
		r.finRev = &rev
	case o.lastKnown:
		if o.lastSummary != nil {
			s := string(o.lastSummary)
			r.expect = &s
		}
		r.sum = envelope(o.lastSummary, o.state)
	default:
		return nil
	}
	return r
}

// submit records r with whatever other attempts end within groupWait: the
// first to arrive leads, waits for the others (or until every running
// attempt of the worker is in the group) and sends the group.
func (w *Worker) submit(r *groupReq) groupResult {
	g := &w.group
	g.mu.Lock()
	g.pending = append(g.pending, r)
	lead := !g.leader
	g.leader = true
	g.mu.Unlock()
	if !lead {
		signal(g.arrived)
		return <-r.done
	}
	deadline := time.NewTimer(groupWait)
	defer deadline.Stop()
wait:
	for {
		g.mu.Lock()
		n := len(g.pending)
		all := n+g.sending >= w.runningCount()
		g.mu.Unlock()
		if n >= maxGroup || all {
			break
		}
		select {
		case <-g.arrived:
		case <-deadline.C:
			break wait
		}
	}
	w.lead()
	return <-r.done
}

// lead sends the pending requests as groups until none is left; the
// leader role ends when it takes the last of them.
func (w *Worker) lead() {
	g := &w.group
	for {
		g.mu.Lock()
		batch := g.pending
		if len(batch) > maxGroup {
			batch = batch[:maxGroup]
		}
		g.pending = slices.Clone(g.pending[len(batch):])
		// With requests left (over maxGroup) this goroutine stays the
		// leader and sends them next; else the next arrival leads.
		more := len(g.pending) > 0
		g.leader = more
		g.sending += len(batch)
		g.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		res := w.sendGroup(batch)
		g.mu.Lock()
		g.sending -= len(batch)
		g.mu.Unlock()
		for i, q := range batch {
			q.done <- res[i]
		}
		if !more {
			return
		}
	}
}

// sendGroup records batch with one statement; an error is every request's.
func (w *Worker) sendGroup(batch []*groupReq) []groupResult {
	res := make([]groupResult, len(batch))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	matched, err := transitionGroup(ctx, w.pool, batch)
	w.stats.groups.Add(1)
	w.stats.grouped.Add(int64(len(batch)))
	for i, q := range batch {
		res[i] = groupResult{matched: matched[q.f.PK], err: err}
	}
	return res
}

// transitionGroup records the group's terminal transitions (with their
// final progress publications) in one statement and returns the task pks
// whose fence matched: those, and only those, committed (their final
// publications marked committed). A database error records none.
func transitionGroup(ctx context.Context, db DB, batch []*groupReq) (map[int64]bool, error) {
	n := len(batch)
	pks, gens := make([]int64, n), make([]int64, n)
	atts := make([]int32, n)
	runs, states := make([]string, n), make([]string, n)
	retry, first := make([]bool, n), make([]bool, n)
	backoff := make([]float64, n)
	result, et, em, etr, cs, ce, sum, expect := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n),
		make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	finrev := make([]*int64, n)
	var fg pgstore.FinalGroup
	for i, q := range batch {
		f, o := q.f, q.o
		pks[i], atts[i], gens[i], runs[i] = f.PK, int32(f.Attempt), f.Gen, *f.RunID
		states[i], retry[i], backoff[i], result[i] = string(o.state), o.retry, o.backoffSeconds, o.result
		et[i], em[i], etr[i] = nullText(truncate(o.errType, 512)), nullText(truncate(o.errMsg, MaxErrorMessageBytes)), nullText(truncate(o.errTrace, MaxErrorMessageBytes))
		cs[i], ce[i] = nullText(o.cancellation), nullText(truncate(o.cancelErr, 4096))
		sum[i], expect[i], finrev[i] = q.sum, q.expect, q.finRev
		if o.final != nil {
			first[i] = fg.Add(o.final)
		}
	}
	rows, err := store.TransitionGroup(ctx, db, store.GroupTransitions{PKs: pks, Attempts: atts, Gens: gens, RunIDs: runs,
		States: states, Retry: retry, BackoffSeconds: backoff, Results: result, ErrTypes: et, ErrMessages: em,
		ErrTracebacks: etr, Cancellations: cs, CancelErrs: ce, Summaries: sum, Expects: expect, FinalRevisions: finrev,
		First: first}, fg.Store())
	if err != nil {
		return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
	}
	matched := make(map[int64]bool, n)
	for rows.Next() {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
		}
		matched[pk] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("durable: group of %d transitions: %w", n, err)
	}
	for _, q := range batch {
		if matched[q.f.PK] && q.o.final != nil {
			q.o.final.Committed()
		}
	}
	return matched, nil
}
