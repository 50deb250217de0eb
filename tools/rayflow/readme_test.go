package main

import (
	"os"
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
