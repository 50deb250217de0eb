package sdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/gen/plan"
)

// callNode returns the plan's call node of the step named by its callable
// symbol's suffix.
func callNodes(m *Materialized) []*plan.CallNode {
	var out []*plan.CallNode
	for _, n := range m.Plan.Nodes {
		if c, ok := n.(*plan.CallNode); ok {
			out = append(out, c)
		}
	}
	return out
}

// A resumable map and a declared code version are part of the plan
// (bounds.maximum_ledger_result_bytes, code_version), present only when
// used: a plan without them is byte for byte the plan it was before.
func TestResumePlan(t *testing.T) {
	limits := Limits{MaxConcurrency: 16, MaxItems: 1000}
	plain := mustMaterialize(t, Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits), Step(PlanSum)))
	for _, key := range []string{"maximum_ledger_result_bytes", "code_version"} {
		if strings.Contains(string(plain.Canonical), key) {
			t.Fatalf("a plan without resume carries %s", key)
		}
	}
	cases := []struct {
		name     string
		flow     Flow[int, int]
		capBytes int64  // 0: absent
		version  string // of the map's body step; "": absent
	}{
		{"resume, default cap", Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits).WithResume(), Step(PlanSum)), ResumeResultBytesDefault, ""},
		{"resume, cap 1", Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(1)), Step(PlanSum)), 1, ""},
		{"resume, cap at the maximum", Chain3(Step(PlanBuild), Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(MaxResumeResultBytes)), Step(PlanSum)), MaxResumeResultBytes, ""},
		{"version 1", Chain3(Step(PlanBuild), Map(Step(PlanSquare, CodeVersion("1"))).WithLimits(limits), Step(PlanSum)), 0, "1"},
		{"version 2", Chain3(Step(PlanBuild), Map(Step(PlanSquare, CodeVersion("2"))).WithLimits(limits), Step(PlanSum)), 0, "2"},
		{"version at the cap", Chain3(Step(PlanBuild), Map(Step(PlanSquare, CodeVersion(strings.Repeat("v", MaxCodeVersionBytes)))).WithLimits(limits), Step(PlanSum)), 0, strings.Repeat("v", MaxCodeVersionBytes)},
		{"resume and version", Chain3(Step(PlanBuild), Map(Step(PlanSquare, CodeVersion("2"))).WithLimits(limits).WithResume(), Step(PlanSum)), ResumeResultBytesDefault, "2"},
	}
	seen := map[string]string{plain.Fingerprint: "plain"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustMaterialize(t, c.flow)
			if err := m.Plan.Validate(); err != nil {
				t.Fatalf("the plan does not validate: %v", err)
			}
			got := int64(0)
			if b := mapBounds(t, m).MaximumLedgerResultBytes; b != nil {
				got = *b
			}
			if got != c.capBytes {
				t.Fatalf("maximum_ledger_result_bytes = %d, want %d", got, c.capBytes)
			}
			versions := 0
			for _, n := range callNodes(m) {
				if n.CodeVersion == nil {
					continue
				}
				versions++
				if n.ID != "0.1.m*" || *n.CodeVersion != c.version {
					t.Fatalf("node %s has code_version %q, want only 0.1.m* with %q", n.ID, *n.CodeVersion, c.version)
				}
			}
			if want := min(len(c.version), 1); versions != want {
				t.Fatalf("%d nodes carry a code_version, want %d", versions, want)
			}
			if other, dup := seen[m.Fingerprint]; dup {
				t.Fatalf("same fingerprint as %q: not fingerprinted", other)
			}
			seen[m.Fingerprint] = c.name
		})
	}
}

// The result cap and the code version are checked at the edges: a bad
// value is an *DefinitionError with its own code, at build time.
func TestResumeDefinitionErrors(t *testing.T) {
	limits := Limits{MaxConcurrency: 4}
	cases := []struct {
		name string
		flow Flow[[]int, []int]
		code DefinitionCode // "": valid
	}{
		{"cap 1", Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(1)), ""},
		{"cap at the maximum", Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(MaxResumeResultBytes)), ""},
		{"cap one over", Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(MaxResumeResultBytes + 1)), CodeInvalidResume},
		{"cap 0", Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(0)), CodeInvalidResume},
		{"cap negative", Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(-1)), CodeInvalidResume},
		{"version at the cap", Map(Step(PlanSquare, CodeVersion(strings.Repeat("x", MaxCodeVersionBytes)))), ""},
		{"version one over", Map(Step(PlanSquare, CodeVersion(strings.Repeat("x", MaxCodeVersionBytes+1)))), CodeInvalidVersion},
		{"version empty", Map(Step(PlanSquare, CodeVersion(""))), CodeInvalidVersion},
		{"version with a space", Map(Step(PlanSquare, CodeVersion("v 2"))), CodeInvalidVersion},
		{"version not ASCII", Map(Step(PlanSquare, CodeVersion("vé"))), CodeInvalidVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Materialize(c.flow, withCodeContext(noEnv))
			if c.code == "" {
				if err != nil {
					t.Fatalf("Materialize: %v", err)
				}
				return
			}
			var de *DefinitionError
			if !errors.As(err, &de) || de.Code != c.code || !errors.Is(err, ErrInvalidDefinition) {
				t.Fatalf("Materialize error = %v, want a *DefinitionError %s", err, c.code)
			}
		})
	}
	// WithResume on a step is NOT_A_MAP.
	_, err := Materialize(Step(PlanSquare).WithResume(), withCodeContext(noEnv))
	var de *DefinitionError
	if !errors.As(err, &de) || de.Code != CodeNotAMap {
		t.Fatalf("WithResume on a step: %v, want NOT_A_MAP", err)
	}
}

// The result cap survives Reduce and WithResultBuffer (they copy the map).
func TestResumeSurvivesFoldAndBuffer(t *testing.T) {
	limits := Limits{MaxConcurrency: 16, MaxItems: 100}
	actor := ActorOptions{NumCPUs: 1, Memory: 1 << 20}
	folded := mustMaterialize(t, Reduce(Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(100)), PlanAdd, 0, FoldOptions{MaxSerializedBytes: 1 << 20, Actor: actor}))
	buffered := mustMaterialize(t, Map(Step(PlanSquare)).WithLimits(limits).WithResume(ResumeResultCap(100)).WithResultBuffer(ResultBuffer{MaxSerializedBytes: 1 << 20, Actor: actor}))
	for name, m := range map[string]*Materialized{"fold": folded, "buffer": buffered} {
		if b := mapBounds(t, m).MaximumLedgerResultBytes; b == nil || *b != 100 {
			t.Fatalf("%s: maximum_ledger_result_bytes = %v, want 100", name, b)
		}
	}
}
