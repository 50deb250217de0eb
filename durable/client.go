package durable

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/sdk"
)

// DB is what the store needs of a connection: a *pgxpool.Pool, a
// *pgx.Conn or the caller's pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Client enqueues and manages tasks. It is safe for concurrent use.
type Client struct {
	pool *pgxpool.Pool
	reg  *Registry
}

// NewClient returns a client on pool resolving flow names in reg
// (DefaultRegistry when nil).
func NewClient(pool *pgxpool.Pool, reg *Registry) *Client {
	if reg == nil {
		reg = DefaultRegistry
	}
	return &Client{pool: pool, reg: reg}
}

// EnqueueOptions are a task's settings; the zero value is the defaults.
type EnqueueOptions struct {
	// Queue is the queue name (1–128 characters); default "default".
	Queue string
	// Priority is −100…100, larger first; default 0.
	Priority int
	// Timeout bounds one attempt's run (whole seconds, ≥ 1 s); a timed-out
	// task is FAILED without automatic retry. 0 means none.
	Timeout time.Duration
	// QueueTimeout bounds the wait in the queue (whole seconds, ≥ 1 s);
	// past max(enqueue, run after) + QueueTimeout the task is EXPIRED.
	// 0 means the default, 24 h; NoQueueTimeout disables it.
	QueueTimeout   time.Duration
	NoQueueTimeout bool
	// MaxAttempts counts the first attempt (1–100); default 3.
	MaxAttempts int
	// RunAfter delays the first claim; zero means now.
	RunAfter time.Time
	// AllowUnserved enqueues a flow the client has not registered even
	// when no live worker serves it on Queue (ErrUnserved otherwise; see
	// Client.EnqueueJSON).
	AllowUnserved bool
	// Unique, when its Key is set, makes the enqueue of a task whose key
	// another task holds return that task instead (Enqueued.Duplicate).
	Unique Unique
	// ConcurrencyKey (e.g. a tenant id; 1–MaxConcurrencyKeyBytes bytes of
	// valid UTF-8, no control character) groups the task with the
	// queue's other tasks of that key: they are claimed round-robin with
	// the queue's other keys, and at most the queue's per-key limit of
	// them run at once (Client.SetQueueLimits). "" means none.
	ConcurrencyKey string
}

// Unique is a task's unique key (docs/durable.md#unique-tasks). A task
// enqueued with Key holds it, in its flow (or across flows when Global),
// while it is not terminal, or for For from its enqueue when For is set
// (whatever its state: a task that ended within the period still holds
// it, one still running past it does not). An enqueue whose key is held
// creates nothing and returns the holder's task id, race-free: the
// database's unique index decides, also between concurrent enqueues and
// inside the caller's transaction (EnqueueTx). Per-flow and global keys
// are separate: a global key "k" does not collide with flow f's key "k".
type Unique struct {
	// Key is 1 to MaxUniqueKeyBytes bytes of UTF-8 without control
	// characters; "" means no unique key (Global and For must be unset).
	Key string
	// Global makes the key unique across every flow rather than the
	// task's flow.
	Global bool
	// For holds the key for this period from the enqueue (whole seconds,
	// ≥ 1 s) instead of while the task is not terminal.
	For time.Duration
}

// Enqueued is an enqueue's answer: the task id, and Duplicate when the
// key of EnqueueOptions.Unique was held, so that TaskID is the existing
// holder's and nothing was created. Flow, State and MaxAttempts are the
// task's as the enqueue found or created it.
type Enqueued struct {
	TaskID      string
	Duplicate   bool
	Flow        string
	State       State
	MaxAttempts int
}

