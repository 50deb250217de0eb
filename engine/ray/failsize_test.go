package ray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/internal/sdkrt"
	"github.com/rayflow/rayflow/sdk"
)

// BigFailure is a registered typed error with a large field: its encoding
// makes a leaf's error chain about as large as Pad.
type BigFailure struct {
	Pad string `json:"pad"`
}

func (e *BigFailure) Error() string { return fmt.Sprintf("big failure of %d bytes", len(e.Pad)) }

func init() { sdk.RegisterErrorType[*BigFailure]() }

// BigSpec sizes FailBig's failure: N bytes of one letter (it compresses),
// or of pseudo-random letters (it does not compress enough).
type BigSpec struct {
	N      int  `json:"n"`
	Random bool `json:"random"`
}

// FailBig fails with a wrapped *BigFailure of s.N bytes.
func FailBig(_ context.Context, s BigSpec) (int, error) {
	pad := strings.Repeat("x", s.N)
	if s.Random {
		r := rand.New(rand.NewPCG(1, uint64(s.N)))
		b := make([]byte, s.N)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		pad = string(b)
	}
	return 0, fmt.Errorf("failing: %w", &BigFailure{Pad: pad})
}

var (
	bigFailFlow = sdk.Step(FailBig)
	bigFailMap  = sdk.Map(sdk.Step(FailBig)).WithLimits(sdk.Limits{MaxConcurrency: 2, MaxItems: 10})
)

// A leaf task has one return, its result or its failure, and the bridge
// reads it only when Ray keeps it in the driver's memory; a failure over
// bridge.py's _ERROR_INLINE is packed so that it stays there (zlib, or its
// packed bytes in the object store when they are still over). Whatever
// its size, a leaf's failure is the local engine's error: the same text,
// the same node, its typed link's value intact, for a step and a map item.
func TestLargeFailures(t *testing.T) {
	needRay(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		spec BigSpec
	}{
		{"small", BigSpec{N: 1 << 10}},
		{"over the cap, compressible", BigSpec{N: 300 << 10}},
		{"over the cap, incompressible", BigSpec{N: 300 << 10, Random: true}},
	} {
		for _, run := range []struct {
			name string
			run  func(ctx context.Context, opts ...sdk.RunOption) error
		}{
			{"step", func(ctx context.Context, opts ...sdk.RunOption) error {
				_, err := sdk.Run(ctx, bigFailFlow, tc.spec, opts...)
				return err
			}},
			{"map item", func(ctx context.Context, opts ...sdk.RunOption) error {
				_, err := sdk.Run(ctx, bigFailMap, []BigSpec{tc.spec}, opts...)
				return err
			}},
		} {
			name := tc.name + ", " + run.name
			local, remote := run.run(ctx), run.run(ctx, sdk.WithEngine(testEngine))
			var lb, rb *BigFailure
			if !errors.As(local, &lb) || !errors.As(remote, &rb) {
				t.Errorf("%s: want a *BigFailure on both engines: local %v, ray %.300v", name, local, remote)
				continue
			}
			if lb.Pad != rb.Pad {
				t.Errorf("%s: the failure's value differs (%d bytes locally, %d on Ray)", name, len(lb.Pad), len(rb.Pad))
			}
			var ls, rs *sdk.StepError
			if !errors.As(local, &ls) || !errors.As(remote, &rs) || ls.Node != rs.Node {
				t.Errorf("%s: StepError: local %v, ray %v", name, ls, rs)
			}
			if local.Error() != remote.Error() {
				t.Errorf("%s: Error() differs:\nlocal %q\nray   %q", name, local, remote)
			}
		}
		// The leaf's ready event itself carries the failure (a failure
		// taken for a success would surface only where its value is used).
		m, err := sdk.Materialize(bigFailFlow)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := sdk.DefaultCodec.Marshal(tc.spec)
		h, err := testBridge.Submit(ctx, leafTask{Exe: testEngine.exe, Lib: testEngine.lib, Node: "0", Arg: taskArg{Bytes: in},
			Callable: sdkrt.PlanBindings(m).Root.Step.Callable.Name})
		if err != nil {
			t.Fatal(err)
		}
		ready, err := testBridge.Await(ctx, h)
		testBridge.Release([]objHandle{h})
		if err != nil {
			t.Fatal(err)
		}
		var rb *BigFailure
		if ready.Err == nil || ready.Err.Kind != "leaf" || !errors.As(ready.Err.toError(sdk.DefaultCodec, "0", ready.Value), &rb) || len(rb.Pad) != tc.spec.N {
			t.Errorf("%s: the leaf's ready event: %+v", tc.name, ready.Err)
		}
	}
}

// bridge.py's _leaf_error keeps a failure of at most _ERROR_INLINE bytes
// (its info's strings and its error chain) as it is and packs one a byte
// over; _unpack_error gives back the very failure.
func TestLeafErrorPacking(t *testing.T) {
	needRay(t)
	script, err := bridgeScript()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.json")
	harness := `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bridge", sys.argv[1])
b = importlib.util.module_from_spec(spec)
spec.loader.exec_module(b)
res = {}
for name, n in (("at", b._ERROR_INLINE), ("over", b._ERROR_INLINE + 1)):
    info = {"node": "7", "callable": "c", "type": "*T", "message": "m", "chain": True}
    value = b"v" * (n - 5)
    e = b._leaf_error(info, value)
    res[name] = e.args[0].get("packed", "")
    res[name + "_same"] = b._unpack_error(*e.args) == (info, value)
    res[name + "_text"] = str(e)
with open(sys.argv[2], "w") as f:
    json.dump(res, f)
`
	cmd := exec.Command(rayenv.Python(), "-c", harness, script, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		At       string `json:"at"`
		Over     string `json:"over"`
		AtSame   bool   `json:"at_same"`
		OverSame bool   `json:"over_same"`
		AtText   string `json:"at_text"`
		OverText string `json:"over_text"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.At != "" || res.Over != "zlib" {
		t.Errorf("packing at the cap %q (want none), a byte over %q (want zlib)", res.At, res.Over)
	}
	if !res.AtSame || !res.OverSame {
		t.Errorf("unpacked failure differs: at the cap %v, over %v", res.AtSame, res.OverSame)
	}
	if res.AtText != "leaf 7 failed" || res.OverText != "leaf 7 failed" {
		t.Errorf("a LeafError's text is short: %q, %q", res.AtText, res.OverText)
	}
}
