package ray

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/sdkhost"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

// CodeErr is a registered typed error that the tests wrap.
type CodeErr struct {
	Code int `json:"code"`
}

func (e *CodeErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

// ErrNegative is a registered sentinel.
var ErrNegative = errors.New("negative input")

func init() {
	sdk.RegisterErrorType[*CodeErr]()
	sdk.RegisterSentinel(ErrNegative)
}

// Billing fails with a wrapped typed error, or a wrapped sentinel for a
// negative input.
func Billing(_ context.Context, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("checking item %d: %w", n, ErrNegative)
	}
	return 0, fmt.Errorf("calling billing for item %d: %w", n, &CodeErr{429})
}

// Panics panics.
func Panics(_ context.Context, n int) (int, error) { panic(fmt.Sprintf("boom %d", n)) }

// NotFinite returns a value the codec refuses (a NaN) for 2, else n.
func NotFinite(_ context.Context, n int) (float64, error) {
	if n == 2 {
		return math.NaN(), nil
	}
	return float64(n), nil
}

var (
	billingFlow   = sdk.Step(Billing)
	panicsFlow    = sdk.Step(Panics)
	notFiniteFlow = sdk.Step(NotFinite)
)

// leafConn runs serveLeaves in this process over pipes, as a Ray worker
// drives a leaf process.
type leafConn struct {
	w    io.WriteCloser
	r    *bufio.Reader
	done chan error
}

func startLeaf(t *testing.T, own string) *leafConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &leafConn{w: inW, r: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := serveLeaves(context.Background(), inR, outW, sdk.DefaultCodec, func() (string, error) { return own, nil })
		outW.CloseWithError(io.EOF)
		c.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return c
}

func (c *leafConn) send(t *testing.T, h map[string]any, sections ...[]byte) *frame {
	t.Helper()
	if err := writeFrame(c.w, h, sections...); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(c.r)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The leaf handshake: protocol version and binary digest; a leaf whose
// digest is not the plan's refuses and ends, naming both digests.
func TestLeafHandshake(t *testing.T) {
	t.Parallel()
	own := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("b", 64)
	for _, tc := range []struct {
		name   string
		hello  map[string]any
		reason string
	}{
		{"same digest", map[string]any{"protocol": leafProtocolVersion, "digest": own}, ""},
		{"no digest (a revision)", map[string]any{"protocol": leafProtocolVersion, "digest": ""}, ""},
		{"other build", map[string]any{"protocol": leafProtocolVersion, "digest": other}, "digest_mismatch"},
		{"old protocol", map[string]any{"protocol": 1, "digest": own}, "protocol"},
		{"next protocol", map[string]any{"protocol": leafProtocolVersion + 1, "digest": own}, "protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startLeaf(t, own)
			f := c.send(t, map[string]any{"hello": tc.hello})
			var r struct {
				OK    bool       `json:"ok"`
				Hello *leafHello `json:"hello"`
				Error *errorInfo `json:"error"`
			}
			if err := f.decode(&r); err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if !r.OK || r.Hello == nil || r.Hello.Digest != own || r.Hello.Protocol != leafProtocolVersion {
					t.Fatalf("want an accepted hello with the own digest, got %+v", r)
				}
				return
			}
			if r.OK || r.Error == nil || r.Error.Kind != "leaf_start" || r.Error.Reason != tc.reason {
				t.Fatalf("want a %s refusal, got %+v", tc.reason, r)
			}
			select {
			case err := <-c.done:
				if err == nil {
					t.Fatal("the leaf refused but ended without an error")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the leaf did not end after refusing")
			}
			le := r.Error.toError(sdk.DefaultCodec, "0", nil)
			if tc.reason == "digest_mismatch" {
				if !errors.Is(le, ErrBuildMismatch) || !strings.Contains(le.Error(), own) || !strings.Contains(le.Error(), other) {
					t.Fatalf("want ErrBuildMismatch naming both digests, got %v", le)
				}
			} else if errors.Is(le, ErrBuildMismatch) {
				t.Fatalf("a protocol refusal matched ErrBuildMismatch: %v", le)
			}
		})
	}
}

// errorCase is a flow that fails on its input in.
type errorCase struct {
	name string
	flow sdk.Flow[int, int]
	in   int
}

// leafErrorCases fail in their one leaf: a typed error, a sentinel, a panic.
var leafErrorCases = []errorCase{
	{"typed wrapped", billingFlow, 2},
	{"sentinel wrapped", billingFlow, -1},
	{"panic", panicsFlow, 3},
}

// A leaf's error crosses the leaf protocol with its whole chain: the
// same Error() text and the same errors.Is/As answers as the local run.
func TestLeafErrorChain(t *testing.T) {
	t.Parallel()
	c := startLeaf(t, "sha256:x")
	c.send(t, map[string]any{"hello": map[string]any{"protocol": leafProtocolVersion}})
	for _, tc := range leafErrorCases {
		in, _ := sdk.DefaultCodec.Marshal(tc.in)
		m, err := sdk.Materialize(tc.flow)
		if err != nil {
			t.Fatal(err)
		}
		name := sdkrt.PlanBindings(m).Root.Step.Callable.Name
		f := c.send(t, map[string]any{"name": name, "node": "0"}, nil, in)
		var r struct {
			OK    bool       `json:"ok"`
			Error *errorInfo `json:"error"`
		}
		if err := f.decode(&r); err != nil || r.OK || r.Error == nil {
			t.Fatalf("%s: want a failure, got %+v %v", tc.name, r, err)
		}
		r.Error.Kind = "leaf" // as the worker marks it (bridge.py error_info)
		remote := r.Error.toError(sdk.DefaultCodec, "0", f.section(0))
		_, local := sdk.Run(context.Background(), tc.flow, tc.in)
		compareErrors(t, tc.name, local, remote)
	}
}

