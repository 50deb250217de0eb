package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rayflow/rayflow/internal/cron"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/store"
)

// Schedules (docs/durable.md#schedules): a schedule enqueues a task of
// its flow at every tick of a cron specification. Every worker (unless
// WorkerOptions.NoScheduler) waits for the scheduler lease, a session
// advisory lock on a connection of its own; the holder fires the due
// ticks. When it dies its session ends, the server frees the lock and
// the next waiting worker holds it at once. Each tick is enqueued in the
// transaction that moves the schedule's next_fire_at on, guarded by the
// value it read, and the task records its (schedule, tick), unique: a
// tick is enqueued once, whoever fires it and whenever a worker dies.

// MissedPolicy says what a schedule does with the ticks that passed
// while no worker held the lease (or the database was away).
type MissedPolicy string

// Missed tick policies.
const (
	// MissedSkip fires one task for all the ticks missed (the first of
	// them) and goes on with the next future tick. The default.
	MissedSkip MissedPolicy = "skip"
	// MissedCatchUp fires a task for each missed tick, the newest
	// MaxCatchUp of them; older ones are skipped.
	MissedCatchUp MissedPolicy = "catch-up"
)

// Schedule bounds.
const (
	// MaxScheduleNameLen bounds a schedule's name, in characters.
	MaxScheduleNameLen = 128
	// MaxCatchUp is the most missed ticks a catch-up schedule fires at once.
	MaxCatchUp = 100
	// maxTickWalk bounds the ticks walked to find a catch-up schedule's
	// newest missed ones; past it, the schedule fires as with MissedSkip.
	maxTickWalk = 1_000_000
)

var (
	// ErrScheduleExists is AddSchedule of a name that is taken.
	ErrScheduleExists = errors.New("durable: a schedule of this name exists")
	// ErrUnknownSchedule is RemoveSchedule of a name no schedule has.
	ErrUnknownSchedule = errors.New("durable: no such schedule")
)

// ScheduleError is a Schedule field AddSchedule refuses: Field names it
// ("Name", "Flow", "Input", "Queue", "Cron", "TimeZone" or "Missed"), Err
// says why. Err wraps ErrInvalidOption, or for the flow and its input
// ErrUnknownFlow, ErrUnserved, ErrInvalidInput or ErrInputTooLarge as
// EnqueueJSON would.
type ScheduleError struct {
	Field string
	Err   error
}

func (e *ScheduleError) Error() string { return e.Err.Error() }

// Unwrap makes the error match the sentinel of Err.
func (e *ScheduleError) Unwrap() error { return e.Err }

// Schedule is a schedule: its settings (AddSchedule), and its state as
// Schedules reads it.
type Schedule struct {
	// Name identifies the schedule (1–128 characters, no control
	// character).
	Name string `json:"name"`
	// Flow and Input are the task's flow and input JSON, checked as
	// EnqueueJSON checks them when the schedule is added. Input "" is null.
	Flow  string          `json:"flow"`
	Input json.RawMessage `json:"input"`
	// Queue is the task's queue; default "default".
	Queue string `json:"queue"`
	// Cron is the specification (package internal/cron: five fields,
	// @every D, @hourly, @daily, …).
	Cron string `json:"cron"`
	// TimeZone is an IANA zone name the five fields are read in; default
	// "UTC".
	TimeZone string `json:"time_zone"`
	// Missed is the missed tick policy; default MissedSkip.
	Missed MissedPolicy `json:"missed"`
	// AllowUnserved adds a schedule of a flow no live worker serves on
	// Queue (EnqueueOptions.AllowUnserved).
	AllowUnserved bool `json:"-"`

	// NextFireAt is the next tick; LastFiredAt when a tick last fired,
	// LastTaskID its task, FiredTicks how many ticks fired in all.
	NextFireAt  time.Time  `json:"next_fire_at"`
	LastFiredAt *time.Time `json:"last_fired_at,omitempty"`
	LastTaskID  string     `json:"last_task_id,omitempty"`
	FiredTicks  int64      `json:"fired_ticks"`
	CreatedAt   time.Time  `json:"created_at"`
}

// CheckScheduleName refuses a name no schedule can have (the rules of
// CheckQueueName, with MaxScheduleNameLen). The error wraps
// ErrInvalidOption.
func CheckScheduleName(name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxScheduleNameLen || !utf8.ValidString(name) {
		return fmt.Errorf("%w: schedule name of %d characters (1–%d)", ErrInvalidOption, n, MaxScheduleNameLen)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("%w: schedule name %q has a control character", ErrInvalidOption, name)
	}
	return nil
}

