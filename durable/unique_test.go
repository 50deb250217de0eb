package durable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// TestUniqueOptionBounds: the unique key at its byte cap and one over,
// control characters, periods that are not whole seconds, and a scope
// without a key, each refused with an *OptionError naming its field.
func TestUniqueOptionBounds(t *testing.T) {
	for _, c := range []struct {
		name   string
		u      Unique
		option string // "" when accepted
	}{
		{"none", Unique{}, ""},
		{"one byte", Unique{Key: "k"}, ""},
		{"200 bytes", Unique{Key: strings.Repeat("k", MaxUniqueKeyBytes)}, ""},
		{"200 bytes of 2-byte characters", Unique{Key: strings.Repeat("é", MaxUniqueKeyBytes/2)}, ""},
		{"201 bytes", Unique{Key: strings.Repeat("k", MaxUniqueKeyBytes+1)}, "Unique.Key"},
		{"201 bytes, the last character split", Unique{Key: strings.Repeat("é", MaxUniqueKeyBytes/2) + "k"}, "Unique.Key"},
		{"newline", Unique{Key: "a\nb"}, "Unique.Key"},
		{"NUL", Unique{Key: "a\x00"}, "Unique.Key"},
		{"invalid UTF-8", Unique{Key: "a\xff"}, "Unique.Key"},
		{"global", Unique{Key: "k", Global: true}, ""},
		{"global without a key", Unique{Global: true}, "Unique.Key"},
		{"period without a key", Unique{For: time.Hour}, "Unique.Key"},
		{"period 1 s", Unique{Key: "k", For: time.Second}, ""},
		{"period at the cap", Unique{Key: "k", For: MaxTimeoutSeconds * time.Second}, ""},
		{"period one over the cap", Unique{Key: "k", For: (MaxTimeoutSeconds + 1) * time.Second}, "Unique.For"},
		{"period 1.5 s", Unique{Key: "k", For: 1500 * time.Millisecond}, "Unique.For"},
		{"period 0.999 s", Unique{Key: "k", For: 999 * time.Millisecond}, "Unique.For"},
		{"negative period", Unique{Key: "k", For: -time.Second}, "Unique.For"},
	} {
		_, err := EnqueueOptions{Unique: c.u}.normalize()
		var oe *OptionError
		switch {
		case c.option == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.option != "" && (!errors.As(err, &oe) || oe.Option != c.option || !errors.Is(err, ErrInvalidOption)):
			t.Errorf("%s: %v, want an OptionError naming %s", c.name, err, c.option)
		}
	}
}

func (e *env) enqueueDetail(flow, input string, o EnqueueOptions) Enqueued {
	e.t.Helper()
	en, err := e.c.EnqueueJSONDetail(e.t.Context(), flow, []byte(input), o)
	if err != nil {
		e.t.Fatalf("enqueue %s %s: %v", flow, input, err)
	}
	return en
}

// later keeps a task QUEUED for the test's length (no worker runs).
var later = time.Now().Add(24 * time.Hour)

// TestUniqueConcurrentEnqueues: 8 goroutines enqueue the same key at
// once, round after round: each round makes one task and every
// goroutine gets its id, exactly one of them as new.
func TestUniqueConcurrentEnqueues(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const rounds, n = 10, 8
	for round := range rounds {
		key := fmt.Sprintf("round-%d", round)
		o := EnqueueOptions{RunAfter: later, Unique: Unique{Key: key}}
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([]Enqueued, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = e.c.EnqueueJSONDetail(ctx, "test.noop", []byte(fmt.Sprint(i)), o)
			}()
		}
		close(start)
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d, enqueue %d: %v", round, i, errs[i])
			}
			if got[i].TaskID != got[0].TaskID {
				t.Fatalf("round %d: enqueue %d got %s, enqueue 0 got %s", round, i, got[i].TaskID, got[0].TaskID)
			}
			if !got[i].Duplicate {
				created++
			}
		}
		if created != 1 {
			t.Errorf("round %d: %d enqueues say they created the task, want 1", round, created)
		}
		if rows := e.count(`SELECT count(*) FROM rayflow_tasks WHERE unique_key = $1`, key); rows != 1 {
			t.Errorf("round %d: %d tasks hold the key, want 1", round, rows)
		}
	}
}

