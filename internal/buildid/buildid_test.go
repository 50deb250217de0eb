package buildid

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

func TestSelfIsTheExecutablesDigest(t *testing.T) {
	t.Parallel()
	d, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(d) {
		t.Fatalf("digest %q", d)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := File(exe); err != nil || f != d {
		t.Fatalf("the executable's file digest %q (%v), Self %q", f, err, d)
	}
	if again, _ := Self(); again != d {
		t.Fatal("Self changed")
	}
	if _, err := File("/nonexistent/binary"); err == nil {
		t.Fatal("a missing file has a digest")
	}
}

func TestVCSRevision(t *testing.T) {
	stamp := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, ""},
		{"no VCS stamp", stamp("-buildmode", "exe"), ""},
		{"clean checkout", stamp("vcs.revision", "abc123", "vcs.modified", "false"), "vcs:abc123"},
		{"modified checkout", stamp("vcs.revision", "abc123", "vcs.modified", "true"), ""},
	} {
		if got := VCSRevision(tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
