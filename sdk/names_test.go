package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

// TestChainOfAnyLength: a chain of any number of same-typed flows, written
// without nesting, is the same plan as the nested form and runs in order.
func TestChainOfAnyLength(t *testing.T) {
	t.Parallel()
	flat := sdk.ChainOf(sdk.Step(Inc), sdk.Step(Double), sdk.Step(Inc), sdk.Step(Double), sdk.Step(Inc), sdk.Step(Double), sdk.Step(Inc))
	nested := sdk.Then(sdk.Chain6(sdk.Step(Inc), sdk.Step(Double), sdk.Step(Inc), sdk.Step(Double), sdk.Step(Inc), sdk.Step(Double)), sdk.Step(Inc))
	got, err := sdk.Run(context.Background(), flat, 0)
	if err != nil || got != ((((0+1)*2+1)*2+1)*2+1) {
		t.Fatalf("ChainOf of 7 = %v, %v", got, err)
	}
	a, b := mustPlan(t, flat), mustPlan(t, nested)
	if a.Fingerprint != b.Fingerprint || len(a.Plan.Nodes) != 7 {
		t.Fatalf("ChainOf and nested Then differ: %s (%d nodes) vs %s", a.Fingerprint, len(a.Plan.Nodes), b.Fingerprint)
	}
	if one := mustPlan(t, sdk.ChainOf(sdk.Step(Inc))); one.Fingerprint != mustPlan(t, sdk.Step(Inc)).Fingerprint {
		t.Fatal("ChainOf of one flow is not that flow")
	}
	var de *sdk.DefinitionError
	if _, err := sdk.Materialize(sdk.ChainOf[int]()); !errors.As(err, &de) || de.Code != sdk.CodeEmpty {
		t.Fatalf("ChainOf of nothing: %v", err)
	}
}

func mustPlan[In, Out any](t *testing.T, f sdk.Flow[In, Out]) *sdk.Materialized {
	t.Helper()
	m, err := sdk.Materialize(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLabels: Named is the one label; its text stays out of the plan and
// is checked at the contract's cap.
func TestLabels(t *testing.T) {
	t.Parallel()
	plain := mustPlan(t, sdk.Step(Inc))
	for _, label := range []string{"a", "another", strings.Repeat("é", sdk.MaxLabelBytes/2)} {
		if m := mustPlan(t, sdk.Step(Inc).Named(label)); m.Fingerprint != plain.Fingerprint {
			t.Errorf("label %q changed the fingerprint", label)
		}
	}
	var de *sdk.DefinitionError
	for _, bad := range []string{strings.Repeat("x", sdk.MaxLabelBytes+1), "\xff"} {
		if _, err := sdk.Materialize(sdk.Then(sdk.Step(Inc), sdk.Step(Inc).Named(bad))); !errors.As(err, &de) || de.Code != sdk.CodeInvalidLabel || de.Path != "0.1" {
			t.Errorf("label of %d bytes: %v", len(bad), err)
		}
	}
	for _, c := range []struct {
		f    sdk.Flow[int, int]
		want string
	}{
		{sdk.Step(Inc).Named("increment"), "increment"},
		{sdk.Step(Inc), "Inc"},
	} {
		if got := sdkrt.Graph(c.f).DisplayLabel(); got != c.want {
			t.Errorf("DisplayLabel = %q, want %q", got, c.want)
		}
	}
	if got := sdkrt.Graph(sdk.Map(sdk.Step(Inc))).DisplayLabel(); got != "map" {
		t.Errorf("map DisplayLabel = %q", got)
	}
}