// CheckSchedule checks s's fields as AddSchedule does, except its flow
// and input, which it checks against the registry and the published
// flows: the error is a *ScheduleError.
func CheckSchedule(s Schedule) error {
	_, _, err := s.normalize()
	return err
}

// parsedSchedule is a schedule's specification and zone, parsed.
type parsedSchedule struct {
	spec *cron.Schedule
	loc  *time.Location
}

// normalize fills s's defaults and checks its fields (not the flow).
func (s Schedule) normalize() (Schedule, parsedSchedule, error) {
	var p parsedSchedule
	if err := CheckScheduleName(s.Name); err != nil {
		return s, p, &ScheduleError{Field: "Name", Err: err}
	}
	if s.Queue == "" {
		s.Queue = DefaultQueue
	}
	if err := CheckQueueName(s.Queue); err != nil {
		return s, p, &ScheduleError{Field: "Queue", Err: err}
	}
	spec, err := cron.Parse(s.Cron)
	if err != nil {
		return s, p, &ScheduleError{Field: "Cron", Err: fmt.Errorf("%w: %w", ErrInvalidOption, err)}
	}
	if s.TimeZone == "" {
		s.TimeZone = "UTC"
	}
	loc, err := loadZone(s.TimeZone)
	if err != nil {
		return s, p, &ScheduleError{Field: "TimeZone", Err: err}
	}
	switch s.Missed {
	case "":
		s.Missed = MissedSkip
	case MissedSkip, MissedCatchUp:
	default:
		return s, p, &ScheduleError{Field: "Missed", Err: fmt.Errorf("%w: missed tick policy %q (skip or catch-up)", ErrInvalidOption, s.Missed)}
	}
	if len(s.Input) == 0 {
		s.Input = json.RawMessage("null")
	}
	return s, parsedSchedule{spec: spec, loc: loc}, nil
}

// loadZone loads an IANA time zone; "Local" is refused, since workers
// may have different local zones.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" || len(name) > 64 {
		return nil, fmt.Errorf("%w: time zone %.64q is not an IANA zone name", ErrInvalidOption, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone %q: %w", ErrInvalidOption, name, err)
	}
	return loc, nil
}

// checkFlowInput checks a schedule's flow and input as EnqueueJSON does.
func (c *Client) checkFlowInput(ctx context.Context, s Schedule) error {
	o := EnqueueOptions{Queue: s.Queue, AllowUnserved: s.AllowUnserved}
	e, err := c.reg.lookup(s.Flow)
	if err != nil {
		err = c.checkPublished(ctx, s.Flow, s.Input, o, err)
	} else {
		switch {
		case len(s.Input) > MaxInputBytes:
			err = fmt.Errorf("%w: %d bytes, the limit is %d", ErrInputTooLarge, len(s.Input), MaxInputBytes)
		case !json.Valid(s.Input):
			err = fmt.Errorf("%w (%s): not valid JSON", ErrInvalidInput, e.inputType)
		default:
			err = e.decode(s.Input)
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnknownFlow):
		return &ScheduleError{Field: "Flow", Err: err}
	case errors.Is(err, ErrUnserved):
		return &ScheduleError{Field: "Queue", Err: err}
	case errors.Is(err, ErrInvalidInput), errors.Is(err, ErrInputTooLarge):
		return &ScheduleError{Field: "Input", Err: err}
	}
	return err
}

// AddSchedule adds the schedule s and returns it as stored, with its
// first tick (the first after now, on the database's clock). A field out
// of its bounds is refused with a *ScheduleError, a taken name with
// ErrScheduleExists; nothing is written then.
func (c *Client) AddSchedule(ctx context.Context, s Schedule) (Schedule, error) {
	s, p, err := s.normalize()
	if err != nil {
		return s, err
	}
	if err := c.checkFlowInput(ctx, s); err != nil {
		return s, err
	}
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		now, err := store.DBNow(ctx, tx)
		if err != nil {
			return err
		}
		s.NextFireAt = p.spec.Next(now, p.loc).UTC()
		s.CreatedAt = now
		err = store.InsertSchedule(ctx, tx, store.NewSchedule{Name: s.Name, Flow: s.Flow, InputJSON: string(s.Input), Queue: s.Queue,
			Spec: s.Cron, TimeZone: s.TimeZone, Missed: string(s.Missed), NextFireAt: s.NextFireAt})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrScheduleExists, s.Name)
		}
		if err != nil {
			return err
		}
		return store.NotifySchedules(ctx, tx)
	})
	switch {
	case errors.Is(err, ErrScheduleExists):
		return s, err
	case err != nil:
		return s, fmt.Errorf("durable: add schedule %s: %w", s.Name, err)
	}
	return s, nil
}

