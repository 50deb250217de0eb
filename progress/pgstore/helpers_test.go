package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rayflow/rayflow/durable"
	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/gen/summary"
	"github.com/rayflow/rayflow/gen/topology"
	"github.com/rayflow/rayflow/internal/pgtest"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/progress/pgstore"
)

// newDB returns a migrated database of the test's own.
func newDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	if _, err := durable.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// newTask inserts a RUNNING task and returns its run identity.
func newTask(t testing.TB, pool *pgxpool.Pool) common.RunIdentity {
	t.Helper()
	id := common.RunIdentity{SchemaVersion: 1, AttemptNumber: 1}
	err := pool.QueryRow(context.Background(), `INSERT INTO rayflow_tasks (task_id, flow_name, input_json, state, claimed_by, workflow_run_id, started_at)
 VALUES (gen_random_uuid(), 'test', '{}', 'RUNNING', 'test', gen_random_uuid(), now()) RETURNING id, workflow_run_id::text`).Scan(&id.TaskExecutionPK, &id.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// advance makes a new attempt of the task current (as a retry does) and returns its identity.
func advance(t testing.TB, pool *pgxpool.Pool, pk int64) common.RunIdentity {
	t.Helper()
	id := common.RunIdentity{SchemaVersion: 1, TaskExecutionPK: pk}
	err := pool.QueryRow(context.Background(), `UPDATE rayflow_tasks SET attempt_number = attempt_number + 1,
 execution_generation = execution_generation + 1, workflow_run_id = gen_random_uuid(),
 workflow_progress_summary_json = NULL, progress_summary_revision = NULL
 WHERE id = $1 RETURNING attempt_number, execution_generation, workflow_run_id::text`, pk).Scan(&id.AttemptNumber, &id.ExecutionGeneration, &id.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func ts(d time.Duration) string { return progress.FormatTimestamp(t0.Add(d)) }

func nodeID(i int) string { return fmt.Sprintf("n%06d", i) }

// chain is a test run of n chained nodes; states[i] is node i's state.
type chain struct {
	id     common.RunIdentity
	n      int
	states []detail.NodeState
	rev    int64
	topo   int64
}

func newChain(id common.RunIdentity, n int) *chain {
	c := &chain{id: id, n: n, states: make([]detail.NodeState, n)}
	for i := range c.states {
		c.states[i] = detail.NodeStatePending
	}
	return c
}

// pub returns the next publication (final with outcome when final).
func (c *chain) pub(topologyChanged, final bool) *progress.Publication {
	p := &progress.Publication{Identity: c.id, Final: final, TopologyChanged: topologyChanged}
	if topologyChanged || c.topo == 0 {
		c.topo++
	}
	var cnt summary.NodeCounts
	cnt.Discovered, cnt.RetainedTopology, cnt.RetainedDetail = int64(c.n), int64(c.n), int64(c.n)
	for i := range c.n {
		id := nodeID(i)
		p.Nodes = append(p.Nodes, topology.Node{NodeID: id, Kind: topology.NodeKindTask, Label: "step " + id,
			RuntimeEnv: map[string]json.RawMessage{}, RayOptions: map[string]json.RawMessage{}})
		if i > 0 {
			p.Edges = append(p.Edges, topology.Edge{Source: nodeID(i - 1), Target: id})
		}
		d := detail.NodeDetail{SchemaVersion: 2, NodeID: id, State: c.states[i], RecentEvents: []detail.NodeRecentEvent{},
			OutputPreview: detail.OutputPreview{SchemaVersion: 1, Availability: detail.PreviewAvailabilityNotRequested, Value: []byte("null")}}
		switch c.states[i] {
		case detail.NodeStatePending:
			cnt.Pending++
		case detail.NodeStateRunning:
			cnt.Running++
			d.StartedAt = ptr(ts(time.Second))
		case detail.NodeStateSucceeded:
			cnt.Succeeded++
			d.StartedAt, d.FinishedAt = ptr(ts(time.Second)), ptr(ts(2*time.Second))
			d.Progress = &detail.NodeProgress{Current: 1, Total: 1, Percent: 100, Metrics: map[string]json.RawMessage{}, UpdatedAt: ptr(ts(2 * time.Second))}
		case detail.NodeStateFailed:
			cnt.Failed++
			d.StartedAt, d.FinishedAt, d.Error = ptr(ts(time.Second)), ptr(ts(2*time.Second)), ptr("boom")
		}
		p.Details = append(p.Details, d)
	}
	if p.Edges == nil {
		p.Edges = []topology.Edge{}
	}
	c.rev++
	v := c.topo
	m := fmt.Sprintf("%s-t%d", c.id.RunID, v)
	dr := c.rev
	s := summary.Summary{SchemaVersion: 3, StorageProtocolVersion: 1, RunIdentity: c.id, ReportingPolicy: common.ReportingPolicyFull,
		LimitsProfile: "v1", SummaryRevision: c.rev, TopologyVersion: &v, DetailRevision: &dr, State: summary.StateRunning,
		NodeCounts: cnt, EdgeCounts: summary.EdgeCounts{Discovered: int64(len(p.Edges)), RetainedTopology: int64(len(p.Edges))},
		Timestamps: summary.Timestamps{StartedAt: ts(0), UpdatedAt: ts(time.Duration(c.rev) * time.Second)},
		Detail:     summary.Detail{Availability: summary.DetailAvailabilityAvailable, Complete: true, TruncationReasons: []summary.TruncationReason{}},
		Storage:    summary.Storage{Kind: "database", ManifestID: &m},
		Retention:  summary.Retention{DetailDays: 7},
	}
	if c.n > 0 {
		s.ProgressPercent = float64(cnt.Succeeded+cnt.Failed) * 100 / float64(c.n)
	}
	if final {
		fin := s.Timestamps.UpdatedAt
		st := summary.TerminalStateSucceeded
		if cnt.Failed > 0 {
			st = summary.TerminalStateFailed
		}
		exp := progress.FormatTimestamp(t0.Add(time.Duration(c.rev)*time.Second + 7*24*time.Hour))
		s.State, s.SummaryRevision = summary.State(st), summary.ReservedRevision
		s.Timestamps.FinishedAt, s.Terminal = &fin, summary.Terminal{Outcome: &st, FinishedAt: &fin}
		s.Retention.DetailExpiresAt = &exp
	}
	p.Summary = s
	return p
}

func ptr[T any](v T) *T { return &v }

func newSink(t testing.TB, pool *pgxpool.Pool) *pgstore.Sink {
	t.Helper()
	s, err := pgstore.NewSink(pool, pgstore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
