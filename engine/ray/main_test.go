package ray

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayflow/rayflow/sdk"
)

// The test binary is also the leaf binary: Ray workers start it with
// RAYFLOW_LEAF=1.
var (
	testEngine  *Engine
	testBridge  *rayBridge
	testAddress string
)

func TestMain(m *testing.M) {
	ServeLeafIfRequested()
	if out := os.Getenv(clusterOwnerEnv); out != "" {
		os.Exit(runClusterOwner(out)) // TestPrivateClusterOwner's helper
	}
	os.Exit(runTests(m))
}

// needRay skips a test that needs the package's Ray cluster under -short
// (go test -short needs no Ray and no venv).
func needRay(tb testing.TB) {
	tb.Helper()
	if testEngine == nil {
		tb.Skip("needs Ray (not under -short)")
	}
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// Unit tests only: a fake runtime, the frame and error codecs.
		return m.Run()
	}
	addr := os.Getenv("RAYFLOW_RAY_ADDRESS")
	if addr == "" {
		addr = "local" // a private cluster for this test package
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	// RAYFLOW_TEST_LEAF_LIBRARY runs the suite with leaves in the workers'
	// processes: this package's test binary built with go test -c -tags
	// rayflow_leaflib -buildmode=c-shared, and RAYFLOW_BUILD_REVISION set
	// (TestLeafRefusesOtherBuild, which needs an executable identity, then
	// fails by design).
	e, err := New(ctx, Options{Address: addr, NumCPUs: 2, ObjectStoreMemory: 512 << 20, Stderr: logWriter(),
		LeafLibrary: os.Getenv("RAYFLOW_TEST_LEAF_LIBRARY")})
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine/ray tests need a Ray cluster: %v\n", err)
		return 1
	}
	testEngine = e
	testBridge = e.bridgeRuntime().(*rayBridge)
	testAddress = testBridge.GCSAddress
	fmt.Fprintf(os.Stderr, "engine/ray: connected to %s (%s) in %v\n", addr, testAddress, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the engine:", err)
	}
	if leafLib.dir != "" {
		os.RemoveAll(leafLib.dir)
	}
	return code
}

// logWriter sends bridge and worker logs to stderr only when
// RAYFLOW_TEST_LOGS=1 (they are noisy).
func logWriter() io.Writer {
	if os.Getenv("RAYFLOW_TEST_LOGS") == "1" {
		return os.Stderr
	}
	return io.Discard
}

// Job drives the test leaf Work.
type Job struct {
	I       int    `json:"i"`
	SleepMS int    `json:"sleep_ms"`
	Fail    bool   `json:"fail"`
	Panic   bool   `json:"panic"`
	Log     string `json:"log"`     // append "start end" unix-nano lines here
	Marker  string `json:"marker"`  // leaf-kill test: pid file
	Payload int    `json:"payload"` // bytes of a large result
}

// JobFailure is a typed leaf error.
type JobFailure struct {
	Item int `json:"item"`
}

func (e *JobFailure) Error() string { return "job " + strconv.Itoa(e.Item) + " failed" }

func init() { sdk.RegisterErrorType[*JobFailure]() }

var logMu sync.Mutex

// Work is the test leaf.
func Work(ctx context.Context, j Job) (int, error) {
	start := time.Now()
	if j.Panic {
		panic(fmt.Sprintf("job %d panicked", j.I))
	}
	if j.Marker != "" {
		prev, _ := os.ReadFile(j.Marker)
		f, err := os.OpenFile(j.Marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(f, "%d\n", os.Getpid())
		f.Close()
		if len(prev) > 0 { // a retry: succeed at once
			return -j.I, nil
		}
	}
	if j.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(j.SleepMS) * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if j.Log != "" {
		logMu.Lock()
		f, err := os.OpenFile(j.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %d\n", start.UnixNano(), time.Now().UnixNano())
			f.Close()
		}
		logMu.Unlock()
	}
	if j.Fail {
		return 0, &JobFailure{Item: j.I}
	}
	return j.I * j.I, nil
}

// failedAt reads the Job log of a run whose only logging leaf is the
// failing one (the sleeping leaves are cancelled before they log) and
// returns the instant that leaf returned its failure.
func failedAt(t *testing.T, log string) time.Time {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the failing leaf logged nothing: %v", err)
	}
	var started, failed int64
	if n, err := fmt.Sscan(string(b), &started, &failed); n != 2 {
		t.Fatalf("the leaf log %q: %v", b, err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 1 {
		t.Fatalf("%d leaves logged, want only the failing one:\n%s", lines, b)
	}
	return time.Unix(0, failed)
}

// Inc, Double and Show are a chain.
func Inc(_ context.Context, n int) (int, error)    { return n + 1, nil }
func Double(_ context.Context, n int) (int, error) { return 2 * n, nil }
func Show(_ context.Context, n int) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("negative: %d", n)
	}
	return "n=" + strconv.Itoa(n), nil
}

