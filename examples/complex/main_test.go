package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
	"github.com/rayflow/rayflow/sdk/flowgraph"
)

func TestWorkflowResult(t *testing.T) {
	t.Parallel()
	for _, sequential := range []bool{false, true} {
		t.Run(fmt.Sprint("sequential=", sequential), func(t *testing.T) {
			t.Parallel()
			var opts []sdk.RunOption
			if sequential {
				opts = append(opts, sdk.Sequential())
			}
			got, err := sdk.Run(context.Background(), Workflow, Request{FastItems: 5, SlowItems: 3}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			// fast: 0²+1²+2²+3²+4² = 30; slow: 0³+1³+2³ = 9.
			want := Result{
				Branches: []BranchSummary{{Branch: "fast", Items: 5, Total: 30}, {Branch: "slow", Items: 3, Total: 9}},
				Items:    8,
				Total:    39,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("result (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			const wantJSON = `{"branches":[{"branch":"fast","items":5,"total":30},{"branch":"slow","items":3,"total":9}],"items":8,"total":39}`
			if string(b) != wantJSON {
				t.Fatalf("JSON = %s, want %s", b, wantJSON)
			}
		})
	}
}

func TestWorkflowEmptyBranches(t *testing.T) {
	t.Parallel()
	got, err := sdk.Run(context.Background(), Workflow, Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Branches: []BranchSummary{{Branch: "fast"}, {Branch: "slow"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("result (-want +got):\n%s", diff)
	}
}

func TestDeterministicFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		branch   string
		item     int
		node     string
		callable string
	}{
		{"fast", 0, "0.1.g0.1.m0", "FastLeaf"},
		{"fast", 4, "0.1.g0.1.m4", "FastLeaf"},
		{"slow", 0, "0.1.g1.1.m0", "SlowLeaf"},
		{"slow", 2, "0.1.g1.1.m2", "SlowLeaf"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.branch, c.item), func(t *testing.T) {
			t.Parallel()
			// The other branch's leaves take long enough to be cancelled, so
			// this also checks that the failing leaf's error, not a
			// sibling's cancellation, is what Run returns.
			req := Request{FastItems: 5, SlowItems: 3, FailureBranch: c.branch, FailureItem: c.item}
			if c.branch == "fast" {
				req.SlowWork = 50 * time.Millisecond
			} else {
				req.FastWork = 50 * time.Millisecond
			}
			_, err := sdk.Run(context.Background(), Workflow, req)
			var lf *LeafFailure
			if !errors.As(err, &lf) {
				t.Fatalf("want a *LeafFailure through errors.As, got %v", err)
			}
			if lf.Branch != c.branch || lf.Item != c.item {
				t.Fatalf("LeafFailure = %+v, want branch %s item %d", lf, c.branch, c.item)
			}
			var se *sdk.StepError
			if !errors.As(err, &se) {
				t.Fatalf("want a *sdk.StepError naming the node, got %T %v", err, err)
			}
			if se.Node != c.node || se.Callable != symbolPrefix+c.callable {
				t.Fatalf("StepError names node %s (%s), want %s (%s)", se.Node, se.Callable, c.node, symbolPrefix+c.callable)
			}
			if !strings.Contains(err.Error(), c.node) {
				t.Fatalf("the error text %q does not name the node path %s", err, c.node)
			}
		})
	}
}

func TestBuildConfigRejectsBadRequests(t *testing.T) {
	t.Parallel()
	for _, r := range []Request{
		{FastItems: -1},
		{SlowItems: MaxBranchItems + 1},
		{FastItems: 1, FastWork: -1},
		{FastItems: 2, FailureBranch: "medium"},
		{FastItems: 2, FailureBranch: "fast", FailureItem: 2},
		{SlowItems: 2, FailureBranch: "slow", FailureItem: -1},
		{FastItems: 2, FailureBranch: "slow", FailureItem: 0}, // the slow branch is empty
	} {
		_, err := sdk.Run(context.Background(), Workflow, r)
		var se *sdk.StepError
		if !errors.As(err, &se) || se.Node != "0.0" {
			t.Errorf("%+v: want a StepError from build_config (node 0.0), got %v", r, err)
		}
	}
}

// symbolPrefix is this package's prefix in Go symbol names: "main." in the
// command, but the import path in its test binary.
var symbolPrefix = strings.TrimSuffix(runtime.FuncForPC(reflect.ValueOf(BuildConfig).Pointer()).Name(), "BuildConfig")

// Every step is a package-level function, so its callable identity is
// resolvable by name in another process running this binary.
func TestEveryCallableIsPackageLevel(t *testing.T) {
	t.Parallel()
	var names []string
	var walk func(n *flowgraph.Node)
	walk = func(n *flowgraph.Node) {
		if n.Step != nil {
			names = append(names, n.Step.Callable.Name)
			if !n.Step.Callable.Resolvable {
				t.Errorf("step %s is not resolvable by name", n.Step.Callable.Name)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(sdkrt.Graph(Workflow))
	var want []string
	for _, f := range []string{"BuildConfig", "BuildFastItems", "FastLeaf", "SummarizeFast",
		"BuildSlowItems", "SlowLeaf", "SummarizeSlow", "SummarizeWorkflow"} {
		want = append(want, symbolPrefix+f)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("callables (-want +got):\n%s", diff)
	}
	if err := sdkrt.Validate(sdkrt.Graph(Workflow)); err != nil {
		t.Fatal(err)
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // the last stdout line
		stderr string // a substring of stderr
	}{
		{"defaults", nil, 0, `{"branches":[{"branch":"fast","items":4,"total":14},{"branch":"slow","items":2,"total":1}],"items":6,"total":15}`, ""},
		{"sequential", []string{"-sequential", "-fast-work=0", "-slow-work=0", "-fast-items=3", "-slow-items=3"}, 0,
			`{"branches":[{"branch":"fast","items":3,"total":5},{"branch":"slow","items":3,"total":9}],"items":6,"total":14}`, ""},
		{"slow failure", []string{"-failure-branch", "slow", "-failure-item", "0"}, 1, "", "step 0.1.g1.1.m0 (" + symbolPrefix + "SlowLeaf): complex: slow item 0 failed"},
		{"fast failure", []string{"-failure-branch=fast", "-failure-item=3"}, 1, "", "step 0.1.g0.1.m3 (" + symbolPrefix + "FastLeaf): complex: fast item 3 failed"},
		{"item out of range", []string{"-failure-branch=slow", "-failure-item=2"}, 2, "", "failure item 2 is not an item of the slow branch"},
		{"unknown branch", []string{"-failure-branch=medium"}, 2, "", `failure branch must be "fast" or "slow"`},
		{"unknown flag", []string{"-count=3"}, 2, "", "flag provided but not defined"},
		{"extra argument", []string{"now"}, 2, "", "unexpected arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
			if last := lines[len(lines)-1]; last != c.stdout {
				t.Fatalf("last stdout line = %q, want %q", last, c.stdout)
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), c.stderr)
			}
		})
	}
}
