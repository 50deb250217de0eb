package buildid

import (
	"os"
	"regexp"
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
