package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

// skipDir reports whether a directory holds no project text: hidden ones
// (.git, .venv-ray, the state of make ray-up and pg-up) and build output.
func skipDir(rel, name string) bool {
	return rel != "." && (strings.HasPrefix(name, ".") || rel == "bin")
}

// markdownFiles lists every Markdown file of the repository, relative to
// its root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	walkRepo(t, func(rel string, _ fs.DirEntry) error {
		if strings.HasSuffix(rel, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	return files
}

// walkRepo calls f with the path (relative to the repository root, with
// forward slashes) of every file of the repository outside the folders
// skipDir passes over.
func walkRepo(t *testing.T, f func(rel string, d fs.DirEntry) error) {
	t.Helper()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		return f(filepath.ToSlash(rel), d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	fenceLine  = regexp.MustCompile("^\\s*(```|~~~)")
	headingRe  = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// proseLines returns the lines of a Markdown text outside fenced code
// blocks, with their line numbers.
func proseLines(text string) (lines []string, numbers []int) {
	inFence := false
	for i, l := range strings.Split(text, "\n") {
		if fenceLine.MatchString(l) {
			inFence = !inFence
			continue
		}
		if !inFence {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// slug is the anchor GitHub gives a heading: lower case, markup and
// punctuation other than '-' and '_' dropped, spaces made hyphens.
func slug(heading string) string {
	heading = strings.NewReplacer("`", "", "*", "").Replace(heading)
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown text: its headings' slugs
// (repeated ones numbered as GitHub does) and explicit <a id/name>.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(text)
	for _, l := range lines {
		if m := headingRe.FindStringSubmatch(l); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// links returns the link targets of a Markdown text outside code, with
// their line numbers.
func links(text string) (targets []string, numbers []int) {
	lines, nums := proseLines(text)
	for i, l := range lines {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			targets, numbers = append(targets, m[1]), append(numbers, nums[i])
		}
		if m := refLink.FindStringSubmatch(l); m != nil {
			targets, numbers = append(targets, m[1]), append(numbers, nums[i])
		}
	}
	return targets, numbers
}

// checkLinks returns a problem for every relative link of the Markdown
// file rel (relative to root) whose file or anchor does not exist, and
// for every link that leaves the repository.
func checkLinks(root, rel string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var problems []string
	targets, numbers := links(string(b))
	for i, target := range targets {
		where := fmt.Sprintf("%s:%d: %s", rel, numbers[i], target)
		u, err := url.Parse(target)
		if err != nil {
			problems = append(problems, where+": "+err.Error())
			continue
		}
		if u.Scheme != "" || u.Host != "" {
			continue // an absolute URL
		}
		file := rel
		if u.Path != "" {
			file = filepath.ToSlash(filepath.Join(filepath.Dir(rel), u.Path))
			if file == ".." || strings.HasPrefix(file, "../") || filepath.IsAbs(u.Path) {
				problems = append(problems, where+": points outside the repository")
				continue
			}
		}
		info, err := os.Stat(filepath.Join(root, file))
		if err != nil {
			problems = append(problems, where+": no such file "+file)
			continue
		}
		if u.Fragment == "" {
			continue
		}
		if info.IsDir() || !strings.HasSuffix(file, ".md") {
			problems = append(problems, where+": an anchor into "+file+", which is not a Markdown file")
			continue
		}
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		if !anchors(string(text))[u.Fragment] {
			problems = append(problems, where+": "+file+" has no heading #"+u.Fragment)
		}
	}
	return problems, nil
}

// TestDocsLinksResolve checks that every relative link of the README, of
// docs/ and of every other Markdown file of the repository names a file
// that exists and, with a fragment, a heading that file has.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	for _, want := range []string{"README.md", "docs/README.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("no %s among the Markdown files %v", want, files)
		}
	}
	for _, f := range files {
		problems, err := checkLinks(repoRoot, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestCheckLinks feeds the link checker broken links of each kind, so that
// TestDocsLinksResolve cannot pass by checking nothing.
func TestCheckLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/b.md", "# B\n\n## The `rayflow` CLI\n\n## Retries\n\n## Retries\n\n```sh\n# not a heading\n```\n")
	write("a.md", strings.Join([]string{
		"[ok](sub/b.md) [ok](sub/b.md#the-rayflow-cli) [ok](sub/b.md#retries-1) [ok](#a)",
		"[ok](https://example.com/x.md#nowhere) `[code](nowhere.md)`",
		"[missing file](sub/c.md)",
		"[missing anchor](sub/b.md#nowhere)",
		"[heading in code](sub/b.md#not-a-heading)",
		"[outside](../elsewhere/x.md)",
		"[missing here](#nowhere)",
		"",
		"# A",
		"```",
		"[in code](nowhere.md)",
		"```",
	}, "\n"))
	got, err := checkLinks(root, "a.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a.md:3: sub/c.md: no such file sub/c.md",
		"a.md:4: sub/b.md#nowhere: sub/b.md has no heading #nowhere",
		"a.md:5: sub/b.md#not-a-heading: sub/b.md has no heading #not-a-heading",
		"a.md:6: ../elsewhere/x.md: points outside the repository",
		"a.md:7: #nowhere: a.md has no heading #nowhere",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkLinks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// outsideRefs match references to documents that are not in the
// repository: the sibling shared folder, and the design documents and
// decision records that lived there. (Written in pieces so that this file
// does not match itself.)
var outsideRefs = regexp.MustCompile(`\.\./` + `shared|` + `CONTRA` + `CTS|` + `\bAD` + `R[- ]?[0-9]|` + `ARCHITEC` + `TURE\.md`)

// walkText calls f with the path (relative to the repository root) and the
// contents of every text file of the repository.
func walkText(t *testing.T, f func(rel string, text string)) {
	t.Helper()
	checked := 0
	walkRepo(t, func(rel string, d fs.DirEntry) error {
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // the .venv-ray link of a worktree, for example
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // binary
		}
		checked++
		f(rel, string(b))
		return nil
	})
	if checked < 100 {
		t.Fatalf("checked only %d files; is %s the repository?", checked, repoRoot)
	}
}

// TestNoReferencesOutsideRepository checks that no file of the repository
// (comments, doc strings, documents, scripts, web assets) sends its reader
// to a document outside it: a user who clones the repository must be able
// to follow every reference.
func TestNoReferencesOutsideRepository(t *testing.T) {
	t.Parallel()
	walkText(t, func(rel, text string) {
		for i, line := range strings.Split(text, "\n") {
			if m := outsideRefs.FindString(line); m != "" {
				t.Errorf("%s:%d refers to %q, which is outside the repository: %s", rel, i+1, m, strings.TrimSpace(line))
			}
		}
	})
}

// docRef matches a reference to a document of docs/ as comments write it,
// "docs/contracts.md#progress-storage", anchor optional.
var docRef = regexp.MustCompile(`\bdocs/([A-Za-z0-9_.-]+\.md)(?:#([a-z0-9_-]+))?`)

// TestDocReferencesResolve checks that every "docs/<name>.md#<anchor>" a file
// of the repository cites (a comment, a doc string, a help text) names a
// document of docs/ that has that heading, so that a rule's citation
// cannot point at a section that was renamed or never written.
func TestDocReferencesResolve(t *testing.T) {
	t.Parallel()
	docAnchors := map[string]map[string]bool{}
	cited := 0
	walkText(t, func(rel, text string) {
		for i, line := range strings.Split(text, "\n") {
			for _, m := range docRef.FindAllStringSubmatch(line, -1) {
				cited++
				name, anchor := m[1], m[2]
				as, ok := docAnchors[name]
				if !ok {
					b, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
					if err == nil {
						as = anchors(string(b))
					}
					docAnchors[name] = as
				}
				switch {
				case as == nil:
					t.Errorf("%s:%d cites docs/%s, which does not exist", rel, i+1, name)
				case anchor != "" && !as[anchor]:
					t.Errorf("%s:%d cites docs/%s#%s, which has no such heading", rel, i+1, name, anchor)
				}
			}
		}
	})
	if cited < 100 {
		t.Fatalf("found only %d citations of docs/; is the pattern right?", cited)
	}
}