// AddBound adds a bound value.
func AddBound(_ context.Context, b int, n int) (int, error) { return b + n, nil }

// Jobs makes n jobs from a template.
func Jobs(_ context.Context, t JobsSpec) ([]Job, error) {
	out := make([]Job, t.N)
	for i := range out {
		out[i] = t.Template
		out[i].I = i
		if t.FailAt == i {
			out[i].Fail = true
			out[i].SleepMS = t.FailAfterMS
		}
	}
	return out, nil
}

// JobsSpec describes a map input.
type JobsSpec struct {
	N           int `json:"n"`
	Template    Job `json:"template"`
	FailAt      int `json:"fail_at"`
	FailAfterMS int `json:"fail_after_ms"`
}

// Big makes a large string; Size measures one.
func Big(_ context.Context, n int) (string, error)  { return strings.Repeat("x", n), nil }
func Size(_ context.Context, s string) (int, error) { return len(s), nil }

// Sum adds ints.
func Sum(_ context.Context, xs []int) (int, error) {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t, nil
}

var (
	chainFlow = sdk.Chain4(sdk.Step(Inc), sdk.Step(Double), sdk.Bind(AddBound, 100), sdk.Step(Show))
	groupFlow = sdk.Then(sdk.Group(sdk.Step(Inc), sdk.Step(Double), sdk.Bind(AddBound, 7)), sdk.Step(Sum))
	bigFlow   = sdk.Then(sdk.Step(Big), sdk.Step(Size))
	quarter   = sdk.WithResources(sdk.Resources{NumCPUs: 0.25})
)

// mapFlow builds a map over Jobs. Its steps are registered because the
// package-level flows below use the same functions.
func mapFlow(l sdk.Limits) sdk.Flow[JobsSpec, []int] {
	return sdk.Then(sdk.Step(Jobs), sdk.Map(sdk.Step(Work, quarter)).WithLimits(l))
}

var (
	workFlow    = sdk.Step(Work)
	_           = mapFlow(sdk.Limits{MaxConcurrency: 1})
	retryFlow   = sdk.Step(Work, sdk.WithRayOptions(sdk.RayOptions{"max_retries": 1}))
	noRetryFlow = sdk.Step(Work, sdk.WithRayOptions(sdk.RayOptions{"max_retries": 0}))
	seqFlow     = sdk.MapSeq(sdk.Step(Work, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 5})
)

// Booted reports whether the worker-start hook ran in this process.
func Booted(_ context.Context, _ int) (bool, error) {
	return os.Getenv("RAYFLOW_TEST_BOOTED") == "1", nil
}

var bootFlow = sdk.Step(Booted, sdk.WithBootstrap())

func init() {
	sdk.RegisterBootstrap(func(context.Context) error { return os.Setenv("RAYFLOW_TEST_BOOTED", "1") })
}

// FailSpec fails after a short delay.
func FailSpec(_ context.Context, s JobsSpec) (int, error) {
	time.Sleep(200 * time.Millisecond)
	return 0, &JobFailure{Item: -1}
}

// groupMapFlow races a long map against a failing step.
var groupMapFlow = sdk.Group(
	sdk.Then(sdk.Step(Jobs), sdk.Then(sdk.Map(sdk.Step(Work, quarter)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 100}), sdk.Step(Sum))),
	sdk.Step(FailSpec),
)