func (o EnqueueOptions) normalize() (EnqueueOptions, error) {
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if err := CheckQueueName(o.Queue); err != nil {
		return o, &OptionError{Option: "Queue", Err: err}
	}
	if o.Priority < MinPriority || o.Priority > MaxPriority {
		return o, &OptionError{Option: "Priority", Err: fmt.Errorf("%w: priority %d outside %d…%d", ErrInvalidOption, o.Priority, MinPriority, MaxPriority)}
	}
	if err := checkSeconds("timeout", o.Timeout); err != nil {
		return o, &OptionError{Option: "Timeout", Err: err}
	}
	if o.QueueTimeout == 0 && !o.NoQueueTimeout {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if err := checkSeconds("queue timeout", o.QueueTimeout); err != nil {
		return o, &OptionError{Option: "QueueTimeout", Err: err}
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxAttempts < 1 || o.MaxAttempts > MaxAttemptsLimit {
		return o, &OptionError{Option: "MaxAttempts", Err: fmt.Errorf("%w: max attempts %d outside 1…%d", ErrInvalidOption, o.MaxAttempts, MaxAttemptsLimit)}
	}
	if o.ConcurrencyKey != "" {
		if err := CheckConcurrencyKey(o.ConcurrencyKey); err != nil {
			return o, &OptionError{Option: "ConcurrencyKey", Err: err}
		}
	}
	return o, o.Unique.Check()
}

// Check refuses a unique key outside its bounds with an *OptionError
// naming Unique.Key or Unique.For (which matches ErrInvalidOption), as
// the enqueue does before it writes anything.
func (u Unique) Check() error {
	if u.Key == "" {
		if u.Global || u.For != 0 {
			return &OptionError{Option: "Unique.Key", Err: fmt.Errorf("%w: a unique scope (global or a period) without a unique key", ErrInvalidOption)}
		}
		return nil
	}
	if len(u.Key) > MaxUniqueKeyBytes || !utf8.ValidString(u.Key) || strings.ContainsFunc(u.Key, unicode.IsControl) {
		return &OptionError{Option: "Unique.Key", Err: fmt.Errorf("%w: a unique key is 1 to %d bytes of UTF-8 without control characters (got %d bytes)",
			ErrInvalidOption, MaxUniqueKeyBytes, len(u.Key))}
	}
	if err := checkSeconds("unique period", u.For); err != nil {
		return &OptionError{Option: "Unique.For", Err: err}
	}
	return nil
}

// OptionError is an EnqueueOptions field out of its bounds: Option names
// the field, Err (which wraps ErrInvalidOption) says why. Enqueue returns
// it before it writes anything.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap makes the error match ErrInvalidOption.
func (e *OptionError) Unwrap() error { return e.Err }

// CheckQueueName refuses a name no queue can have: a queue name is 1 to
// MaxQueueNameLen characters of valid UTF-8, none of them a control
// character (queue names are shown one per line and in table cells).
// The error wraps ErrInvalidOption.
func CheckQueueName(q string) error {
	if n := utf8.RuneCountInString(q); n < 1 || n > MaxQueueNameLen || !utf8.ValidString(q) {
		return fmt.Errorf("%w: queue name of %d characters (1–%d)", ErrInvalidOption, n, MaxQueueNameLen)
	}
	if strings.ContainsFunc(q, unicode.IsControl) {
		return fmt.Errorf("%w: queue name %q has a control character (1–%d characters, none of them a control character)",
			ErrInvalidOption, q, MaxQueueNameLen)
	}
	return nil
}

func checkSeconds(what string, d time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < time.Second || d%time.Second != 0 || d/time.Second > MaxTimeoutSeconds {
		return fmt.Errorf("%w: %s %v is not a whole number of seconds in 1…%d", ErrInvalidOption, what, d, MaxTimeoutSeconds)
	}
	return nil
}

func nullSeconds(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	s := int64(d / time.Second)
	return &s
}

// Enqueue enqueues the registered flow f with its typed input and returns
// the task id.
// With o.Unique.Key, a held key returns the holder's task id (and
// creates nothing); EnqueueTxDetail tells the two apart.
func Enqueue[In, Out any](ctx context.Context, c *Client, f sdk.Flow[In, Out], in In, o EnqueueOptions) (string, error) {
	return EnqueueTx(ctx, c, c.pool, f, in, o)
}

// EnqueueTx is Enqueue inside the caller's transaction (or any DB): the
// task exists if and only if the caller's transaction commits.
func EnqueueTx[In, Out any](ctx context.Context, c *Client, db DB, f sdk.Flow[In, Out], in In, o EnqueueOptions) (string, error) {
	e, err := EnqueueTxDetail(ctx, c, db, f, in, o)
	return e.TaskID, err
}

// EnqueueTxDetail is EnqueueTx answering whether the task is new or the
// holder of o.Unique.Key (Enqueued.Duplicate).
func EnqueueTxDetail[In, Out any](ctx context.Context, c *Client, db DB, f sdk.Flow[In, Out], in In, o EnqueueOptions) (Enqueued, error) {
	name, err := c.reg.nameOf(sdkrt.Graph(f))
	if err != nil {
		return Enqueued{}, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return Enqueued{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return c.enqueue(ctx, db, name, raw, o)
}

// EnqueueJSON enqueues the flow registered as name with input as JSON.
// An unknown flow, input that does not decode into the flow's input type
// and input over 1 MiB are refused with ErrUnknownFlow, ErrInvalidInput
// and ErrInputTooLarge, and nothing is written.
//
// A flow the client has not registered is known when a live worker
// publishes it (Client.Flows): the input must then match the flow's
// published input schema (an *InputFieldError naming the field, which
// matches ErrInvalidInput), and some live worker must serve it on the
// task's queue (ErrUnserved) unless o.AllowUnserved. With AllowUnserved a
// flow no live worker publishes is enqueued too, its input unchecked
// beyond being JSON.
//
// With o.Unique.Key, a held key returns the holder's task id (and
// creates nothing); EnqueueJSONDetail tells the two apart.
func (c *Client) EnqueueJSON(ctx context.Context, name string, input json.RawMessage, o EnqueueOptions) (string, error) {
	e, err := c.enqueue(ctx, c.pool, name, input, o)
	return e.TaskID, err
}

// EnqueueJSONTx is EnqueueJSON inside the caller's transaction.
func (c *Client) EnqueueJSONTx(ctx context.Context, tx pgx.Tx, name string, input json.RawMessage, o EnqueueOptions) (string, error) {
	e, err := c.enqueue(ctx, tx, name, input, o)
	return e.TaskID, err
}

// EnqueueJSONDetail is EnqueueJSON answering whether the task is new or
// the holder of o.Unique.Key (Enqueued.Duplicate).
func (c *Client) EnqueueJSONDetail(ctx context.Context, name string, input json.RawMessage, o EnqueueOptions) (Enqueued, error) {
	return c.enqueue(ctx, c.pool, name, input, o)
}

// EnqueueJSONTxDetail is EnqueueJSONDetail inside the caller's
// transaction (or any DB). A duplicate's holder is locked until the
// transaction ends, so it keeps the key meanwhile.
func (c *Client) EnqueueJSONTxDetail(ctx context.Context, db DB, name string, input json.RawMessage, o EnqueueOptions) (Enqueued, error) {
	return c.enqueue(ctx, db, name, input, o)
}

// checkPublished checks the input of name, a flow the client has not
// registered (unknown is the registry's error), against the flows live
// workers publish: refused with unknown when none publishes it (unless
// AllowUnserved), with ErrUnserved when none serves it on o.Queue (unless
// AllowUnserved), and with an *InputFieldError when no published schema
// of it accepts input.
func (c *Client) checkPublished(ctx context.Context, name string, input json.RawMessage, o EnqueueOptions, unknown error) error {
	if name == "" || len(name) > MaxFlowNameLen {
		return fmt.Errorf("%w: a flow name is 1 to %d bytes", ErrUnknownFlow, MaxFlowNameLen)
	}
	flows, err := c.Flows(ctx, name)
	if err != nil {
		return fmt.Errorf("durable: enqueue: %w", err)
	}
	if len(flows) == 0 && !o.AllowUnserved {
		return unknown
	}
	if len(input) > MaxInputBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInputTooLarge, len(input), MaxInputBytes)
	}
	if !json.Valid(input) {
		return &InputFieldError{Flow: name, Reason: "not valid JSON"}
	}
	var onQueue []PublishedFlow
	var queues []string
	for _, f := range flows {
		if f.Queue == o.Queue {
			onQueue = append(onQueue, f)
		}
		if !slices.Contains(queues, f.Queue) {
			queues = append(queues, f.Queue)
		}
	}
	if len(onQueue) == 0 {
		if !o.AllowUnserved {
			return fmt.Errorf("%w: %s on queue %q (live workers serve it on: %s); enqueue with AllowUnserved (--allow-unserved) to wait for one",
				ErrUnserved, name, o.Queue, strings.Join(queues, ", "))
		}
		onQueue = flows
	}
	// Any live build's schema may accept it (a rolling deploy serves two);
	// the newest publication's refusal is reported.
	var first error
	for _, f := range onQueue {
		err := validateInput(name, f.InputSchema, input)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// PublishedFlow is a flow as live workers publish it: one per flow,
// queue, plan fingerprint, build revision and input schema, with the
// workers that publish it (sorted).
type PublishedFlow struct {
	Flow          string          `json:"flow"`
	Queue         string          `json:"queue"`
	Fingerprint   string          `json:"plan_fingerprint"`
	BuildRevision string          `json:"build_revision"`
	InputSchema   json.RawMessage `json:"input_schema"`
	Workers       []string        `json:"workers"`
	// PublishedAt is the newest of the workers' publications.
	PublishedAt time.Time `json:"published_at"`
}

// Flows lists the flows live workers publish (only the flow named name
// when name is not ""), ordered by flow, queue and newest publication.
// A database before migration 0009 publishes none.
func (c *Client) Flows(ctx context.Context, name string) ([]PublishedFlow, error) {
	rows, err := store.PublishedFlows(ctx, c.pool, name)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: not migrated yet
			return nil, nil
		}
		return nil, fmt.Errorf("durable: published flows: %w", err)
	}
	defer rows.Close()
	var out []PublishedFlow
	index := map[[5]string]int{}
	for rows.Next() {
		var f PublishedFlow
		var schema, worker string
		var at time.Time
		if err := rows.Scan(&f.Flow, &f.Queue, &schema, &f.Fingerprint, &f.BuildRevision, &worker, &at); err != nil {
			return nil, err
		}
		k := [5]string{f.Flow, f.Queue, f.Fingerprint, f.BuildRevision, schema}
		i, ok := index[k]
		if !ok {
			f.InputSchema, f.PublishedAt = json.RawMessage(schema), at
			i = len(out)
			index[k] = i
			out = append(out, f)
		}
		out[i].Workers = append(out[i].Workers, worker)
		if at.After(out[i].PublishedAt) {
			out[i].PublishedAt = at
		}
	}
	if err := rows.Err(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" {
			return nil, nil
		}
		return nil, fmt.Errorf("durable: published flows: %w", err)
	}
	for i := range out {
		slices.Sort(out[i].Workers)
	}
	return out, nil
}

// maxIDAttempts bounds task-id regeneration on a (practically impossible)
// UUID collision.
const maxIDAttempts = 3

func (c *Client) enqueue(ctx context.Context, db DB, name string, input json.RawMessage, o EnqueueOptions) (Enqueued, error) {
	o, err := o.normalize()
	if err != nil {
		return Enqueued{}, err
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	e, err := c.reg.lookup(name)
	if err != nil {
		if err := c.checkPublished(ctx, name, input, o, err); err != nil {
			return Enqueued{}, err
		}
	} else {
		if len(input) > MaxInputBytes {
			return Enqueued{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrInputTooLarge, len(input), MaxInputBytes)
		}
		if !json.Valid(input) {
			return Enqueued{}, fmt.Errorf("%w (%s): not valid JSON", ErrInvalidInput, e.inputType)
		}
		if err := e.decode(input); err != nil {
			return Enqueued{}, err
		}
	}
	var runAfter *time.Time
	if !o.RunAfter.IsZero() {
		runAfter = &o.RunAfter
	}
	t := store.NewTask{Flow: name, Queue: o.Queue, Priority: o.Priority,
		MaxAttempts: o.MaxAttempts, InputJSON: string(input), TimeoutSeconds: nullSeconds(o.Timeout),
		QueueTimeoutSeconds: nullSeconds(o.QueueTimeout), RunAfter: runAfter}
	if o.ConcurrencyKey != "" {
		t.ConcurrencyKey = &o.ConcurrencyKey
	}
	if o.Unique.Key != "" {
		return enqueueUnique(ctx, db, t, o.Unique)
	}
	for range maxIDAttempts {
		t.TaskID = sdkrt.NewRunID()
		_, err := store.InsertTask(ctx, db, t)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // task id collision: regenerate
		}
		if err != nil {
			return Enqueued{}, fmt.Errorf("durable: enqueue: %w", err)
		}
		if err := store.Notify(ctx, db, "q:"+o.Queue); err != nil {
			return Enqueued{}, fmt.Errorf("durable: enqueue: %w", err)
		}
		return Enqueued{TaskID: t.TaskID, Flow: name, State: StateQueued, MaxAttempts: o.MaxAttempts}, nil
	}
	return Enqueued{}, errors.New("durable: enqueue: task id collided repeatedly")
}

// maxReleases bounds the inserts of one unique enqueue: each one that
// does not insert released a holder whose period had passed, and the
// next insert no longer conflicts with it (only with a task another
// enqueue inserted meanwhile, which it then returns).
const maxReleases = 8

// enqueueUnique inserts t holding u's key, or returns the task that holds
// it: one INSERT ... ON CONFLICT on the unique index per try, never a
// read before the write.
func enqueueUnique(ctx context.Context, db DB, t store.NewTask, u Unique) (Enqueued, error) {
	su := store.UniqueTask{Key: u.Key, Scope: t.Flow, ForSeconds: nullSeconds(u.For)}
	if u.Global {
		su.Scope = ""
	}
	t.TaskID = sdkrt.NewRunID()
	for range maxReleases {
		r, err := store.InsertUniqueTask(ctx, db, t, su)
		if err != nil {
			return Enqueued{}, fmt.Errorf("durable: enqueue: %w", err)
		}
		if r.Released {
			continue // the holder's period had passed: its key is free now
		}
		e := Enqueued{TaskID: r.TaskID, Duplicate: r.TaskID != t.TaskID, Flow: r.Flow, State: State(r.State), MaxAttempts: r.MaxAttempts}
		if !e.Duplicate {
			if err := store.Notify(ctx, db, "q:"+t.Queue); err != nil {
				return Enqueued{}, fmt.Errorf("durable: enqueue: %w", err)
			}
		}
		return e, nil
	}
	return Enqueued{}, fmt.Errorf("durable: enqueue: unique key %q: released %d expired holders without inserting", u.Key, maxReleases)
}

// scanTask scans a task record (store.TaskByID, store.ListTasks).
func scanTask(row pgx.Row) (*Task, error) {
	var t Task
	var input string
	var result *string
	err := row.Scan(&t.PK, &t.ID, &t.Flow, &t.Queue, &t.Priority, &t.State, &t.Attempt, &t.MaxAttempts,
		&t.Generation, &t.RunID, &t.PlanFingerprint, &t.PinnedAttempt, &input, &result, &t.Runner, &t.RayAddress, &t.RayJobID,
		&t.CreatedAt, &t.EnqueuedAt, &t.StartedAt, &t.FinishedAt, &t.LastHeartbeatAt, &t.RunAfter, &t.TimeoutSeconds,
		&t.QueueTimeout, &t.QueueDeadline, &t.ClaimedBy, &t.CancellationStatus, &t.CancellationError,
		&t.ErrorType, &t.ErrorMessage, &t.ErrorTraceback, &t.RepairOf,
		&t.UniqueKey, &t.UniqueGlobal, &t.UniqueUntil, &t.UniqueReleased, &t.ConcurrencyKey)
	if err != nil {
		return nil, err
	}
	t.Input = json.RawMessage(input)
	if result != nil {
		t.Result = json.RawMessage(*result)
	}
	return &t, nil
}

// Get returns the task with its archived attempts, or ErrNotFound.
func (c *Client) Get(ctx context.Context, id string) (*Task, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("%w: %q is not a task id", ErrNotFound, id)
	}
	t, err := scanTask(store.TaskByID(ctx, c.pool, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("durable: get %s: %w", id, err)
	}
	rows, err := store.TaskAttempts(ctx, c.pool, t.PK)
	if err != nil {
		return nil, fmt.Errorf("durable: get %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var result *string
		if err := rows.Scan(&a.Attempt, &a.Generation, &a.RunID, &a.State, &a.ClaimedBy, &a.PlanFingerprint,
			&a.StartedAt, &a.FinishedAt, &a.ErrorType, &a.ErrorMessage, &a.ErrorTraceback, &result); err != nil {
			return nil, err
		}
		if result != nil {
			a.Result = json.RawMessage(*result)
		}
		t.Attempts = append(t.Attempts, a)
	}
	return t, rows.Err()
}

// Wait polls the task (adaptively, 20 ms growing to 1 s) until it is
// terminal and not about to be retried automatically, then returns it.
// A FAILED or LOST task that will run again is not yet final.
func (c *Client) Wait(ctx context.Context, id string) (*Task, error) {
	interval := 20 * time.Millisecond
	for {
		t, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if t.State.Terminal() {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, context.Cause(ctx)
		case <-time.After(interval):
		}
		interval = min(interval*2, time.Second)
	}
}

// ListOptions filter and page List.
type ListOptions struct {
	State State  // "" for all
	Queue string // "" for all
	// Limit is 1…1000; default 50.
	Limit int
	// Cursor is a previous page's Next ("" for the first page).
	Cursor string
}

// Page is one page of List, newest first; Next is "" on the last page.
type Page struct {
	Tasks []*Task
	Next  string
}

// List returns tasks newest first with keyset pagination (no offsets:
// a page costs the same wherever it is).
func (c *Client) List(ctx context.Context, o ListOptions) (*Page, error) {
	if o.Limit == 0 {
		o.Limit = 50
	}
	if o.Limit < 1 || o.Limit > 1000 {
		return nil, fmt.Errorf("%w: limit %d outside 1…1000", ErrInvalidOption, o.Limit)
	}
	if o.State != "" && !o.State.Valid() {
		return nil, fmt.Errorf("%w: state %q (one of %v)", ErrInvalidOption, o.State, States)
	}
	before, err := parseCursor(o.Cursor)
	if err != nil {
		return nil, err
	}
	rows, err := store.ListTasks(ctx, c.pool, before, string(o.State), o.Queue, o.Limit+1)
	if err != nil {
		return nil, fmt.Errorf("durable: list: %w", err)
	}
	defer rows.Close()
	p := &Page{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		p.Tasks = append(p.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(p.Tasks) > o.Limit {
		p.Tasks = p.Tasks[:o.Limit]
		p.Next = encodeCursor(p.Tasks[o.Limit-1].PK)
	}
	return p, nil
}

// Expect optionally pins what the caller believes the task's current
// attempt is (zero fields are not checked), so that a retry or cancel
// decided on stale information is refused with a STALE_* outcome.
type Expect struct {
	Attempt    int
	Generation int64
	RunID      string
}

// Retry moves a FAILED, LOST, CANCELLED or EXPIRED task back to QUEUED as
// a new attempt (attempt + 1, generation + 1, no run id), runnable at once.
// The task keeps its plan pin: only a worker that reproduces the pinned
// plan claims it (RetryRebuild drops the pin). A task whose unique key
// (held while not terminal) another live task took meanwhile is refused
// with a *UniqueHeldError (ErrUniqueHeld) and stays as it is.
func (c *Client) Retry(ctx context.Context, id string, exp Expect) (RetryOutcome, error) {
	return c.retry(ctx, id, exp, false)
}

// RetryRebuild is Retry that also re-pins the task to the current build:
// it drops the task's plan pin, so that any worker serving the flow claims
// the new attempt and pins its own plan (`rayflow tasks retry --rebuild`).
// Steps already done under the old plan are not reused.
func (c *Client) RetryRebuild(ctx context.Context, id string, exp Expect) (RetryOutcome, error) {
	return c.retry(ctx, id, exp, true)
}

func (c *Client) retry(ctx context.Context, id string, exp Expect, rebuild bool) (RetryOutcome, error) {
	if !validUUID(id) {
		return RetryNotFound, nil
	}
	var out RetryOutcome
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var pk int64
		var state State
		var attempt int
		var gen int64
		var runID, queue string
		err := store.LockTaskForRetry(ctx, tx, id).Scan(&pk, &state, &attempt, &gen, &runID, &queue)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			out = RetryNotFound
			return nil
		case err != nil:
			return err
		case exp.Attempt != 0 && exp.Attempt != attempt:
			out = RetryStaleAttempt
			return nil
		case exp.Generation != 0 && exp.Generation != gen:
			out = RetryStaleGeneration
			return nil
		case exp.RunID != "" && exp.RunID != runID:
			out = RetryStaleWorkflowIdentity
			return nil
		}
		switch state {
		case StateFailed, StateLost, StateCancelled, StateExpired:
		default:
			out = RetryNotRetryable
			return nil
		}
		if err := requeue(ctx, tx, id, pk, string(state), attempt, gen, rebuild); err != nil {
			return err
		}
		if err := store.Notify(ctx, tx, "q:"+queue); err != nil {
			return err
		}
		out = RetryAccepted
		return nil
	})
	var held *UniqueHeldError
	if errors.As(err, &held) {
		return "", held
	}
	if err != nil {
		return "", fmt.Errorf("durable: retry %s: %w", id, err)
	}
	return out, nil
}

// requeue is store.RequeueTask in a savepoint of tx: when the task would
// hold a unique key another task holds (the unique index refuses it), it
// rolls back to the savepoint, reads the holder and returns a
// *UniqueHeldError.
func requeue(ctx context.Context, tx pgx.Tx, id string, pk int64, state string, attempt int, gen int64, rebuild bool) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	_, err = store.RequeueTask(ctx, sp, pk, state, attempt, gen, rebuild)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == store.UniqueIndex {
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		held := &UniqueHeldError{TaskID: id}
		var t *Task
		if t, err = scanTask(store.TaskByID(ctx, tx, id)); err == nil {
			held.Key = t.UniqueKey
		}
		held.Holder, _ = store.UniqueHolder(ctx, tx, pk) // for the message only: the index decided
		return held
	}
	if err != nil {
		return err
	}
	return sp.Commit(ctx)
}

