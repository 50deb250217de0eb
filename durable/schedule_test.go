package durable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/cron"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/internal/testwait"
)

func mustParsed(t *testing.T, spec, zone string) parsedSchedule {
	t.Helper()
	s, err := cron.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := loadZone(zone)
	if err != nil {
		t.Fatal(err)
	}
	return parsedSchedule{spec: s, loc: loc}
}

// TestDueTicks checks the missed tick policies, the catch-up bound at
// MaxCatchUp missed ticks and one over.
func TestDueTicks(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hourly := mustParsed(t, "@every 1h", "UTC")
	cronHourly := mustParsed(t, "0 * * * *", "UTC")
	cases := []struct {
		name       string
		p          parsedSchedule
		policy     MissedPolicy
		now        time.Time
		wantN      int
		wantFirst  time.Time
		wantAfter  time.Time
		wantLatest time.Time
	}{
		{"on time", hourly, MissedSkip, base.Add(time.Second), 1, base, base.Add(time.Hour), base},
		{"skip fires the first missed once", hourly, MissedSkip, base.Add(5*time.Hour + time.Minute), 1, base, base.Add(6 * time.Hour), base},
		{"skip cron", cronHourly, MissedSkip, base.Add(5*time.Hour + time.Minute), 1, base, base.Add(6 * time.Hour), base},
		{"catch-up fires each", hourly, MissedCatchUp, base.Add(2*time.Hour + time.Minute), 3, base, base.Add(3 * time.Hour), base.Add(2 * time.Hour)},
		{"catch-up at the bound", hourly, MissedCatchUp, base.Add((MaxCatchUp-1)*time.Hour + time.Minute), MaxCatchUp, base,
			base.Add(MaxCatchUp * time.Hour), base.Add((MaxCatchUp - 1) * time.Hour)},
		{"catch-up one over the bound drops the oldest", hourly, MissedCatchUp, base.Add(MaxCatchUp*time.Hour + time.Minute), MaxCatchUp,
			base.Add(time.Hour), base.Add((MaxCatchUp + 1) * time.Hour), base.Add(MaxCatchUp * time.Hour)},
		{"cron catch-up at the bound", cronHourly, MissedCatchUp, base.Add((MaxCatchUp-1)*time.Hour + time.Minute), MaxCatchUp, base,
			base.Add(MaxCatchUp * time.Hour), base.Add((MaxCatchUp - 1) * time.Hour)},
		{"cron catch-up one over the bound", cronHourly, MissedCatchUp, base.Add(MaxCatchUp*time.Hour + time.Minute), MaxCatchUp,
			base.Add(time.Hour), base.Add((MaxCatchUp + 1) * time.Hour), base.Add(MaxCatchUp * time.Hour)},
		{"tick exactly now is due", hourly, MissedCatchUp, base.Add(time.Hour), 2, base, base.Add(2 * time.Hour), base.Add(time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fire, after := dueTicks(c.p, c.policy, base, c.now)
			if len(fire) != c.wantN || !fire[0].Equal(c.wantFirst) || !fire[len(fire)-1].Equal(c.wantLatest) || !after.Equal(c.wantAfter) {
				t.Fatalf("got %d ticks %v…%v, next %v; want %d %v…%v, next %v", len(fire), fire[0], fire[len(fire)-1], after,
					c.wantN, c.wantFirst, c.wantLatest, c.wantAfter)
			}
			for i := 1; i < len(fire); i++ {
				if !fire[i].After(fire[i-1]) {
					t.Fatalf("ticks out of order at %d: %v", i, fire)
				}
			}
		})
	}
}

