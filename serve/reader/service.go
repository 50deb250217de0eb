package reader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/read"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/internal/store"
	"github.com/rayflow/rayflow/progress"
)

// MaxRecordBytes caps the decoded records one read loads (1 MiB).
const MaxRecordBytes = 1 << 20

// Schema names of the read envelopes.
const (
	SchemaSummary = "rayflow.workflow-progress-summary"
	SchemaPage    = "rayflow.workflow-progress-page"
	SchemaNode    = "rayflow.workflow-progress-node"
)

const nilRunID = "00000000-0000-0000-0000-000000000000"

var taskIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Service serves the progress reads of docs/contracts.md#reads-cursors-and-error-codes from the durable
// PostgreSQL store. Every read authorizes first, then reads in one
// read-only REPEATABLE READ transaction (one consistent snapshot).
type Service struct {
	pool  *pgxpool.Pool
	keys  *Keys
	auth  Authorizer
	cache *recordCache // nil: every read decodes
	// Now is the clock (generated_at, retention expiry); time.Now when nil.
	Now func() time.Time
}

// New returns a read service.
func New(pool *pgxpool.Pool, keys *Keys, auth Authorizer) (*Service, error) {
	if pool == nil || keys == nil || auth == nil {
		return nil, errors.New("read: New needs a pool, cursor keys and an authorizer")
	}
	return &Service{pool: pool, keys: keys, auth: auth, cache: newRecordCache(DefaultCacheBytes)}, nil
}