// Repair creates a new task that repairs the FAILED, CANCELLED or LOST
// task id and returns its task id: the same flow, input, queue,
// priority, attempts and timeouts, QUEUED and runnable at once, naming
// id as its origin (Task.RepairOf). In the same transaction it starts
// with a copy of the origin's item ledger, so its resumable maps run
// only the items without a result whose key still matches. Its plan is
// materialized by the worker that claims it, under that worker's build
// (it is not pinned to the origin's plan): a fixed step runs again where
// its code identity changed (docs/durable.md#resume-and-repair). A task
// in another state is refused with a *NotRepairableError
// (ErrNotRepairable), an unknown one with ErrNotFound; nothing is written.
func (c *Client) Repair(ctx context.Context, id string) (string, error) {
	if !validUUID(id) {
		return "", fmt.Errorf("%w: %q is not a task id", ErrNotFound, id)
	}
	var newID string
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var pk int64
		var state State
		var t store.NewTask
		err := store.LockTaskForRepair(ctx, tx, id).Scan(&pk, &state, &t.Flow, &t.Queue, &t.Priority, &t.MaxAttempts,
			&t.InputJSON, &t.TimeoutSeconds, &t.QueueTimeoutSeconds, &t.ConcurrencyKey)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		case err != nil:
			return err
		}
		switch state {
		case StateFailed, StateCancelled, StateLost:
		default:
			return &NotRepairableError{TaskID: id, State: state}
		}
		t.RepairOf = &pk
		for range maxIDAttempts {
			t.TaskID = sdkrt.NewRunID()
			repairPK, err := store.InsertTask(ctx, tx, t)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // task id collision: regenerate
			}
			if err != nil {
				return err
			}
			if _, err := store.CopyItems(ctx, tx, pk, repairPK); err != nil {
				return err
			}
			newID = t.TaskID
			return store.Notify(ctx, tx, "q:"+t.Queue)
		}
		return errors.New("task id collided repeatedly")
	})
	switch {
	case errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotRepairable):
		return "", err
	case err != nil:
		return "", fmt.Errorf("durable: repair %s: %w", id, err)
	}
	return newID, nil
}

