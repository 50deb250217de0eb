package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/gen/detail"
	"github.com/rayflow/rayflow/progress"
	"github.com/rayflow/rayflow/sdk"
)

// Output-preview projectors, one per envelope status.
func PvAvailable(v int) (any, error) { return map[string]any{"v": v}, nil }
func PvRedacted(v int) (any, error)  { return map[string]any{"api_key": "k-1234", "v": v}, nil }
func PvTooLarge(v int) (any, error)  { return make([]any, 16+1), nil } // preview profile v1: at most 16 list items
func PvFails(int) (any, error)       { return nil, errors.New("projector failed") }
func PvPanics(int) (any, error)      { panic("projector panicked") }

// PvProbe records that it ran in the file its step returned.
func PvProbe(path string) (any, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	f.WriteString("ran\n")
	return "ran", f.Close()
}

// Ident returns its input.
func Ident(_ context.Context, s string) (string, error) { return s, nil }

var (
	previewFlow = sdk.Group(
		sdk.Step(Inc).WithOutputPreview(PvAvailable),
		sdk.Step(Inc).WithOutputPreview(PvRedacted),
		sdk.Step(Inc).WithOutputPreview(PvTooLarge),
		sdk.Step(Inc).WithOutputPreview(PvFails),
		sdk.Step(Inc).WithOutputPreview(PvPanics),
		sdk.Step(Inc),
	)
	previewFailFlow  = sdk.Step(Work).WithOutputPreview(PvAvailable)
	previewProbeFlow = sdk.Step(Ident).WithOutputPreview(PvProbe)
)

func nodeByID(s *progress.Snapshot, id string) *progress.Node {
	for i := range s.Graph.Nodes {
		if s.Graph.Nodes[i].NodeID == id {
			return &s.Graph.Nodes[i]
		}
	}
	return nil
}

// Under full reporting each projector runs beside its leaf after success;
// its envelope reaches the snapshot and never changes the leaf's result.
func TestOutputPreviews(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	got, pub, err := runPolicy(ctx, previewFlow, 41, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 42 {
			t.Fatalf("result %d = %d: a projector changed a leaf result (%v)", i, v, got)
		}
	}
	s := pub.Snapshot
	want := []struct {
		status detail.PreviewAvailability
		value  string
	}{
		{detail.PreviewAvailabilityAvailable, `{"v":42}`},
		{detail.PreviewAvailabilityRedacted, `{"api_key":"[REDACTED]","v":42}`},
		{detail.PreviewAvailabilityTooLarge, "null"},
		{detail.PreviewAvailabilityFailed, "null"},
		{detail.PreviewAvailabilityFailed, "null"},
	}
	for i, w := range want {
		n := nodeByID(s, "0.g"+string(rune('0'+i)))
		if n == nil || n.OutputPreview == nil {
			t.Fatalf("node 0.g%d: no preview (%+v)", i, n)
		}
		if n.State != detail.NodeStateSucceeded || n.OutputPreview.Availability != w.status || string(n.OutputPreview.Value) != w.value {
			t.Errorf("node %s: state %s, preview %s %s; want SUCCEEDED, %s %s", n.NodeID, n.State,
				n.OutputPreview.Availability, n.OutputPreview.Value, w.status, w.value)
		}
	}
	if n := nodeByID(s, "0.g5"); n == nil || n.OutputPreview != nil {
		t.Errorf("a step without a projector has a preview: %+v", n)
	}
	if s.Ingress.Rejected != 0 || s.Ingress.AcceptedByKind[progress.KindOutputPreview] != 10 {
		t.Errorf("ingress %+v", s.Ingress)
	}

	// A failed leaf never gets a successful preview: UNAVAILABLE.
	_, pub, err = runPolicy(ctx, previewFailFlow, Job{I: 3, Fail: true}, "")
	if err == nil {
		t.Fatal("the failing step succeeded")
	}
	if n := nodeByID(pub.Snapshot, "0"); n == nil || n.State != detail.NodeStateFailed || n.OutputPreview == nil ||
		n.OutputPreview.Availability != detail.PreviewAvailabilityUnavailable {
		t.Fatalf("failed node %+v", n)
	}
}

// terminal_only and disabled never run the projector.
func TestOutputPreviewPolicies(t *testing.T) {
	needRay(t)
	ctx := context.Background()
	for _, pol := range []common.ReportingPolicy{common.ReportingPolicyTerminalOnly, common.ReportingPolicyDisabled, common.ReportingPolicyFull} {
		path := filepath.Join(t.TempDir(), "probe")
		got, _, err := runPolicy(ctx, previewProbeFlow, path, pol)
		if err != nil || got != path {
			t.Fatalf("%s: %q, %v", pol, got, err)
		}
		_, err = os.Stat(path)
		if ran := err == nil; ran != (pol == common.ReportingPolicyFull) {
			t.Errorf("%s: projector ran = %v", pol, ran)
		}
	}
}
