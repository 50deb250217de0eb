package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notYet are features the README must not claim as built until the code
// exists; they may only appear in a sentence that says they are not built
// yet. Remove an entry when its feature lands.
var notYet = []string{}

// TestReadmeClaimsOnlyWhatExists checks the README's first paragraph (what
// a newcomer reads first): a feature that does not exist yet is named only
// in a sentence starting "Not built yet".
func TestReadmeClaimsOnlyWhatExists(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n\n")
	end := strings.Index(text[start+2:], "\n\n")
	if start < 0 || end < 0 {
		t.Fatal("README.md has no first paragraph")
	}
	para := strings.Join(strings.Fields(text[start+2:start+2+end]), " ")
	for _, sentence := range regexp.MustCompile(`[^.]+(\.|$)`).FindAllString(para, -1) {
		sentence = strings.TrimSpace(sentence)
		if strings.HasPrefix(sentence, "Not built yet") {
			continue
		}
		for _, w := range notYet {
			if strings.Contains(strings.ToLower(sentence), strings.ToLower(w)) {
				t.Errorf("README's first paragraph claims %q, which does not exist yet: %q", w, sentence)
			}
		}
	}
}

// TestReadmeProgramRuns runs the README's Go program ("A workflow in Go")
// as written and checks the output its comment promises, so that the first
// code a newcomer copies compiles against today's SDK and does what it
// says.
func TestReadmeProgramRuns(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no ```go block with a complete program (package main)")
	}
	prog := string(m[1])
	// The promised output: the comment on the line printing the result.
	want := regexp.MustCompile(`fmt\.Println\([^)]*\)\s*// (.+)`).FindStringSubmatch(prog)
	if want == nil {
		t.Fatal("the README's program promises no output (a // comment after its fmt.Println)")
	}
	// Inside the module, so that it builds against this checkout.
	dir, err := os.MkdirTemp("testdata", "readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "run", "./"+file).CombinedOutput()
	if err != nil {
		t.Fatalf("go run the README's program: %v\n%s\n%s", err, out, prog)
	}
	if got := strings.TrimSpace(string(out)); got != strings.TrimSpace(want[1]) {
		t.Fatalf("the README's program printed %q, its comment says %q", got, want[1])
	}
}