// Cancel cancels a task: a QUEUED one becomes CANCELLED at once (its
// attempt archived), a RUNNING one CANCELLING (its worker is notified,
// cancels the run's context and records CANCELLED).
func (c *Client) Cancel(ctx context.Context, id string, exp Expect) (CancelOutcome, error) {
	if !validUUID(id) {
		return CancelNotFound, nil
	}
	var out CancelOutcome
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var pk int64
		var state State
		var attempt int
		var gen int64
		var runID *string
		err := store.LockTaskForCancel(ctx, tx, id).Scan(&pk, &state, &attempt, &gen, &runID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			out = CancelNotFound
			return nil
		case err != nil:
			return err
		case exp.Attempt != 0 && exp.Attempt != attempt:
			out = CancelStaleAttempt
			return nil
		case exp.Generation != 0 && exp.Generation != gen:
			out = CancelStaleGeneration
			return nil
		}
		switch {
		case state == StateQueued:
			n, err := transition(ctx, tx, store.Fence{PK: pk, States: []string{string(StateQueued)}, Attempt: attempt, Gen: gen, RunID: runID},
				outcome{state: StateCancelled, errType: "Cancelled", errMsg: "cancelled while queued", cancellation: CancellationNotApplicable})
			if err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("durable: cancel: the locked row did not change")
			}
			out = CancelAccepted
		case state == StateRunning:
			if _, err := store.RequestCancel(ctx, tx, pk, gen); err != nil {
				return err
			}
			if err := store.Notify(ctx, tx, "c:"+strconv.FormatInt(pk, 10)); err != nil {
				return err
			}
			out = CancelAccepted
		case state == StateCancelling:
			out = CancelAlreadyRequested
		case state.Terminal():
			out = CancelAlreadyTerminal
		default:
			out = CancelInvalidState
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("durable: cancel %s: %w", id, err)
	}
	return out, nil
}

// ValidTaskID reports whether s has the form of a task id (a UUID).
func ValidTaskID(s string) bool { return validUUID(s) }

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
	}
	return true
}

// newWorkerID returns a readable unique worker name.
func newWorkerID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%x", prefix, b)
}

// A list cursor is the last row's pk, base64url-encoded: the next page
// has the rows below it.
func encodeCursor(pk int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(pk, 10)))
}

// parseCursor returns the pk a cursor stands for (MaxInt64 for "").
func parseCursor(c string) (int64, error) {
	if c == "" {
		return math.MaxInt64, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	pk, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || pk < 1 || encodeCursor(pk) != c {
		return 0, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return pk, nil
}