// compareErrors checks that a Ray error answers like the local one.
func compareErrors(t *testing.T, name string, local, remote error) {
	t.Helper()
	if local == nil || remote == nil {
		t.Fatalf("%s: local %v, ray %v", name, local, remote)
	}
	if local.Error() != remote.Error() {
		t.Errorf("%s: Error() differs:\nlocal %q\nray   %q", name, local, remote)
	}
	if strings.Count(remote.Error(), "rayflow: ") != 1 {
		t.Errorf("%s: want one rayflow: prefix, got %q", name, remote)
	}
	if l, r := errors.Is(local, ErrNegative), errors.Is(remote, ErrNegative); l != r {
		t.Errorf("%s: errors.Is(ErrNegative): local %v, ray %v", name, l, r)
	}
	var lc, rc *CodeErr
	if l, r := errors.As(local, &lc), errors.As(remote, &rc); l != r || (l && *lc != *rc) {
		t.Errorf("%s: errors.As(*CodeErr): local %v %v, ray %v %v", name, l, lc, r, rc)
	}
	var lp, rp *sdk.PanicError
	if l, r := errors.As(local, &lp), errors.As(remote, &rp); l != r || (l && lp.Value != rp.Value) {
		t.Errorf("%s: errors.As(*sdk.PanicError): local %v, ray %v", name, l, r)
	}
	var ls, rs *sdk.StepError
	if l, r := errors.As(local, &ls), errors.As(remote, &rs); !l || !r || ls.Node != rs.Node || ls.Callable != rs.Callable {
		t.Errorf("%s: StepError: local %v, ray %v", name, ls, rs)
	}
}

// The same errors on a real Ray cluster.
func TestErrorsAcrossRay(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, tc := range append(leafErrorCases, errorCase{"in a chain", sdk.Then(sdk.Step(Inc), billingFlow), 1}) {
		_, remote := runOn(ctx, testEngine, tc.flow, tc.in)
		_, local := sdk.Run(ctx, tc.flow, tc.in)
		compareErrors(t, tc.name, local, remote)
	}
	// A map item's error names the item on both engines.
	items := sdk.Map(billingFlow).WithLimits(sdk.Limits{MaxConcurrency: 1, MaxItems: 10})
	_, remote := runOn(ctx, testEngine, items, []int{-5})
	_, local := sdk.Run(ctx, items, []int{-5})
	compareErrors(t, "map item", local, remote)

	// A result the codec refuses is the node's *sdk.ValueError on both
	// engines (a step, a map item, a batched map item), not a step error.
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, opts ...sdk.RunOption) error
	}{
		{"refused output", func(ctx context.Context, opts ...sdk.RunOption) error {
			_, err := sdk.Run(ctx, sdk.Then(sdk.Step(Inc), notFiniteFlow), 1, opts...)
			return err
		}},
		{"refused item output", func(ctx context.Context, opts ...sdk.RunOption) error {
			_, err := sdk.Run(ctx, sdk.Map(notFiniteFlow).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}), []int{1, 2}, opts...)
			return err
		}},
		{"refused batched item output", func(ctx context.Context, opts ...sdk.RunOption) error {
			_, err := sdk.Run(ctx, sdk.Map(notFiniteFlow).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 10}).WithItemBatching(2), []int{1, 2, 3}, opts...)
			return err
		}},
	} {
		local, remote := tc.run(ctx), tc.run(ctx, sdk.WithEngine(testEngine))
		var lv, rv *sdk.ValueError
		if !errors.As(local, &lv) || !errors.As(remote, &rv) {
			t.Errorf("%s: want a *sdk.ValueError on both engines: local %v, ray %v", tc.name, local, remote)
			continue
		}
		if local.Error() != remote.Error() || lv.Node != rv.Node || lv.Value != rv.Value || lv.Type != rv.Type {
			t.Errorf("%s: differ:\nlocal %q (%+v)\nray   %q (%+v)", tc.name, local, *lv, remote, *rv)
		}
		var ls, rs *sdk.StepError
		if errors.As(local, &ls) || errors.As(remote, &rs) {
			t.Errorf("%s: a refused value is not a step error: local %v, ray %v", tc.name, ls, rs)
		}
	}
}

// A plan made by another build is refused by the leaf process, naming
// both digests, before the step runs.
func TestLeafRefusesOtherBuild(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m, err := sdk.Materialize(workFlow, sdk.ForRay())
	if err != nil {
		t.Fatal(err)
	}
	other := "executable:sha256:" + strings.Repeat("0", 64)
	m.Plan.Definition.BuildRevision = &other
	_, err = sdkhost.RunPlan(ctx, m, Job{I: 1}, sdk.WithEngine(testEngine))
	var ls *TaskError
	if !errors.Is(err, ErrBuildMismatch) || !errors.As(err, &ls) || ls.Kind != "leaf_start" || ls.Want != strings.TrimPrefix(other, "executable:") || ls.Got == "" || !strings.Contains(err.Error(), ls.Got) {
		t.Fatalf("want ErrBuildMismatch naming both digests, got %v", err)
	}
}
