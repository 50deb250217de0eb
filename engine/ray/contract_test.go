package ray

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// maskProgress replaces what legitimately differs between two runs of one
// plan: the run id (and the manifest id derived from it), timestamps, Ray
// execution ids, the engine's strategy and the detail revision (it counts
// accepted events, and application progress is coalesced by
// acknowledgement timing); it keeps of a node's recent events only the
// last (its final state): a map's counters become events at most once per
// flush interval, so how many events a run has, and therefore which older
// ones its bounded ring of recent events still holds, is a matter of
// timing.
func maskProgress(v any, key string) any {
	if evs, ok := v.([]any); ok && key == "recent_events" && len(evs) > 0 {
		v = evs[len(evs)-1:]
	}
	switch key {
	case "run_id", "manifest_id", "execution", "selected_strategy", "detail_revision",
		"started_at", "updated_at", "finished_at", "detail_expires_at", "timestamp":
		if v == nil {
			return nil
		}
		return "<masked>"
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskProgress(e, k)
		}
	case []any:
		for i, e := range x {
			x[i] = maskProgress(e, "")
		}
	}
	return v
}

// examples/complex run in process and on Ray (full policy) publish equal
// final progress: summary v3, topology and node detail.
func TestComplexProgressMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Ray")
	}
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "complex")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../examples/complex").CombinedOutput(); err != nil {
		t.Fatalf("building examples/complex: %v\n%s", err, out)
	}
	load := func(args ...string) map[string]any {
		t.Helper()
		file := filepath.Join(dir, strings.Join(args, "_")+".json")
		cmd := exec.CommandContext(ctx, bin, append(args, "-progress", file)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("complex %v: %v\n%s", args, err, out)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return maskProgress(v, "").(map[string]any)
	}
	args := []string{"-fast-items", "5", "-slow-items", "3"}
	local := load(args...)
	ray := load(append(args, "-ray", testAddress)...)
	if d := cmp.Diff(local, ray); d != "" {
		t.Fatalf("local and Ray progress differ (-local +ray):\n%s", d)
	}
	if s := local["summary"].(map[string]any); s["state"] != "SUCCEEDED" || len(local["nodes"].([]any)) != 8 {
		t.Fatalf("unexpected progress %v", s)
	}
}

// Two concurrent runs on one Ray engine keep separate progress: each
// sink sees only its own run's identity and graph, and no event of one
// run reaches the other's collector.
func TestConcurrentRunsKeepSeparateProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Ray")
	}
	t.Parallel()
	ctx := context.Background()
	type result struct {
		id    sdk.RunIdentity
		sink  *progress.Latest
		nodes int
		err   error
	}
	runs := []*result{{nodes: 4}, {nodes: 5}}
	var wg sync.WaitGroup
	for i, r := range runs {
		r.id = sdk.NewRunIdentity()
		r.id.TaskExecutionPK = int64(100 + i)
		r.sink = &progress.Latest{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := []sdk.RunOption{sdk.WithEngine(testEngine), sdk.WithRunIdentity(r.id), sdk.WithProgress(r.sink),
				sdk.WithProgressInterval(50 * time.Millisecond)}
			if i == 0 {
				_, r.err = sdk.Run(ctx, diamondFlow, 1, opts...)
			} else {
				_, r.err = sdk.Run(ctx, chain5Flow, 1, opts...)
			}
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.err != nil {
			t.Fatalf("run %d: %v", i, r.err)
		}
		p, n := r.sink.Last()
		if p == nil || !p.Final {
			t.Fatalf("run %d: no final publication (%d)", i, n)
		}
		id := p.Identity
		if id.RunID != r.id.RunID || id.TaskExecutionPK != r.id.TaskExecutionPK || p.Summary.RunIdentity != id || p.Snapshot.RunIdentity != id {
			t.Fatalf("run %d: identity %+v, want %+v", i, id, r.id)
		}
		in := p.Snapshot.Ingress
		if len(p.Nodes) != r.nodes || in.Rejected != 0 || in.RejectedByReason.FenceMismatch != 0 || in.AcceptedByKind[progress.KindStarted] != int64(r.nodes) {
			t.Fatalf("run %d: %d nodes (want %d), ingress %+v", i, len(p.Nodes), r.nodes, in)
		}
		for _, d := range p.Details {
			if d.State != detail.NodeStateSucceeded || d.Execution == nil || d.Execution.RayTaskID == nil {
				t.Fatalf("run %d: node %s %s, execution %+v", i, d.NodeID, d.State, d.Execution)
			}
		}
	}
}
