package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// heavyDeps are module path prefixes a program that imports only sdk must
// not link: CUE's evaluator, pgx, Kubernetes and the Ray client.
var heavyDeps = []string{"cuelang.org/", "github.com/jackc/", "k8s.io/", "github.com/ray-project/"}

// sdk depends on no engine package: its built-in engine is the executor
// internal/inproc (engine/local wraps it), reached through sdk.Engine. The
// lifecycle protocol version bound into every plan comes from
// gen/lifecycle, below both sdk and the lifecycle reducer
// (conformance/lifecycle/reducer).

// goCmd runs the go command in dir with extra environment and returns its
// standard output.
func goCmd(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out
}

// checkDeps fails for every forbidden package in a `go list -deps` listing.
func checkDeps(t *testing.T, what string, listing []byte) {
	t.Helper()
	deps := strings.Fields(string(listing))
	if !slices.Contains(deps, "github.com/rayflow/rayflow/sdk") || !slices.Contains(deps, "github.com/rayflow/rayflow/internal/inproc") {
		t.Fatalf("%s: the listing does not include sdk and internal/inproc; is it the right package?\n%s", what, listing)
	}
	for _, d := range deps {
		for _, p := range heavyDeps {
			if strings.HasPrefix(d, p) {
				t.Errorf("%s depends on %s", what, d)
			}
		}
		if strings.HasPrefix(d, "github.com/rayflow/rayflow/engine/") {
			t.Errorf("%s depends on the engine package %s; sdk links none", what, d)
		}
	}
}

// repoRoot is the rayflow module's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir := strings.TrimSpace(string(goCmd(t, ".", nil, "list", "-m", "-f", "{{.Dir}}")))
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root %q: %v", dir, err)
	}
	return dir
}

func TestSDKDependencies(t *testing.T) {
	t.Parallel()
	checkDeps(t, "package sdk", goCmd(t, ".", nil, "list", "-deps", "github.com/rayflow/rayflow/sdk"))
}

const libraryMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/rayflow/rayflow/sdk"
)

func Words(_ context.Context, n int) ([]string, error) {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprint("w", i)
	}
	return w, nil
}

func Length(_ context.Context, s string) (int, error) { return len(s), nil }

func Sum(_ context.Context, acc, v int) (int, error) { return acc + v, nil }

var Flow = sdk.Then(sdk.Step(Words), sdk.Reduce(
	sdk.Map(sdk.Step(Length)).WithLimits(sdk.Limits{MaxConcurrency: 4, MaxItems: 100}),
	Sum, 0, sdk.FoldOptions{MaxSerializedBytes: 1 << 10, Actor: sdk.ActorOptions{NumCPUs: 1, Memory: 1 << 10}}))

func main() {
	out, err := sdk.Run(context.Background(), Flow, 12)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("total length:", out)
}
`

// TestSeparateModuleImportingOnlySDK builds and runs a program in its own
// module that requires rayflow (replaced by this checkout, as `go get`
// would fetch it) and imports only sdk. The scratch module resolves offline
// (GOPROXY=off): the replace points at the checkout and the module cache
// holds rayflow's dependencies, whose hashes come from rayflow's go.sum.
func TestSeparateModuleImportingOnlySDK(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	dir := t.TempDir()
	goMod := "module example.com/sdkonly\n\ngo 1.26.0\n\n" +
		"require github.com/rayflow/rayflow v0.0.0\n\n" +
		"replace github.com/rayflow/rayflow => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(libraryMain)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local"}
	// A new module loads rayflow's whole module graph, go.mod files that
	// building rayflow does not read: listing the graph from the checkout
	// fetches them (through the usual proxy) when the cache lacks them.
	// -e: tidy also walks the tests of rayflow's dependencies, whose
	// modules (testify, ...) the cache need not hold; the listing and the
	// build below fail if anything the program needs is missing.
	goCmd(t, root, nil, "list", "-m", "all")
	goCmd(t, dir, env, "mod", "tidy", "-e")
	checkDeps(t, "a program importing only sdk", goCmd(t, dir, env, "list", "-deps", "."))

	bin := filepath.Join(dir, "sdkonly")
	goCmd(t, dir, env, "build", "-o", bin, ".")
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("running the program: %v\n%s", err, out)
	}
	// Σ len("w0".."w11") = 10·2 + 2·3 = 26.
	if got, want := strings.TrimSpace(string(out)), "total length: 26"; got != want {
		t.Fatalf("the program printed %q, want %q", got, want)
	}
}