// TestUniqueScopes: a key is per flow unless global, and global keys are
// separate from per-flow ones.
func TestUniqueScopes(t *testing.T) {
	e := newEnv(t)
	base := EnqueueOptions{RunAfter: later}
	with := func(u Unique) EnqueueOptions { o := base; o.Unique = u; return o }
	noop := e.enqueueDetail("test.noop", `1`, with(Unique{Key: "k"}))
	steps := []struct {
		name, flow, input string
		u                 Unique
		dupOf             *Enqueued // nil: a new task
	}{
		{"same flow, same key", "test.noop", `2`, Unique{Key: "k"}, &noop},
		{"another flow, same key", "test.echo", `{"name":"a"}`, Unique{Key: "k"}, nil},
		{"same flow, another key", "test.noop", `3`, Unique{Key: "k2"}, nil},
		{"global, same key as a per-flow one", "test.noop", `4`, Unique{Key: "k", Global: true}, nil},
	}
	for _, s := range steps {
		got := e.enqueueDetail(s.flow, s.input, with(s.u))
		if s.dupOf == nil && got.Duplicate || s.dupOf != nil && (!got.Duplicate || got.TaskID != s.dupOf.TaskID) {
			t.Errorf("%s: %+v, want duplicate of %v", s.name, got, s.dupOf)
		}
	}
	// A global key is held across flows: the echo enqueue gets the noop
	// task, with the holder's flow and state.
	global := e.enqueueDetail("test.echo", `{"name":"b"}`, with(Unique{Key: "g", Global: true}))
	dup := e.enqueueDetail("test.noop", `5`, with(Unique{Key: "g", Global: true}))
	if !dup.Duplicate || dup.TaskID != global.TaskID || dup.Flow != "test.echo" || dup.State != StateQueued {
		t.Errorf("global duplicate from another flow: %+v, want the holder %s of test.echo", dup, global.TaskID)
	}
	task, err := e.c.Get(t.Context(), global.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.UniqueKey != "g" || !task.UniqueGlobal || task.UniqueUntil != nil {
		t.Errorf("task record: key %q global %v until %v", task.UniqueKey, task.UniqueGlobal, task.UniqueUntil)
	}
	if n := e.count(`SELECT count(*) FROM rayflow_tasks`); n != 5 {
		t.Errorf("%d tasks, want 5", n)
	}
}

// TestUniqueKeyFreesWhenTerminal: a key held while not terminal is free
// once its task ends; retrying that task while another holds the key is
// refused with a *UniqueHeldError, accepted once the holder ended.
func TestUniqueKeyFreesWhenTerminal(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	o := EnqueueOptions{RunAfter: later, Unique: Unique{Key: "report-7"}}
	first := e.enqueueDetail("test.noop", `1`, o)
	if dup := e.enqueueDetail("test.noop", `1`, o); !dup.Duplicate || dup.TaskID != first.TaskID {
		t.Fatalf("while queued: %+v, want the duplicate of %s", dup, first.TaskID)
	}
	if out, err := e.c.Cancel(ctx, first.TaskID, Expect{}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel: %s %v", out, err)
	}
	second := e.enqueueDetail("test.noop", `1`, o)
	if second.Duplicate || second.TaskID == first.TaskID {
		t.Fatalf("after the holder was cancelled: %+v, want a new task", second)
	}
	out, err := e.c.Retry(ctx, first.TaskID, Expect{})
	var held *UniqueHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrUniqueHeld) || held.Holder != second.TaskID || held.Key != "report-7" || held.TaskID != first.TaskID {
		t.Fatalf("retry while another task holds the key: %q %v, want a UniqueHeldError naming %s", out, err, second.TaskID)
	}
	if task, _ := e.c.Get(ctx, first.TaskID); task.State != StateCancelled || task.Attempt != 1 {
		t.Fatalf("the refused retry changed the task: %s at %d", task.State, task.Attempt)
	}
	if out, err := e.c.Cancel(ctx, second.TaskID, Expect{}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel the second: %s %v", out, err)
	}
	if out, err := e.c.Retry(ctx, first.TaskID, Expect{}); err != nil || out != RetryAccepted {
		t.Fatalf("retry once the key is free: %s %v", out, err)
	}
	if dup := e.enqueueDetail("test.noop", `1`, o); !dup.Duplicate || dup.TaskID != first.TaskID {
		t.Fatalf("after the retry: %+v, want the retried %s", dup, first.TaskID)
	}
	// A task that runs to SUCCEEDED frees its key too.
	e.startWorker(fastOptions())
	runO := EnqueueOptions{Unique: Unique{Key: "run"}}
	ran := e.enqueueDetail("test.noop", fmt.Sprint(ownInputs(t, 1)), runO)
	if task := e.wait(ran.TaskID, 20*time.Second); task.State != StateSucceeded {
		t.Fatalf("%s", task.State)
	}
	if again := e.enqueueDetail("test.noop", `1`, runO); again.Duplicate {
		t.Fatalf("after SUCCEEDED: %+v, want a new task", again)
	}
}

