package prom

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// MaxLabelValues is the most distinct values LintFamilies accepts for one
// label of one metric family.
const MaxLabelValues = 64

// unboundedNames are label names whose values are per task, run, node,
// request or error: never a label.
var unboundedNames = []string{"id", "task", "run", "node", "item", "trace", "span", "worker", "error", "err", "message", "msg",
	"path", "url", "uri", "user", "principal", "token", "callable", "fingerprint", "job", "input", "result", "attempt",
	"generation", "host", "ip", "pid"}

// unboundedValue matches label values that look like identifiers: UUIDs,
// long hex or base64 strings, digests, numbers of 4 digits or more, paths.
var unboundedValue = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-|[0-9a-f]{16,}|sha256:|^[0-9]{4,}$|^[A-Za-z0-9+/_-]{32,}={0,2}$|[/\\]|\s`)

// LintFamilies checks metric families against Prometheus naming
// conventions (promlint) and against unbounded labels: a label name that
// names a per-entity value (task, run, node, …, or any *_id), a label
// value that looks like an identifier (UUID, long hex, digest, number,
// path) or longer than 64 bytes, and more than MaxLabelValues distinct
// values of one label. It returns every problem found.
func LintFamilies(mfs []*dto.MetricFamily) []error {
	var errs []error
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range problems {
		errs = append(errs, fmt.Errorf("%s: %s", p.Metric, p.Text))
	}
	for _, mf := range mfs {
		values := map[string]map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				name, v := lp.GetName(), lp.GetValue()
				if values[name] == nil {
					values[name] = map[string]bool{}
					if unboundedName(name) {
						errs = append(errs, fmt.Errorf("%s: label %q names a per-entity value", mf.GetName(), name))
					}
				}
				if !values[name][v] && (len(v) > 64 || unboundedValue.MatchString(v)) {
					errs = append(errs, fmt.Errorf("%s: label %s=%q looks unbounded", mf.GetName(), name, v))
				}
				values[name][v] = true
			}
		}
		for name, vs := range values {
			if len(vs) > MaxLabelValues {
				errs = append(errs, fmt.Errorf("%s: label %q has %d values (more than %d)", mf.GetName(), name, len(vs), MaxLabelValues))
			}
		}
	}
	return errs
}

func unboundedName(name string) bool {
	n := strings.ToLower(name)
	return slices.Contains(unboundedNames, n) || strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "_ids") ||
		strings.HasSuffix(n, "_pk") || strings.HasSuffix(n, "_uuid")
}
