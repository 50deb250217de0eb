package sdk

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayflow/rayflow/internal/buildid"
)

// Two builds that differ only in a step body (2*n vs 3*n), with no VCS
// stamp and no build-revision variable (the development case), have
// different plan fingerprints: the code identity is the executable's
// digest. With a build revision set, both builds share the revision's
// fingerprint (the revision is what the deployer vouches for).
func TestCodeIdentityFollowsStepBody(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	t.Parallel()
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/codeid/main.go")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(body), "return 2 * n, nil", "return 3 * n, nil", 1)
	if changed == string(body) {
		t.Fatal("the step body was not found")
	}
	alt := filepath.Join(dir, "main3.go")
	if err := os.WriteFile(alt, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{src: alt}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(out string, extra ...string) string {
		bin := filepath.Join(dir, out)
		args := append([]string{"build", "-buildvcs=false", "-o", bin}, extra...)
		cmd := exec.Command("go", append(args, "./testdata/codeid")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		return bin
	}
	two, three := build("two"), build("three", "-overlay", overlayFile)
	run := func(bin string, env ...string) (fp, rev string) {
		cmd := exec.Command(bin)
		cmd.Env = append(cleanEnv(), env...)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		fp, rev, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
		return fp, rev
	}
	fp2, rev2 := run(two)
	fp3, rev3 := run(three)
	if fp2 == fp3 {
		t.Fatalf("2*n and 3*n builds share the fingerprint %s", fp2)
	}
	for bin, rev := range map[string]string{two: rev2, three: rev3} {
		d, err := buildid.File(bin)
		if err != nil {
			t.Fatal(err)
		}
		if rev != buildid.Prefix+d {
			t.Fatalf("build revision %q, want the executable digest %s", rev, d)
		}
	}
	// The same binary reproduces its fingerprint (what retry pinning needs).
	if again, _ := run(two); again != fp2 {
		t.Fatalf("the same binary gave %s then %s", fp2, again)
	}
	r2, _ := run(two, buildid.EnvBuildRevision+"=release-7")
	r3, _ := run(three, buildid.EnvBuildRevision+"=release-7")
	if r2 != r3 || r2 == fp2 {
		t.Fatalf("with a build revision: %s and %s (digest-based %s)", r2, r3, fp2)
	}
}

// cleanEnv is the environment without any build-revision variable.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := k == buildid.EnvImageDigest
		for _, v := range buildRevisionVars {
			drop = drop || k == v
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