func TestScheduleFieldChecks(t *testing.T) {
	ok := Schedule{Name: "s", Flow: "test.echo", Input: []byte(`{"name":"x"}`), Cron: "* * * * *"}
	cases := []struct {
		name  string
		edit  func(*Schedule)
		field string
	}{
		{"name at the cap", func(s *Schedule) { s.Name = strings.Repeat("é", MaxScheduleNameLen) }, ""},
		{"name one over", func(s *Schedule) { s.Name = strings.Repeat("é", MaxScheduleNameLen+1) }, "Name"},
		{"empty name", func(s *Schedule) { s.Name = "" }, "Name"},
		{"control character", func(s *Schedule) { s.Name = "a\nb" }, "Name"},
		{"queue", func(s *Schedule) { s.Queue = strings.Repeat("q", MaxQueueNameLen+1) }, "Queue"},
		{"cron", func(s *Schedule) { s.Cron = "61 * * * *" }, "Cron"},
		{"zone", func(s *Schedule) { s.TimeZone = "Mars/Olympus" }, "TimeZone"},
		{"local zone", func(s *Schedule) { s.TimeZone = "Local" }, "TimeZone"},
		{"zone ok", func(s *Schedule) { s.TimeZone = "Europe/Berlin" }, ""},
		{"missed", func(s *Schedule) { s.Missed = "sometimes" }, "Missed"},
		{"catch-up", func(s *Schedule) { s.Missed = MissedCatchUp }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			_, _, err := s.normalize()
			var se *ScheduleError
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && (!errors.As(err, &se) || se.Field != c.field || !errors.Is(err, ErrInvalidOption)):
				t.Fatalf("got %v, want a *ScheduleError of %s matching ErrInvalidOption", err, c.field)
			}
		})
	}
}

// addSchedule adds s or fails the test.
func (e *env) addSchedule(s Schedule) Schedule {
	e.t.Helper()
	out, err := e.c.AddSchedule(e.t.Context(), s)
	if err != nil {
		e.t.Fatalf("add schedule %s: %v", s.Name, err)
	}
	return out
}

func TestScheduleAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := e.addSchedule(Schedule{Name: "nightly", Flow: "test.echo", Input: []byte(`{"name":"n"}`), Cron: "30 2 * * *", TimeZone: "Europe/Berlin"})
	if s.Queue != DefaultQueue || s.Missed != MissedSkip || s.NextFireAt.IsZero() {
		t.Fatalf("defaults not filled: %+v", s)
	}
	if l := s.NextFireAt.In(mustParsed(t, "@daily", "Europe/Berlin").loc); l.Hour() != 2 && l.Hour() != 3 || l.Minute() != 30 && l.Minute() != 0 {
		t.Fatalf("next fire at %v", l)
	}
	_, err := e.c.AddSchedule(ctx, Schedule{Name: "nightly", Flow: "test.echo", Input: []byte(`{"name":"n"}`), Cron: "@daily"})
	if !errors.Is(err, ErrScheduleExists) {
		t.Fatalf("second add: %v, want ErrScheduleExists", err)
	}
	refusals := []struct {
		s     Schedule
		field string
		is    error
	}{
		{Schedule{Name: "x", Flow: "no.such.flow", Cron: "@daily"}, "Flow", ErrUnknownFlow},
		{Schedule{Name: "x", Flow: "test.echo", Input: []byte(`{"name":1}`), Cron: "@daily"}, "Input", ErrInvalidInput},
		{Schedule{Name: "x", Flow: "test.echo", Input: []byte(`{`), Cron: "@daily"}, "Input", ErrInvalidInput},
		{Schedule{Name: "x", Flow: "test.echo", Cron: "@sometimes"}, "Cron", ErrInvalidOption},
	}
	for _, r := range refusals {
		_, err := e.c.AddSchedule(ctx, r.s)
		var se *ScheduleError
		if !errors.As(err, &se) || se.Field != r.field || !errors.Is(err, r.is) {
			t.Errorf("add %+v: %v, want a *ScheduleError of %s matching %v", r.s, err, r.field, r.is)
		}
	}
	list, err := e.c.Schedules(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "nightly" || string(list[0].Input) != `{"name":"n"}` || list[0].TimeZone != "Europe/Berlin" {
		t.Fatalf("Schedules = %+v, %v", list, err)
	}
	if err := e.c.RemoveSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.RemoveSchedule(ctx, "nightly"); !errors.Is(err, ErrUnknownSchedule) {
		t.Fatalf("second remove: %v, want ErrUnknownSchedule", err)
	}
}

