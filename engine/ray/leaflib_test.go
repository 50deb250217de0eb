package ray

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/rayflow/rayflow/internal/buildid"
	"github.com/rayflow/rayflow/internal/rayenv"
	"github.com/rayflow/rayflow/sdk"
)

// LeafMode tells where a leaf ran: "1" in a leaf process, "" in a leaf
// library (the Ray worker's own environment).
func LeafMode(_ context.Context, _ int) (string, error) { return os.Getenv(leafEnv), nil }

var leafModeFlow = sdk.Map(sdk.Step(LeafMode)).WithLimits(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})

// leafLib is this package's test binary built as a leaf library, once per
// test process (the build takes most of a minute on two cores); runTests
// removes it.
var leafLib struct {
	once      sync.Once
	dir, path string
	out       []byte
	err       error
}

// buildLeafLibrary builds this package's test binary as a leaf library.
func buildLeafLibrary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("leaf libraries are Linux only")
	}
	leafLib.once.Do(func() {
		if leafLib.dir, leafLib.err = os.MkdirTemp("", "rayflow-leaflib-"); leafLib.err != nil {
			return
		}
		leafLib.path = filepath.Join(leafLib.dir, "leaves.so")
		cmd := exec.Command("go", "test", "-c", "-tags", "rayflow_leaflib", "-buildmode=c-shared", "-o", leafLib.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		leafLib.out, leafLib.err = cmd.CombinedOutput()
	})
	if leafLib.err != nil {
		t.Fatalf("building the leaf library: %v\n%s", leafLib.err, leafLib.out)
	}
	return leafLib.path
}

// TestLeafLibrary runs map items in the Ray workers' own processes
// (Options.LeafLibrary) and checks that results and errors are the leaf
// processes' and the local engine's.
func TestLeafLibrary(t *testing.T) {
	needRay(t)
	if testEngine.lib != "" {
		t.Skip("compares with the suite engine's leaf processes (RAYFLOW_TEST_LEAF_LIBRARY is set)")
	}
	lib := buildLeafLibrary(t)
	ctx := context.Background()
	e, err := New(ctx, Options{Address: testAddress, Stderr: io.Discard, LeafLibrary: lib})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// Without a revision in the environment the plan's code identity is
	// this test binary's digest (a test build has no VCS stamp), which the
	// library cannot have: refused before anything runs.
	for _, v := range []string{buildid.EnvBuildRevision, "GIT_COMMIT", "SOURCE_VERSION", "K_REVISION"} {
		t.Setenv(v, "")
	}
	var se *SetupError
	if _, err := runOn(ctx, e, leafModeFlow, []int{1}); !errors.As(err, &se) {
		t.Fatalf("a library with an executable identity: want a *SetupError, got %v", err)
	}

	t.Setenv(buildid.EnvBuildRevision, "leaf-library-test") // the user vouches for the build
	modes, err := runOn(ctx, e, leafModeFlow, make([]int, 20))
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(modes, func(m string) bool { return m != "" }) {
		t.Fatalf("leaves ran in leaf processes, not in the library: %q", modes)
	}
	if modes, err = runOn(ctx, testEngine, leafModeFlow, make([]int, 4)); err != nil || modes[0] != "1" {
		t.Fatalf("the process engine's leaves: %q, %v", modes, err)
	}

	// A library whose VCS revision is not the plan's is refused, as a leaf
	// process of another build (a test binary has no VCS stamp, so the
	// bridge's loader is driven directly).
	t.Run("revision mismatch", func(t *testing.T) {
		script, err := bridgeScript()
		if err != nil {
			t.Fatal(err)
		}
		prog := `import importlib.util, sys
spec = importlib.util.spec_from_file_location("bridge", sys.argv[1])
b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
frame = b._request("x", "0.1", None, "0", "", "", b"1")
for want in ("", "vcs:0123abcd"):
    try:
        h, _ = b._lib_call(sys.argv[2], want, "0.1", frame)
        print("ran", h.get("ok"))
    except b.LeafProcessError as e:
        print("refused", e.args[0]["reason"], e.args[0]["want"], e.args[0]["got"] or "-")
`
		out, err := exec.Command(rayenv.Python(), "-c", prog, script, lib).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got, want := string(out), "ran False\nrefused digest_mismatch vcs:0123abcd -\n"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})

	f := mapFlow(sdk.Limits{MaxConcurrency: 8, MaxItems: 100})
	for _, tc := range []struct {
		name string
		spec JobsSpec
	}{
		{"results", JobsSpec{N: 40, FailAt: -1}},
		{"typed failure", JobsSpec{N: 10, FailAt: 3}},
		{"panic", JobsSpec{N: 1, FailAt: -1, Template: Job{Panic: true}}}, // one item: which of several panics first is timing
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gerr := runOn(ctx, e, f, tc.spec)
			want, werr := runOn(ctx, testEngine, f, tc.spec)
			local, lerr := sdk.Run(ctx, f, tc.spec)
			if (gerr == nil) != (werr == nil) || (gerr != nil && (gerr.Error() != werr.Error() || gerr.Error() != lerr.Error())) {
				t.Fatalf("errors differ:\nlibrary %v\nprocess %v\nlocal   %v", gerr, werr, lerr)
			}
			if !slices.Equal(got, want) || !slices.Equal(got, local) {
				t.Fatalf("results differ: library %v, process %v, local %v", got, want, local)
			}
			var jf *JobFailure
			if tc.spec.FailAt >= 0 && (!errors.As(gerr, &jf) || jf.Item != tc.spec.FailAt) {
				t.Fatalf("want the *JobFailure of item %d, got %v", tc.spec.FailAt, gerr)
			}
		})
	}
}
