package prom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rayflow/rayflow/telemetry/prom"
)

// The lint flags what it must (each case one problem) and passes bounded
// labels at the cap.
func TestLintFamiliesFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		labels []string
		values [][]string
		want   string // "" : no problem
	}{
		{"bounded", []string{"queue", "state"}, [][]string{{"default", "RUNNING"}, {"bulk", "QUEUED"}}, ""},
		{"run id label", []string{"run_id"}, [][]string{{"x"}}, `label "run_id" names a per-entity value`},
		{"task label", []string{"task"}, [][]string{{"x"}}, `label "task" names a per-entity value`},
		{"uuid value", []string{"queue"}, [][]string{{"0b5b5c1e-8f43-4c51-9d8f-0a6a1f3c2b11"}}, "looks unbounded"},
		{"digest value", []string{"queue"}, [][]string{{"sha256:abc"}}, "looks unbounded"},
		{"numeric value", []string{"queue"}, [][]string{{"12345"}}, "looks unbounded"},
		{"long value", []string{"queue"}, [][]string{{strings.Repeat("ab-", 22)}}, "looks unbounded"},
		{"at the cap", []string{"queue"}, seq(prom.MaxLabelValues), ""},
		{"over the cap", []string{"queue"}, seq(prom.MaxLabelValues + 1), "more than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rayflow_lint_test_total", Help: "A test counter."}, tc.labels)
			reg.MustRegister(c)
			for _, v := range tc.values {
				c.WithLabelValues(v...).Inc()
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			errs := prom.LintFamilies(mfs)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("problems: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Fatalf("problems %v, want one with %q", errs, tc.want)
			}
		})
	}
	// Naming conventions (promlint): a counter without _total.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "rayflow_things", Help: "Things."}))
	mfs, _ := reg.Gather()
	if errs := prom.LintFamilies(mfs); len(errs) == 0 {
		t.Errorf("a counter without _total passed the lint")
	}
}

func seq(n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{"q" + string(rune('a'+i/26)) + string(rune('a'+i%26))}
	}
	return out
}