// TestUniquePeriod: a key held for a period holds through its task's
// end; once the period passed, the next enqueue releases it and creates
// a task (the period's end is moved into the past rather than waited
// for).
func TestUniquePeriod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	o := EnqueueOptions{RunAfter: later, Unique: Unique{Key: "daily", For: time.Hour}}
	first := e.enqueueDetail("test.noop", `1`, o)
	task, err := e.c.Get(ctx, first.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.UniqueUntil == nil || task.UniqueUntil.Sub(task.EnqueuedAt) != time.Hour {
		t.Fatalf("unique until %v, enqueued at %v: want an hour later", task.UniqueUntil, task.EnqueuedAt)
	}
	if out, err := e.c.Cancel(ctx, first.TaskID, Expect{}); err != nil || out != CancelAccepted {
		t.Fatalf("cancel: %s %v", out, err)
	}
	if dup := e.enqueueDetail("test.noop", `2`, o); !dup.Duplicate || dup.TaskID != first.TaskID || dup.State != StateCancelled {
		t.Fatalf("within the period, after the holder ended: %+v, want the duplicate of %s", dup, first.TaskID)
	}
	// A hold while not terminal does not take a held period key either.
	if dup := e.enqueueDetail("test.noop", `3`, EnqueueOptions{RunAfter: later, Unique: Unique{Key: "daily"}}); !dup.Duplicate {
		t.Fatalf("a not-terminal hold of a key held for a period: %+v, want the duplicate", dup)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE rayflow_tasks SET unique_until = now() - interval '1 second' WHERE task_id = $1`, first.TaskID); err != nil {
		t.Fatal(err)
	}
	second := e.enqueueDetail("test.noop", `4`, o)
	if second.Duplicate || second.TaskID == first.TaskID {
		t.Fatalf("after the period: %+v, want a new task", second)
	}
	if task, _ := e.c.Get(ctx, first.TaskID); !task.UniqueReleased {
		t.Error("the expired holder was not marked released")
	}
	if dup := e.enqueueDetail("test.noop", `5`, o); !dup.Duplicate || dup.TaskID != second.TaskID {
		t.Fatalf("within the second period: %+v, want the duplicate of %s", dup, second.TaskID)
	}
	// A retried expired holder does not take the key back.
	if out, err := e.c.Retry(ctx, first.TaskID, Expect{}); err != nil || out != RetryAccepted {
		t.Fatalf("retry of the released holder: %s %v", out, err)
	}
	if dup := e.enqueueDetail("test.noop", `6`, o); dup.TaskID != second.TaskID {
		t.Fatalf("after the released holder's retry: %+v, want the duplicate of %s", dup, second.TaskID)
	}
}

// TestUniqueInsideEnqueueTx: a unique enqueue follows the caller's
// transaction: rolled back, it holds nothing; a second enqueue of the key
// in the same transaction gets the first; a concurrent enqueue waits for
// the transaction and then gets its task (commit) or makes its own
// (rollback).
func TestUniqueInsideEnqueueTx(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	o := EnqueueOptions{RunAfter: later, Unique: Unique{Key: "tx"}}
	for _, commit := range []bool{false, true} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			_, _ = e.pool.Exec(ctx, `DELETE FROM rayflow_tasks`)
			tx, err := e.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			in, err := EnqueueTxDetail(ctx, e.c, tx, EchoFlow, EchoIn{"1"}, o)
			if err != nil || in.Duplicate {
				t.Fatalf("in the transaction: %+v %v", in, err)
			}
			if again, err := e.c.EnqueueJSONTxDetail(ctx, tx, "test.echo", []byte(`{"name":"2"}`), o); err != nil || !again.Duplicate || again.TaskID != in.TaskID {
				t.Fatalf("again in the transaction: %+v %v, want the duplicate of %s", again, err, in.TaskID)
			}
			type answer struct {
				e   Enqueued
				err error
			}
			outside := make(chan answer, 1)
			go func() {
				en, err := e.c.EnqueueJSONDetail(ctx, "test.echo", []byte(`{"name":"3"}`), o)
				outside <- answer{en, err}
			}()
			// The concurrent enqueue waits on the transaction's row.
			waitBlocked(t, e)
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			a := <-outside
			switch {
			case a.err != nil:
				t.Fatal(a.err)
			case commit && (!a.e.Duplicate || a.e.TaskID != in.TaskID):
				t.Fatalf("after commit: %+v, want the duplicate of %s", a.e, in.TaskID)
			case !commit && (a.e.Duplicate || a.e.TaskID == in.TaskID):
				t.Fatalf("after rollback: %+v, want a new task", a.e)
			}
			if n := e.count(`SELECT count(*) FROM rayflow_tasks WHERE unique_key = 'tx'`); n != 1 {
				t.Fatalf("%d tasks hold the key, want 1", n)
			}
		})
	}
}

// waitBlocked waits until some session of the test's database waits for
// a lock (the concurrent enqueue behind the transaction's row).
func waitBlocked(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		n := e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no enqueue waited for the transaction")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// FuzzUniqueCheck: Unique.Check accepts exactly the keys of 1 to
// MaxUniqueKeyBytes bytes of UTF-8 without control characters, and
// whatever it refuses is an *OptionError matching ErrInvalidOption.
func FuzzUniqueCheck(f *testing.F) {
	for _, s := range []string{"", "k", strings.Repeat("k", MaxUniqueKeyBytes), strings.Repeat("k", MaxUniqueKeyBytes+1), "a\nb", "a\xff", "é"} {
		f.Add(s, false, int64(0))
		f.Add(s, true, int64(3600))
	}
	f.Fuzz(func(t *testing.T, key string, global bool, seconds int64) {
		if seconds < -1<<33 || seconds > 1<<33 {
			t.Skip("a Duration of that many seconds overflows")
		}
		u := Unique{Key: key, Global: global, For: time.Duration(seconds) * time.Second}
		err := u.Check()
		wantOK := (key == "" && !global && seconds == 0) ||
			(key != "" && len(key) <= MaxUniqueKeyBytes && utf8.ValidString(key) && !strings.ContainsFunc(key, unicode.IsControl) &&
				seconds >= 0 && seconds <= MaxTimeoutSeconds)
		if (err == nil) != wantOK {
			t.Fatalf("Check(%q, global %v, %d s) = %v, want ok %v", key, global, seconds, err, wantOK)
		}
		var oe *OptionError
		if err != nil && (!errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption)) {
			t.Fatalf("Check(%q) = %v, not an OptionError", key, err)
		}
	})
}