// Schedules lists the schedules by name.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	rows, err := store.ListSchedules(ctx, c.pool)
	if err != nil {
		return nil, fmt.Errorf("durable: schedules: %w", err)
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("durable: schedules: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("durable: schedules: %w", err)
	}
	return out, nil
}

func scanSchedule(row pgx.Row, more ...any) (Schedule, error) {
	var s Schedule
	var input string
	err := row.Scan(append([]any{&s.Name, &s.Flow, &input, &s.Queue, &s.Cron, &s.TimeZone, &s.Missed, &s.NextFireAt,
		&s.LastFiredAt, &s.LastTaskID, &s.FiredTicks, &s.CreatedAt}, more...)...)
	s.Input = json.RawMessage(input)
	return s, err
}

// RemoveSchedule removes the schedule name (ErrUnknownSchedule when there
// is none). Tasks it enqueued stay.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		tag, err := store.DeleteSchedule(ctx, tx, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %q", ErrUnknownSchedule, name)
		}
		return store.NotifySchedules(ctx, tx)
	})
	switch {
	case errors.Is(err, ErrUnknownSchedule):
		return err
	case err != nil:
		return fmt.Errorf("durable: remove schedule %s: %w", name, err)
	}
	return nil
}

// dueTicks are the ticks of a schedule whose next tick next has come at
// now, and its next tick after them: under MissedSkip the first missed
// tick alone; under MissedCatchUp the newest MaxCatchUp missed ticks.
func dueTicks(p parsedSchedule, policy MissedPolicy, next, now time.Time) (fire []time.Time, after time.Time) {
	if policy != MissedCatchUp {
		after = p.spec.Next(now, p.loc)
		if every := p.spec.Every(); every > 0 {
			after = next.Add(every * (now.Sub(next)/every + 1)) // keep @every's phase
		}
		return []time.Time{next}, after
	}
	if every := p.spec.Every(); every > 0 {
		n := int64(now.Sub(next)/every) + 1 // ticks due: next … next+(n−1)·every ≤ now
		first := max(0, n-MaxCatchUp)
		for k := first; k < n; k++ {
			fire = append(fire, next.Add(time.Duration(k)*every))
		}
		return fire, next.Add(time.Duration(n) * every)
	}
	t := next
	for range maxTickWalk {
		if t.After(now) {
			return fire, t
		}
		fire = append(fire, t)
		if len(fire) > MaxCatchUp {
			fire = fire[1:]
		}
		t = p.spec.Next(t, p.loc)
	}
	return []time.Time{next}, p.spec.Next(now, p.loc)
}

// errScheduleRaced is a tick someone else fired first (the guarded
// update changed no row): the transaction is rolled back.
var errScheduleRaced = errors.New("durable: the schedule's tick was fired by another transaction")

// fireDue fires the due ticks of one due schedule on db (the lease
// connection) in one transaction and reports whether there was one.
func (w *Worker) fireDue(ctx context.Context, db *pgx.Conn) (bool, error) {
	found := false
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := store.DueSchedules(ctx, tx, 1)
		if err != nil {
			return err
		}
		var s Schedule
		var now time.Time
		for rows.Next() {
			if s, err = scanSchedule(rows, &now); err != nil {
				rows.Close()
				return err
			}
			found = true
		}
		rows.Close()
		if err := rows.Err(); err != nil || !found {
			return err
		}
		fire, after, perr := w.ticksOf(s, now)
		if perr != nil {
			// A schedule this build cannot read (a spec or zone it does not
			// know) is left for a worker that can; it is logged and retried
			// at its next wake-up, a minute on.
			w.log.Warn("schedule not fired", "schedule", s.Name, "err", perr)
			_, err := store.AdvanceSchedule(ctx, tx, s.Name, s.NextFireAt, now.Add(time.Minute), 0, nil)
			return err
		}
		var last *string
		for _, tick := range fire {
			id, err := insertTick(ctx, tx, s, tick)
			if err != nil {
				return err
			}
			if id != "" {
				last = &id
			}
		}
		tag, err := store.AdvanceSchedule(ctx, tx, s.Name, s.NextFireAt, after, len(fire), last)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return errScheduleRaced
		}
		if err := store.Notify(ctx, tx, "q:"+s.Queue); err != nil {
			return err
		}
		w.stats.ticks.Add(int64(len(fire)))
		w.log.Info("schedule fired", "schedule", s.Name, "flow", s.Flow, "ticks", len(fire), "tick", fire[len(fire)-1],
			"late", now.Sub(fire[len(fire)-1]), "next", after)
		return nil
	})
	if errors.Is(err, errScheduleRaced) {
		return true, nil
	}
	return found, err
}