// SetCacheBytes sets the byte budget of the decoded-record cache (stored
// bytes of the cached records; DefaultCacheBytes by default); 0 turns the
// cache off, so every read strictly decodes every record it loads. Call
// it before the service is used.
func (s *Service) SetCacheBytes(n int64) {
	s.cache = nil
	if n > 0 {
		s.cache = newRecordCache(n)
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// target is the run a read resolved to.
type target struct {
	taskPK  int64
	taskID  string
	attempt int64
	gen     int64
	runID   string
	sum     *summary.Summary // nil when the attempt has no summary
	avail   summary.DetailAvailability
}

func (t *target) identity() common.RunIdentity {
	return common.RunIdentity{SchemaVersion: 1, RunID: t.runID, TaskExecutionPK: t.taskPK,
		AttemptNumber: t.attempt, ExecutionGeneration: t.gen}
}

func (t *target) public() common.PublicRunIdentity {
	return common.PublicRunIdentity{SchemaVersion: 1, RunID: t.runID, AttemptNumber: t.attempt, ExecutionGeneration: t.gen}
}

func (t *target) publication() read.Publication {
	if t.sum == nil {
		return read.Publication{}
	}
	rev := t.sum.SummaryRevision
	return read.Publication{SummaryRevision: &rev, TopologyVersion: t.sum.TopologyVersion, DetailRevision: t.sum.DetailRevision}
}

func readableAvail(a summary.DetailAvailability) bool {
	return a == summary.DetailAvailabilityAvailable || a == summary.DetailAvailabilityTruncated
}

// tx runs fn in a read-only repeatable-read transaction.
func (s *Service) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("read: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only; rollback after commit is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Querier is what Authorize looks the task up through (a pool or a transaction).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Authorize resolves taskID and asks the authorizer; a denied principal
// gets ACCESS_DENIED whether or not the task exists, an allowed one
// NOT_FOUND for an unknown task. It returns the task's primary key.
func (s *Service) Authorize(ctx context.Context, q Querier, principal, taskID string, action Action) (int64, error) {
	task := Task{ID: taskID}
	var pk int64
	if taskIDRe.MatchString(taskID) {
		var err error
		pk, task.Flow, err = store.TaskFlow(ctx, q, taskID)
		switch {
		case err == nil:
			task.Exists = true
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, fmt.Errorf("read: looking up task: %w", err)
		}
	}
	if err := s.auth.Authorize(ctx, principal, task, action); err != nil {
		return 0, errorf(read.ErrorCodeAccessDenied, "access denied")
	}
	if !task.Exists {
		return 0, errorf(read.ErrorCodeNotFound, "no task %q", taskID)
	}
	return pk, nil
}

// AuthorizeFlow asks the authorizer whether principal may perform action
// (ActionEnqueue) on a new task of flow; a denial is ACCESS_DENIED.
func (s *Service) AuthorizeFlow(ctx context.Context, principal, flow string, action Action) error {
	if err := s.auth.Authorize(ctx, principal, Task{Flow: flow, Exists: true}, action); err != nil {
		return errorf(read.ErrorCodeAccessDenied, "access denied")
	}
	return nil
}

// load authorizes and resolves the current (attempt 0) or an archived
// attempt of a task with its summary and effective availability: one
// statement reads the task row (its flow, for the authorizer) and the
// archived attempt's row when one is asked for.
func (s *Service) load(ctx context.Context, q Querier, principal, taskID string, attempt int64) (*target, error) {
	if attempt < 0 {
		return nil, errorf(read.ErrorCodeInvalidArgument, "attempt_number must be at least 1")
	}
	task := Task{ID: taskID}
	t := &target{taskID: taskID}
	var runID *string
	var size *int32
	var raw *string
	var aAttempt, aGen *int64
	var aRunID *string
	var aSize *int32
	var aRaw *string
	if taskIDRe.MatchString(taskID) {
		err := store.TaskProgress(ctx, q, taskID, attempt).Scan(&t.taskPK, &task.Flow, &t.attempt, &t.gen, &runID, &size, &raw,
			&aAttempt, &aGen, &aRunID, &aSize, &aRaw)
		switch {
		case err == nil:
			task.Exists = true
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("read: loading task: %w", err)
		}
	}
	if err := s.auth.Authorize(ctx, principal, task, ActionReadProgress); err != nil {
		return nil, errorf(read.ErrorCodeAccessDenied, "access denied")
	}
	if !task.Exists {
		return nil, errorf(read.ErrorCodeNotFound, "no task %q", taskID)
	}
	pk := t.taskPK
	if attempt != 0 && attempt != t.attempt {
		if aAttempt == nil {
			return nil, errorf(read.ErrorCodeNotFound, "task %s has no attempt %d", taskID, attempt)
		}
		t.attempt, t.gen, runID, size, raw = *aAttempt, *aGen, aRunID, aSize, aRaw
	}
	t.runID = nilRunID
	if runID != nil {
		t.runID = *runID
	}
	t.avail = summary.DetailAvailabilityNotReported
	if size == nil {
		return t, nil
	}
	if raw == nil {
		return nil, errorf(read.ErrorCodeCorrupt, "stored summary is %d bytes, over %d", *size, summary.MaxBytes)
	}
	sum, err := summary.DecodeSummary([]byte(*raw))
	if err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "stored summary does not validate: %v", err)
	}
	ri := sum.RunIdentity
	if ri.TaskExecutionPK != pk || ri.AttemptNumber != t.attempt || ri.ExecutionGeneration != t.gen || (runID != nil && ri.RunID != *runID) {
		return nil, errorf(read.ErrorCodeCorrupt, "stored summary belongs to another run")
	}
	t.runID, t.sum, t.avail = ri.RunID, sum, sum.Detail.Availability
	if readableAvail(t.avail) && sum.Retention.DetailExpiresAt != nil {
		exp, err := time.Parse(time.RFC3339Nano, *sum.Retention.DetailExpiresAt)
		if err == nil && !exp.After(s.now()) {
			t.avail = summary.DetailAvailabilityExpired
		}
	}
	return t, nil
}

func (s *Service) envelope(t *target) read.Envelope {
	return read.Envelope{SchemaVersion: 1, GeneratedAt: progress.FormatTimestamp(s.now()), TaskID: t.taskID,
		RunIdentity: t.public(), Publication: t.publication(), Availability: t.avail,
		Complete: t.avail == summary.DetailAvailabilityAvailable}
}

// Summary reads the progress summary of a task's current attempt
// (attempt 0) or of an archived attempt.
func (s *Service) Summary(ctx context.Context, principal, taskID string, attempt int64) (*read.Summary, error) {
	var out *read.Summary
	// One statement (load) is one snapshot: no transaction needed.
	err := func() error {
		t, err := s.load(ctx, s.pool, principal, taskID, attempt)
		if err != nil {
			return err
		}
		e := s.envelope(t)
		out = &read.Summary{SchemaVersion: 1, GeneratedAt: e.GeneratedAt, TaskID: e.TaskID, RunIdentity: e.RunIdentity,
			Publication: e.Publication, Availability: e.Availability, Complete: e.Complete, Schema: SchemaSummary}
		if t.sum != nil {
			v := int64(3)
			out.SourceSchemaVersion = &v
			out.Summary = publicSummary(t.sum)
			// The projected summary agrees with the envelope: a derived
			// EXPIRED is reported in both.
			if t.avail != t.sum.Detail.Availability {
				out.Summary.Detail.Availability = t.avail
				out.Summary.Detail.Complete = false
				out.Summary.Detail.TruncationReasons = []summary.TruncationReason{}
			}
		}
		return nil
	}()
	if err != nil {
		return nil, err
	}
	if err := out.Validate(); err != nil {
		return nil, errorf(read.ErrorCodeCorrupt, "summary envelope does not validate: %v", err)
	}
	return out, nil
}

func publicSummary(x *summary.Summary) *read.PublicSummary {
	reasons := x.Detail.TruncationReasons
	if reasons == nil {
		reasons = []summary.TruncationReason{}
	}
	d := x.Detail
	d.TruncationReasons = reasons
	return &read.PublicSummary{SchemaVersion: x.SchemaVersion, StorageProtocolVersion: x.StorageProtocolVersion,
		RunIdentity:     common.PublicRunIdentity{SchemaVersion: 1, RunID: x.RunIdentity.RunID, AttemptNumber: x.RunIdentity.AttemptNumber, ExecutionGeneration: x.RunIdentity.ExecutionGeneration},
		ReportingPolicy: x.ReportingPolicy, SelectedStrategy: x.SelectedStrategy, PlanFingerprint: x.PlanFingerprint,
		LimitsProfile: x.LimitsProfile, SummaryRevision: x.SummaryRevision, TopologyVersion: x.TopologyVersion,
		DetailRevision: x.DetailRevision, State: x.State, NodeCounts: x.NodeCounts, EdgeCounts: x.EdgeCounts,
		ProgressPercent: x.ProgressPercent, Timestamps: x.Timestamps, Detail: d,
		Storage: read.PublicSummaryStorage{Kind: "database"}, Retention: x.Retention, Terminal: x.Terminal}
}

// nodeKey is the stable detail key of a node id.
func nodeKey(nodeID string) string {
	h := sha256.Sum256([]byte(nodeID))
	return hex.EncodeToString(h[:])
}