// scheduledTicks are the ticks of schedule's tasks, in order.
func (e *env) scheduledTicks(schedule string) []time.Time {
	e.t.Helper()
	rows, err := e.pool.Query(e.t.Context(), `SELECT schedule_tick FROM rayflow_tasks WHERE schedule_name = $1 ORDER BY schedule_tick`, schedule)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var tick time.Time
		if err := rows.Scan(&tick); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, tick)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// waitTicks waits until schedule has fired at least n ticks.
func (e *env) waitTicks(schedule string, n int, within time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), within)
	defer cancel()
	err := testwait.Poll(ctx, 20*time.Millisecond, fmt.Sprintf("%d ticks of %s", n, schedule), func(ctx context.Context) (bool, error) {
		var got int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM rayflow_tasks WHERE schedule_name = $1`, schedule).Scan(&got)
		return got >= n, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// checkConsecutive fails unless ticks are every's consecutive ticks.
func checkConsecutive(t *testing.T, ticks []time.Time, every time.Duration) {
	t.Helper()
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]); d != every {
			t.Fatalf("ticks %d and %d are %v apart, want %v (duplicate or missed): %v", i-1, i, d, every, ticks)
		}
	}
}

// schedulerPID is the server pid of the session holding the scheduler
// lease (0 for none).
func (e *env) schedulerPID() int {
	e.t.Helper()
	return e.count(`SELECT coalesce((SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
 AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid), 0)`, store.SchedulerLockKey)
}

// Three workers fire an @every 1s schedule: each tick once, none missed.
func TestScheduleFiresOncePerTickWithSeveralWorkers(t *testing.T) {
	e := newEnv(t)
	var stops []func()
	for range 3 {
		stops = append(stops, runWorker(t, e.pool, fastOptions()))
	}
	e.addSchedule(Schedule{Name: "each-second", Flow: "test.noop", Input: []byte(`1`), Cron: "@every 1s", Missed: MissedCatchUp})
	e.waitTicks("each-second", 4, 30*time.Second)
	for _, stop := range stops {
		stop()
	}
	ticks := e.scheduledTicks("each-second")
	checkConsecutive(t, ticks, time.Second)
	var fired int
	if err := e.pool.QueryRow(t.Context(), `SELECT fired_ticks FROM rayflow_schedules WHERE name = 'each-second'`).Scan(&fired); err != nil {
		t.Fatal(err)
	}
	if fired != len(ticks) {
		t.Fatalf("fired_ticks %d, %d tasks", fired, len(ticks))
	}
}

// The lease holder's session ends (its connection is closed by the
// server, as when its process dies) and then its worker stops: another
// worker takes the lease each time; no tick is missed or fired twice.
func TestScheduleLeaseHandOver(t *testing.T) {
	e := newEnv(t)
	o := fastOptions()
	a, stopA := runWorkerW(t, e.pool, o)
	b, stopB := runWorkerW(t, e.pool, o)
	e.addSchedule(Schedule{Name: "hand-over", Flow: "test.noop", Input: []byte(`1`), Cron: "@every 1s", Missed: MissedCatchUp})
	e.waitTicks("hand-over", 2, 30*time.Second)
	pid := e.schedulerPID()
	if pid == 0 {
		t.Fatal("no session holds the scheduler lease")
	}
	if _, err := e.pool.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	n := len(e.scheduledTicks("hand-over"))
	e.waitTicks("hand-over", n+2, 30*time.Second)
	if now := e.schedulerPID(); now == pid || now == 0 {
		t.Fatalf("the lease holder is %d after %d was terminated", now, pid)
	}
	// Stop the worker now holding the lease: the other takes it.
	leader, stop := a, stopA
	if !a.leading.Load() {
		leader, stop = b, stopB
	}
	stop()
	if leader.leading.Load() {
		t.Fatal("a stopped worker still leads")
	}
	n = len(e.scheduledTicks("hand-over"))
	e.waitTicks("hand-over", n+2, 30*time.Second)
	stopA()
	stopB()
	checkConsecutive(t, e.scheduledTicks("hand-over"), time.Second)
}

// Ticks missed while no worker ran: skip fires one, catch-up each (the
// newest MaxCatchUp of them).
func TestScheduleMissedTicks(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name   string
		policy MissedPolicy
		missed string // how long ago next_fire_at was
		want   int
	}{
		{"skip", MissedSkip, "2 hours 30 minutes", 1},
		{"catch-up", MissedCatchUp, "2 hours 30 minutes", 3},
		{"catch-up at the bound", MissedCatchUp, fmt.Sprintf("%d hours 30 minutes", MaxCatchUp-1), MaxCatchUp},
		{"catch-up one over", MissedCatchUp, fmt.Sprintf("%d hours 30 minutes", MaxCatchUp), MaxCatchUp},
	}
	for i, c := range cases {
		name := fmt.Sprintf("missed-%d", i)
		e.addSchedule(Schedule{Name: name, Flow: "test.noop", Input: []byte(`1`), Cron: "@every 1h", Missed: c.policy})
		if _, err := e.pool.Exec(t.Context(), `UPDATE rayflow_schedules SET next_fire_at = date_trunc('second', now()) - $2::interval
 WHERE name = $1`, name, c.missed); err != nil {
			t.Fatal(err)
		}
	}
	stop := runWorker(t, e.pool, fastOptions())
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("missed-%d", i)
			e.waitTicks(name, c.want, 30*time.Second)
			var next time.Time
			if err := e.pool.QueryRow(t.Context(), `SELECT next_fire_at FROM rayflow_schedules WHERE name = $1`, name).Scan(&next); err != nil {
				t.Fatal(err)
			}
			if !next.After(time.Now()) {
				t.Fatalf("next_fire_at %v is not in the future", next)
			}
			ticks := e.scheduledTicks(name)
			if len(ticks) != c.want {
				t.Fatalf("%d tasks, want %d", len(ticks), c.want)
			}
			checkConsecutive(t, ticks, time.Hour)
			if last := ticks[len(ticks)-1]; c.policy == MissedCatchUp && next.Sub(last) != time.Hour {
				t.Fatalf("the newest fired tick %v is not the one before next_fire_at %v", last, next)
			}
		})
	}
	stop()
}

// A worker with NoScheduler never takes the lease.
func TestNoSchedulerWorkerFiresNothing(t *testing.T) {
	e := newEnv(t)
	o := fastOptions()
	o.NoScheduler = true
	w := startWorkerOn(t, e.pool, o)
	e.addSchedule(Schedule{Name: "idle", Flow: "test.noop", Input: []byte(`1`), Cron: "@every 1s"})
	// A task enqueued now and run proves the worker is up; by then a
	// scheduler would have taken the lease.
	id := e.enqueue("test.noop", "1", EnqueueOptions{})
	e.wait(id, 30*time.Second)
	if pid := e.schedulerPID(); pid != 0 || w.leading.Load() {
		t.Fatalf("the lease is held (pid %d) with NoScheduler", pid)
	}
}

// RunAfter: a task is not claimed before its run-after time.
func TestRunAfterDelaysTheClaim(t *testing.T) {
	e := newEnv(t)
	startWorkerOn(t, e.pool, fastOptions())
	at := time.Now().Add(1500 * time.Millisecond)
	id := e.enqueue("test.noop", "1", EnqueueOptions{RunAfter: at})
	task := e.wait(id, 30*time.Second)
	if task.State != StateSucceeded || task.StartedAt == nil || task.StartedAt.Before(task.RunAfter) || task.RunAfter.Sub(at).Abs() > time.Millisecond {
		t.Fatalf("task %s started %v, run after %v (want %v)", task.State, task.StartedAt, task.RunAfter, at)
	}
}

// kill -9 of the worker process holding the scheduler lease: the worker
// waiting for it takes over and the ticks go on, none fired twice
// (benchScheduleHandOver, which make bench-durable times).
func TestScheduleLeaseHandOverAfterKill9(t *testing.T) {
	r := benchScheduleHandOver(t, pgtest.ServerURL(t))
	if r.dups != 0 || r.ticks < 10 {
		t.Fatalf("%d ticks, %d fired twice", r.ticks, r.dups)
	}
}