// ticksOf parses s and computes its due ticks at now.
func (w *Worker) ticksOf(s Schedule, now time.Time) ([]time.Time, time.Time, error) {
	spec, err := cron.Parse(s.Cron)
	if err != nil {
		return nil, time.Time{}, err
	}
	loc, err := loadZone(s.TimeZone)
	if err != nil {
		return nil, time.Time{}, err
	}
	fire, after := dueTicks(parsedSchedule{spec: spec, loc: loc}, s.Missed, s.NextFireAt, now)
	if after.IsZero() {
		return nil, time.Time{}, fmt.Errorf("%w: %q has no tick after %v", cron.ErrSyntax, s.Cron, now)
	}
	return fire, after.UTC(), nil
}

// insertTick inserts the task of s's tick and returns its id ("" when
// the tick's task exists already).
func insertTick(ctx context.Context, tx pgx.Tx, s Schedule, tick time.Time) (string, error) {
	qt := int64(DefaultQueueTimeout / time.Second)
	for range maxIDAttempts {
		id := sdkrt.NewRunID()
		_, err := store.InsertScheduledTask(ctx, tx, store.NewTask{TaskID: id, Flow: s.Flow, Queue: s.Queue,
			MaxAttempts: DefaultMaxAttempts, InputJSON: string(s.Input), QueueTimeoutSeconds: &qt}, s.Name, tick)
		if errors.Is(err, pgx.ErrNoRows) {
			exists, err := store.ScheduledTaskExists(ctx, tx, s.Name, tick)
			if err != nil {
				return "", err
			}
			if exists {
				return "", nil
			}
			continue // task id collision: regenerate
		}
		if err != nil {
			return "", err
		}
		return id, nil
	}
	return "", errors.New("task id collided repeatedly")
}

// Scheduler lease timing.
const (
	// schedulerMaxWait bounds the lease holder's sleep between two looks
	// at the schedules (a look also proves its connection alive).
	schedulerMaxWait = 5 * time.Second
	// schedulerBackoffMax bounds the wait before a new try after the lease
	// connection failed.
	schedulerBackoffMax = 5 * time.Second
	// schedulerLeasePoll is how often a worker tries for a lease another
	// holds (jittered): a lease freed by a dead holder is taken within it.
	schedulerLeasePoll = 500 * time.Millisecond
)

// scheduler takes part in the scheduler lease until ctx ends: it waits
// for the lease and, once it holds it, fires the due ticks (leadScheduler).
func (w *Worker) scheduler(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		began := time.Now()
		err := w.leadScheduler(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			backoff = 50 * time.Millisecond
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: not migrated yet
			w.log.Warn("schedules are not fired: run rayflow migrate (migration 0011)", "err", err)
			backoff = time.Minute
		} else {
			w.log.Debug("scheduler lease connection lost; retrying", "err", err, "backoff", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(jitter(backoff)):
		}
		backoff = min(backoff*2, max(schedulerBackoffMax, backoff))
	}
}

// leadScheduler opens the lease connection, waits for the lease and fires due
// ticks while it holds it; it returns when ctx ends or the connection
// fails (the lease then is free for another worker).
func (w *Worker) leadScheduler(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		w.leading.Store(false)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}()
	if err := store.ListenSchedules(ctx, conn); err != nil {
		return err
	}
	// Try for the lease every schedulerLeasePoll rather than wait for it
	// in one statement (store.TryLockScheduler says why); the notifications
	// that arrive meanwhile are dropped (the holder acts on them).
	for {
		w.stats.leaseTries.Add(1)
		ok, err := store.TryLockScheduler(ctx, conn)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		nctx, cancel := context.WithTimeout(ctx, jitter(schedulerLeasePoll))
		for err == nil {
			_, err = conn.WaitForNotification(nctx)
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err):
			return err
		}
	}
	w.leading.Store(true)
	w.log.Info("scheduler lease taken")
	for {
		fired, err := w.fireDue(ctx, conn)
		if err != nil {
			return err
		}
		if fired {
			continue // another may be due
		}
		next, now, err := store.NextWake(ctx, conn)
		if err != nil {
			return err
		}
		wait := schedulerMaxWait
		if next != nil {
			wait = min(wait, next.Sub(now))
		}
		wait = max(wait, 5*time.Millisecond) // a due schedule another transaction holds
		nctx, cancel := context.WithTimeout(ctx, wait)
		_, err = conn.WaitForNotification(nctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err):
			return err
		}
	}
}
