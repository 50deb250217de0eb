package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/gen/common"
	"github.com/rayflow/rayflow/sdk"
)

// Rev is an item that finishes after SleepMS and logs its index.
type Rev struct {
	I       int    `json:"i"`
	SleepMS int    `json:"sleep_ms"`
	Log     string `json:"log"`
	Pad     int    `json:"pad"` // result padding bytes
}

// Echo returns its item's index as a string (padded) after its delay.
func Echo(ctx context.Context, r Rev) (string, error) {
	time.Sleep(time.Duration(r.SleepMS) * time.Millisecond)
	if r.Log != "" {
		logMu.Lock()
		f, err := os.OpenFile(r.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.WriteString(strconv.Itoa(r.I) + "\n")
			f.Close()
		}
		logMu.Unlock()
	}
	return strconv.Itoa(r.I) + strings.Repeat(".", r.Pad), nil
}

// Concat is a non-commutative reducer.
func Concat(_ context.Context, acc string, item string) (string, error) {
	if strings.HasPrefix(acc, "fail") && item == "2" {
		return "", errors.New("reducer refused item 2")
	}
	return acc + item + ",", nil
}

// Count counts strings and their bytes.
func Count(_ context.Context, xs []string) (int, error) {
	n := 0
	for _, x := range xs {
		n += len(x)
	}
	return len(xs)*1_000_000 + n, nil
}

func init() { sdk.RegisterReducer(Concat) }

var tinyActor = sdk.ActorOptions{NumCPUs: 0.01, Memory: 64 << 20}

func foldFlow(l sdk.Limits, maxBytes int64, initial string) sdk.Flow[[]Rev, string] {
	return sdk.Reduce(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l), Concat, initial,
		sdk.FoldOptions{MaxSerializedBytes: maxBytes, Actor: tinyActor})
}

func bufferFlow(l sdk.Limits, maxBytes int64) sdk.Flow[[]Rev, int] {
	return sdk.Then(sdk.Map(sdk.Step(Echo, quarter)).WithLimits(l).
		WithResultBuffer(sdk.ResultBuffer{MaxSerializedBytes: maxBytes, Actor: tinyActor}), sdk.Step(Count))
}

var (
	_ = foldFlow(sdk.Limits{MaxConcurrency: 1, MaxItems: 1}, 1, "")
	_ = bufferFlow(sdk.Limits{MaxConcurrency: 1, MaxItems: 1}, 1)
)

func revItems(n, stepMS int, log string, pad int) []Rev {
	out := make([]Rev, n)
	for i := range out {
		out[i] = Rev{I: i, SleepMS: (n - i) * stepMS, Log: log, Pad: pad}
	}
	return out
}

// Leaves that finish in reverse order are folded in input order by a
// non-commutative reducer, as locally.
func TestFoldInputOrder(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	f := foldFlow(sdk.Limits{MaxConcurrency: 4, MaxItems: 8}, 1<<10, "start:")
	want, err := sdk.Run(ctx, f, revItems(8, 0, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	// Ray decides when each leaf starts: on a loaded head it may run them
	// one after another, in input order. Each run's fold must be right; at
	// least one of three runs must also have finished out of order, which
	// is what the test is about.
	var order []string
	for range 3 {
		log := filepath.Join(t.TempDir(), "order")
		got, err := runOn(ctx, testEngine, f, revItems(8, 80, log, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got != want || got != "start:0,1,2,3,4,5,6,7," {
			t.Fatalf("ray %q, local %q", got, want)
		}
		b, _ := os.ReadFile(log)
		order = strings.Fields(string(b))
		if len(order) != 8 {
			t.Fatalf("%d leaves logged, want 8: %v", len(order), order)
		}
		if !sort.SliceIsSorted(order, func(i, j int) bool { return order[i] < order[j] }) {
			t.Logf("completion order %v, folded %q", order, got)
			return
		}
	}
	t.Fatalf("leaves finished in order %v in three runs; the test wants out-of-order completion", order)
}

// Byte limits: the initial accumulator before any leaf, the accumulator
// during the fold; a reducer error is a StepError of the reducer.
func TestFoldLimits(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "leaves")
	l := sdk.Limits{MaxConcurrency: 2, MaxItems: 20}
	_, err := runOn(ctx, testEngine, foldFlow(l, 16, strings.Repeat("i", 30)), revItems(4, 0, log, 0))
	var le *TaskError
	if !errors.As(err, &le) || le.Kind != "actor_limit" || le.Type != "initial" || le.Bytes != 32 || le.Limit != 16 || le.Node != "0" || le.Actor != "fold" {
		t.Fatalf("want an initial-accumulator actor_limit TaskError, got %#v", err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Fatal("leaves ran although the initial accumulator was over the limit")
	}
	_, err = runOn(ctx, testEngine, foldFlow(sdk.Limits{MaxConcurrency: 1, MaxItems: 20}, 24, ""), revItems(20, 0, "", 0))
	if !errors.As(err, &le) || le.Kind != "actor_limit" || le.Type != "accumulator" || le.Limit != 24 {
		t.Fatalf("want an accumulator actor_limit TaskError, got %v", err)
	}
	t.Logf("%v", err)
	_, err = runOn(ctx, testEngine, foldFlow(l, 1<<10, ""), revItems(4, 0, "", 1100))
	if !errors.As(err, &le) || le.Kind != "actor_limit" || le.Type != "item" {
		t.Fatalf("want an item actor_limit TaskError, got %v", err)
	}
	_, err = runOn(ctx, testEngine, foldFlow(l, 1<<10, "fail:"), revItems(4, 0, "", 0))
	var se *sdk.StepError
	if !errors.As(err, &se) || se.Node != "0.reducer" || !strings.Contains(err.Error(), "reducer refused item 2") {
		t.Fatalf("want the reducer's StepError, got %v", err)
	}
	_, lerr := sdk.Run(ctx, foldFlow(l, 1<<10, "fail:"), revItems(4, 0, "", 0))
	if lerr == nil || lerr.Error() != err.Error() {
		t.Fatalf("local %v, ray %v", lerr, err)
	}
}

func TestBufferMatchesLocal(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx := context.Background()
	cr := &countingRuntime{rayRuntime: testEngine.rt}
	e := newWithRuntime(cr, testEngine.exe)
	f := bufferFlow(sdk.Limits{MaxConcurrency: 3, MaxItems: 12}, 64<<10)
	in := revItems(12, 20, "", 2000)
	// count payload fetches only, not progress drains
	got, err := runOn(ctx, e, f, in, pol(common.ReportingPolicyDisabled))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sdk.Run(ctx, f, in)
	if err != nil || got != want {
		t.Fatalf("ray %d, local %d (%v)", got, want, err)
	}
	if n := cr.fetched.Load(); n > 64 {
		t.Fatalf("the coordinator fetched %d bytes; the buffered list should stay in Ray", n)
	}
}

func TestBufferOverflow(t *testing.T) {
	needRay(t)
	t.Parallel()
	f := bufferFlow(sdk.Limits{MaxConcurrency: 2, MaxItems: 10}, 3000)
	_, err := runOn(context.Background(), testEngine, f, revItems(6, 0, "", 1000))
	var le *TaskError
	if !errors.As(err, &le) || le.Kind != "actor_limit" || le.Type != "retained" || le.Limit != 3000 || le.Actor != "result buffer" {
		t.Fatalf("want a retained-bytes actor_limit TaskError, got %v", err)
	}
	t.Logf("%v", err)
}
